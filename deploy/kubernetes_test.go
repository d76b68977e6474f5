package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/policy/config"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// nonRoot is the user and group the image runs as (Containerfile's USER).
const nonRoot = 65532

// manifests are the Kubernetes files, each applied on its own (kubectl apply -f).
var manifests = []string{
	"kubernetes/standalone/configmap.yaml",
	"kubernetes/standalone/deployment.yaml",
	"kubernetes/standalone/service.yaml",
	"kubernetes/standalone/pdb.yaml",
	"kubernetes/sentinel/sentinel.yaml",
	"kubernetes/istio/envoyfilter.yaml",
}

// listenFlags are rlserver's flags naming an address it listens on.
var listenFlags = []string{"-addr", "-rls-addr", "-http-addr", "-metrics-addr"}

// argv is what a container runs: its command or the image's entrypoint, then its args.
func argv(c corev1.Container, im image) []string {
	return append(slices.Clone(cmpOr(c.Command, im.entrypoint)), c.Args...)
}

func cmpOr(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return b
}

// flagValue is the last value argv gives a flag (the one rlserver keeps); "" if none.
func flagValue(args []string, name string) string {
	v := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name || args[i] == "-"+name {
			v = args[i+1]
		}
	}
	return v
}

// checkPod checks what every pod of these manifests must do: each container runs as
// 65532 on a read-only root without privilege escalation or capabilities, with
// resources; each long-running one has probes on ports it declares; an rlserver
// container declares exactly the image's ports, listens on them, on 0.0.0.0, and reads
// -limits from a whole-directory ConfigMap mount (so the ..data swap reaches it).
func checkPod(where string, spec corev1.PodSpec, im image) []error {
	return checkPodWith(where, spec, func(c corev1.Container) []error { return checkRlserver(where, spec, c, im) })
}

// checkPodWith checks what checkPod does of every container (user, root, privileges,
// resources, probes on declared ports) and hands each rlserver container to rlserver.
func checkPodWith(where string, spec corev1.PodSpec, rlserver func(corev1.Container) []error) []error {
	var errs []error
	fail := func(c, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: container %s: %s", where, c, fmt.Sprintf(format, args...)))
	}
	pod := spec.SecurityContext
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	all := append(slices.Clone(spec.InitContainers), spec.Containers...)
	for i, c := range all {
		sc := c.SecurityContext
		if sc == nil {
			fail(c.Name, "no securityContext")
			continue
		}
		user := cmpPtr(sc.RunAsUser, pod.RunAsUser)
		if user == nil || *user != nonRoot {
			fail(c.Name, "runAsUser %v, want %d", deref(user), nonRoot)
		}
		if nonRootSet := cmpPtr(sc.RunAsNonRoot, pod.RunAsNonRoot); nonRootSet == nil || !*nonRootSet {
			fail(c.Name, "runAsNonRoot not true")
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			fail(c.Name, "readOnlyRootFilesystem not true")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			fail(c.Name, "allowPrivilegeEscalation not false")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			fail(c.Name, "capabilities: want drop [ALL] and nothing added")
		}
		if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			fail(c.Name, "no memory request or limit")
		}
		if i < len(spec.InitContainers) {
			continue
		}
		if c.ReadinessProbe == nil || c.LivenessProbe == nil {
			fail(c.Name, "a readiness or liveness probe is missing")
		}
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
			if p == nil {
				continue
			}
			var port *int32
			switch {
			case p.HTTPGet != nil:
				port = portOf(c, p.HTTPGet.Port.String())
			case p.TCPSocket != nil:
				port = portOf(c, p.TCPSocket.Port.String())
			case p.GRPC != nil:
				port = &p.GRPC.Port
			case p.Exec != nil:
				continue
			}
			if port == nil {
				fail(c.Name, "a probe's port is not one the container declares")
			}
		}
		if strings.Contains(c.Image, "rlserver") {
			errs = append(errs, rlserver(c)...)
		}
	}
	return errs
}

func checkRlserver(where string, spec corev1.PodSpec, c corev1.Container, im image) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: container %s: %s", where, c.Name, fmt.Sprintf(format, args...)))
	}
	var declared []int
	for _, p := range c.Ports {
		declared = append(declared, int(p.ContainerPort))
	}
	slices.Sort(declared)
	if !slices.Equal(declared, im.ports) {
		fail("ports %v, the image exposes %v", declared, im.ports)
	}
	args := argv(c, im)
	var listening []int
	for _, f := range listenFlags {
		v := flagValue(args, f)
		host, port, err := net.SplitHostPort(v)
		n, _ := strconv.Atoi(port)
		if err != nil || host != "0.0.0.0" {
			fail("%s %q: want 0.0.0.0:port", f, v)
		}
		listening = append(listening, n)
	}
	slices.Sort(listening)
	if !slices.Equal(listening, im.ports) {
		fail("listens on %v (%s), the image exposes %v", listening, strings.Join(args, " "), im.ports)
	}
	limits := flagValue(args, "-limits")
	if limits != im.volume {
		fail("-limits %q, the image's volume is %q", limits, im.volume)
	}
	return append(errs, checkVolumes(where, spec, c, args)...)
}

// checkVolumes checks that the -limits of args is a whole ConfigMap mounted as a
// directory and that what rlserver writes (the snapshot, a config file) is on a
// writable volume.
func checkVolumes(where string, spec corev1.PodSpec, c corev1.Container, args []string) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: container %s: %s", where, c.Name, fmt.Sprintf(format, args...)))
	}
	limits := flagValue(args, "-limits")
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.MountPath != limits {
			continue
		}
		if m.SubPath != "" {
			fail("-limits mounted with subPath %q: a ConfigMap's updates never reach a subPath", m.SubPath)
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && len(v.ConfigMap.Items) == 0 {
				mounted = true
			}
		}
	}
	if !mounted {
		fail("-limits %q is not a whole ConfigMap mounted as a directory", limits)
	}
	// The root is read-only: the snapshot and a config file (which CONFIG REWRITE
	// replaces) need a writable volume.
	written := []string{flagValue(args, "-snapshot")}
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		written = append(written, args[1])
	}
	for _, path := range written {
		if path != "" && !writable(spec, c, filepath.Dir(path)) {
			fail("%s is on the read-only root: no writable volume at %s", path, filepath.Dir(path))
		}
	}
	return errs
}

// writable reports whether c mounts an emptyDir or a claim at dir, read-write.
func writable(spec corev1.PodSpec, c corev1.Container, dir string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath != dir || m.ReadOnly || m.SubPath != "" {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && (v.EmptyDir != nil || v.PersistentVolumeClaim != nil) {
				return true
			}
		}
	}
	return false
}

func portOf(c corev1.Container, nameOrNumber string) *int32 {
	for _, p := range c.Ports {
		if p.Name == nameOrNumber || strconv.Itoa(int(p.ContainerPort)) == nameOrNumber {
			return &p.ContainerPort
		}
	}
	return nil
}

func cmpPtr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func deref(p *int64) any {
	if p == nil {
		return "unset"
	}
	return *p
}

// loadPolicyConfigMap loads a ConfigMap's policies with rlserver's loader, as the pod
// sees them: each key on its own (errors name the file and key), then the directory
// Kubernetes mounts, with its ..data symlink and timestamped directory.
func loadPolicyConfigMap(file string, cm *corev1.ConfigMap, dir string) error {
	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		if _, err := config.Parse(key, []byte(cm.Data[key])); err != nil {
			return fmt.Errorf("%s: ConfigMap %s: %w", file, cm.Name, err)
		}
	}
	stamp := filepath.Join(dir, "..2026_01_01_00_00_00.000000000")
	if err := os.Mkdir(stamp, 0o755); err != nil {
		return err
	}
	for key, v := range cm.Data {
		if err := os.WriteFile(filepath.Join(stamp, key), []byte(v), 0o644); err != nil {
			return err
		}
		if err := os.Symlink(filepath.Join("..data", key), filepath.Join(dir, key)); err != nil {
			return err
		}
	}
	if err := os.Symlink(filepath.Base(stamp), filepath.Join(dir, "..data")); err != nil {
		return err
	}
	p, err := config.Load(dir)
	if err != nil {
		return fmt.Errorf("%s: ConfigMap %s mounted: %w", file, cm.Name, err)
	}
	if len(p.Domains()) != len(cm.Data) {
		return fmt.Errorf("%s: ConfigMap %s: %d keys, %d domains loaded", file, cm.Name, len(cm.Data), len(p.Domains()))
	}
	return nil
}

// checkManifests decodes and checks every file of files (path to content); the
// errors name the file.
func checkManifests(t *testing.T, files map[string][]byte) []error {
	im := readContainerfile(t)
	var errs []error
	var services []object
	pods := map[string]corev1.PodTemplateSpec{} // "file: kind name" to its template
	for _, file := range slices.Sorted(maps.Keys(files)) {
		objs, err := decodeManifest(file, files[file])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range objs {
			switch v := o.obj.(type) {
			case *appsv1.Deployment:
				pods[o.String()+" Deployment "+v.Name] = v.Spec.Template
			case *appsv1.StatefulSet:
				pods[o.String()+" StatefulSet "+v.Name] = v.Spec.Template
			case *corev1.Service:
				services = append(services, o)
			case *corev1.ConfigMap:
				if v.Name == "rlserver-limits" {
					if err := loadPolicyConfigMap(file, v, t.TempDir()); err != nil {
						errs = append(errs, err)
					}
				}
			}
		}
	}
	for where, tmpl := range pods {
		errs = append(errs, checkPod(where, tmpl.Spec, im)...)
	}
	return append(errs, checkServices(services, pods)...)
}

// checkServices checks that every Service selects a pod of pods and targets ports it
// declares.
func checkServices(services []object, pods map[string]corev1.PodTemplateSpec) []error {
	var errs []error
	for _, o := range services {
		svc := o.obj.(*corev1.Service)
		var matched []corev1.PodTemplateSpec
		for _, tmpl := range pods {
			if len(svc.Spec.Selector) > 0 && labelsMatch(svc.Spec.Selector, tmpl.Labels) {
				matched = append(matched, tmpl)
			}
		}
		if len(matched) == 0 {
			errs = append(errs, fmt.Errorf("%s: Service %s selects no pod of these manifests", o, svc.Name))
		}
		for _, tmpl := range matched {
			for _, p := range svc.Spec.Ports {
				if !declares(tmpl.Spec, p.TargetPort.String()) {
					errs = append(errs, fmt.Errorf("%s: Service %s: targetPort %s is no container's port", o, svc.Name, p.TargetPort.String()))
				}
			}
		}
	}
	return errs
}

func labelsMatch(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func declares(spec corev1.PodSpec, port string) bool {
	for _, c := range spec.Containers {
		if portOf(c, port) != nil {
			return true
		}
	}
	return false
}

func readManifests(t *testing.T) map[string][]byte {
	files := map[string][]byte{}
	for _, f := range manifests {
		files[f] = read(t, f)
	}
	found, err := filepath.Glob("kubernetes/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if _, ok := files[f]; !ok && !strings.HasPrefix(f, "kubernetes/envoy/") {
			t.Errorf("%s is not in the test's list of manifests", f)
		}
	}
	return files
}

// TestKubernetesManifests decodes every manifest strictly into the Kubernetes API's
// types and checks the pods, the Services and the policy ConfigMap.
func TestKubernetesManifests(t *testing.T) {
	files := readManifests(t)
	for _, err := range checkManifests(t, files) {
		t.Error(err)
	}
	// The files were read whole: every kind the README promises is there.
	seen := map[string]int{}
	for f, data := range files {
		objs, err := decodeManifest(f, data)
		if err != nil {
			continue // reported above
		}
		for _, o := range objs {
			seen[fmt.Sprintf("%T", o.obj)]++
		}
	}
	for kind, n := range map[string]int{"*v1.ConfigMap": 2, "*v1.Service": 4, "*v1.Deployment": 1, "*v1.StatefulSet": 2,
		"*v1.PodDisruptionBudget": 3, "*deploy.envoyFilter": 2} {
		if seen[kind] != n {
			t.Errorf("%d of %s, want %d", seen[kind], kind, n)
		}
	}
}

// TestKubernetesManifestsBadInput: a typo'd field, a root user, a subPath mount of the
// policies and a policy that does not load each fail, naming the file and the field.
func TestKubernetesManifestsBadInput(t *testing.T) {
	for _, tc := range []struct {
		file, old, new string
		want           []string
	}{
		{"kubernetes/standalone/deployment.yaml", "readinessProbe:", "readinesProbe:",
			[]string{"kubernetes/standalone/deployment.yaml", `unknown field "readinesProbe"`, "document 1 (Deployment)"}},
		{"kubernetes/sentinel/sentinel.yaml", "publishNotReadyAddresses: true", "publishNotReadyAdresses: true",
			[]string{"kubernetes/sentinel/sentinel.yaml", "document 2 (Service)", "publishNotReadyAdresses"}},
		{"kubernetes/standalone/deployment.yaml", "runAsUser: 65532\n            runAsGroup", "runAsUser: 0\n            runAsGroup",
			[]string{"kubernetes/standalone/deployment.yaml", "container rlserver: runAsUser 0, want 65532"}},
		{"kubernetes/standalone/deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false",
			[]string{"kubernetes/standalone/deployment.yaml", "readOnlyRootFilesystem not true"}},
		{"kubernetes/standalone/deployment.yaml", "mountPath: /etc/rlserver/limits\n", "mountPath: /etc/rlserver/limits\n              subPath: edge.yaml\n",
			[]string{"kubernetes/standalone/deployment.yaml", "subPath"}},
		{"kubernetes/standalone/deployment.yaml", `args: [`, `args: ["-rls-addr", "0.0.0.0:8082", `,
			[]string{"kubernetes/standalone/deployment.yaml", "listens on [6380 8080 8082 9090]"}},
		{"kubernetes/standalone/deployment.yaml", "mountPath: /var/lib/rlserver\n", "mountPath: /var/lib/rlserver\n              readOnly: true\n",
			[]string{"kubernetes/standalone/deployment.yaml", "/var/lib/rlserver/rlserver.snap is on the read-only root"}},
		{"kubernetes/sentinel/sentinel.yaml", `"/bin/rlserver", "/var/lib/rlserver/rlserver.conf"`, `"/bin/rlserver", "/etc/rlserver.conf"`,
			[]string{"kubernetes/sentinel/sentinel.yaml", "StatefulSet rlserver", "/etc/rlserver.conf is on the read-only root"}},
		{"kubernetes/standalone/configmap.yaml", "unit: minute, requests_per_unit: 100", "unit: fortnight, requests_per_unit: 100",
			[]string{"kubernetes/standalone/configmap.yaml", "ConfigMap rlserver-limits", "edge.yaml:4", "invalid rate limit unit 'fortnight'"}},
		{"kubernetes/standalone/service.yaml", "targetPort: grpc", "targetPort: grpcs",
			[]string{"kubernetes/standalone/service.yaml", "targetPort grpcs is no container's port"}},
		{"kubernetes/istio/envoyfilter.yaml", "failure_mode_deny: false", "failure_mode_denied: false",
			[]string{"kubernetes/istio/envoyfilter.yaml", "configPatches[0].patch.value", "failure_mode_denied"}},
	} {
		t.Run(tc.want[len(tc.want)-1], func(t *testing.T) {
			files := readManifests(t)
			if !bytes.Contains(files[tc.file], []byte(tc.old)) {
				t.Fatalf("%s has no %q to change", tc.file, tc.old)
			}
			files[tc.file] = bytes.Replace(files[tc.file], []byte(tc.old), []byte(tc.new), 1)
			errs := checkManifests(t, files)
			if len(errs) == 0 {
				t.Fatal("no error")
			}
			msg := errors.Join(errs...).Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("the error does not say %q:\n%s", w, msg)
				}
			}
		})
	}
}
