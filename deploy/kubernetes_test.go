package deploy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3" // typed_config of the EnvoyFilter
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3" // typed_extension_protocol_options of the cluster
	"github.com/rlserver/rlserver/policy"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
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

// object is one decoded document of a manifest file.
type object struct {
	file string
	doc  int // from 1
	obj  any // *corev1.ConfigMap, *appsv1.Deployment, ...
}

func (o object) String() string { return fmt.Sprintf("%s: document %d", o.file, o.doc) }

// envoyFilter is Istio's networking.istio.io/v1alpha3 EnvoyFilter, as far as these
// files use it; each patch's value is decoded into Envoy's own type (envoyPatchValue).
type envoyFilter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		WorkloadSelector struct {
			Labels map[string]string `json:"labels"`
		} `json:"workloadSelector"`
		ConfigPatches []struct {
			ApplyTo string          `json:"applyTo"`
			Match   json.RawMessage `json:"match"`
			Patch   struct {
				Operation string          `json:"operation"`
				Value     json.RawMessage `json:"value"`
			} `json:"patch"`
		} `json:"configPatches"`
	} `json:"spec"`
}

// kinds are the types a document's apiVersion and kind decode into.
var kinds = map[string]func() any{
	"v1/ConfigMap":                             func() any { return new(corev1.ConfigMap) },
	"v1/Service":                               func() any { return new(corev1.Service) },
	"apps/v1/Deployment":                       func() any { return new(appsv1.Deployment) },
	"apps/v1/StatefulSet":                      func() any { return new(appsv1.StatefulSet) },
	"policy/v1/PodDisruptionBudget":            func() any { return new(policyv1.PodDisruptionBudget) },
	"networking.istio.io/v1alpha3/EnvoyFilter": func() any { return new(envoyFilter) },
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeManifest splits a multi-document file and decodes each document strictly
// (unknown or duplicate fields refused) into its kind's Go type; an error names the
// file, the document and the field.
func decodeManifest(file string, data []byte) ([]object, error) {
	var objs []object
	for i, doc := range docSeparator.Split(string(data), -1) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		if tm.Kind == "" && strings.TrimSpace(stripComments(doc)) == "" {
			continue // a comment before the first ---
		}
		newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
		if !ok {
			return nil, fmt.Errorf("%s: document %d: unknown apiVersion %q kind %q", file, i+1, tm.APIVersion, tm.Kind)
		}
		obj := newObj()
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s): %w", file, i+1, tm.Kind, err)
		}
		if f, ok := obj.(*envoyFilter); ok {
			if err := f.decodePatches(); err != nil {
				return nil, fmt.Errorf("%s: document %d (EnvoyFilter %s): %w", file, i+1, f.Name, err)
			}
		}
		objs = append(objs, object{file, i + 1, obj})
	}
	return objs, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// decodePatches decodes every patch value strictly into the Envoy type its applyTo
// names, so a typo in the filter's config fails here rather than in istiod.
func (f *envoyFilter) decodePatches() error {
	for i, p := range f.Spec.ConfigPatches {
		var m proto.Message
		switch p.ApplyTo {
		case "HTTP_FILTER":
			m = new(hcmv3.HttpFilter)
		case "VIRTUAL_HOST":
			m = new(routev3.VirtualHost)
		default:
			return fmt.Errorf("configPatches[%d]: applyTo %q: no Envoy type known here", i, p.ApplyTo)
		}
		if err := protojson.Unmarshal(p.Patch.Value, m); err != nil {
			return fmt.Errorf("configPatches[%d].patch.value: %w", i, err)
		}
	}
	return nil
}

// image is what the Containerfile says the image is: its EXPOSEd ports, entrypoint
// and volume.
type image struct {
	ports      []int
	entrypoint []string
	volume     string
}

func readContainerfile(t *testing.T) image {
	t.Helper()
	var im image
	for _, line := range strings.Split(string(read(t, "../Containerfile")), "\n") {
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "EXPOSE":
			for _, p := range strings.Fields(rest) {
				n, err := strconv.Atoi(p)
				if err != nil {
					t.Fatalf("Containerfile: EXPOSE %q", p)
				}
				im.ports = append(im.ports, n)
			}
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &im.entrypoint); err != nil {
				t.Fatalf("Containerfile: ENTRYPOINT: %v", err)
			}
		case "VOLUME":
			var v []string
			if err := json.Unmarshal([]byte(rest), &v); err != nil || len(v) != 1 {
				t.Fatalf("Containerfile: VOLUME %s: want one directory", rest)
			}
			im.volume = v[0]
		}
	}
	slices.Sort(im.ports)
	if len(im.ports) == 0 || len(im.entrypoint) == 0 || im.volume == "" {
		t.Fatalf("Containerfile: EXPOSE %v, ENTRYPOINT %q, VOLUME %q: one is missing", im.ports, im.entrypoint, im.volume)
	}
	return im
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
			errs = append(errs, checkRlserver(where, spec, c, im)...)
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
		if _, err := policy.Parse(key, []byte(cm.Data[key])); err != nil {
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
	p, err := policy.Load(dir)
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
	// Every Service selects a pod of these files and targets ports it declares.
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

// decodeEnvoyCluster decodes the Envoy cluster file strictly into go-control-plane's
// Cluster and validates it with Envoy's own constraints.
func decodeEnvoyCluster(file string, data []byte) (*clusterv3.Cluster, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var c clusterv3.Cluster
	if err := protojson.Unmarshal(j, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := c.ValidateAll(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &c, nil
}

// TestEnvoyCluster: the rate_limit_service cluster is a valid Envoy cluster, over
// HTTP/2, health-checked over gRPC, pointing at the rlserver Service's gRPC port, as
// the EnvoyFilter does.
func TestEnvoyCluster(t *testing.T) {
	const file = "kubernetes/envoy/rate-limit-service.yaml"
	c, err := decodeEnvoyCluster(file, read(t, file))
	if err != nil {
		t.Fatal(err)
	}
	svc := rlserverService(t)
	want := svc.Name + "." + cmp.Or(svc.Namespace, "default") + ".svc.cluster.local"
	sa := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	if c.GetName() != "rate_limit_service" || sa.GetAddress() != want || int32(sa.GetPortValue()) != servicePort(t, svc, "grpc-rls") {
		t.Errorf("cluster %s at %s:%d, want rate_limit_service at %s:%d", c.GetName(), sa.GetAddress(), sa.GetPortValue(), want, servicePort(t, svc, "grpc-rls"))
	}
	if len(c.GetHealthChecks()) != 1 || c.GetHealthChecks()[0].GetGrpcHealthCheck() == nil {
		t.Error("want one gRPC health check (only the primary is SERVING)")
	}
	if _, ok := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]; !ok {
		t.Error("no HTTP/2 protocol options: gRPC needs HTTP/2")
	}

	objs, err := decodeManifest("kubernetes/istio/envoyfilter.yaml", read(t, "kubernetes/istio/envoyfilter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f := objs[0].obj.(*envoyFilter)
	var hf hcmv3.HttpFilter
	if err := protojson.Unmarshal(f.Spec.ConfigPatches[0].Patch.Value, &hf); err != nil {
		t.Fatal(err)
	}
	if got, wantCluster := string(f.Spec.ConfigPatches[0].Patch.Value), fmt.Sprintf("outbound|%d||%s", servicePort(t, svc, "grpc-rls"), want); !strings.Contains(got, wantCluster) {
		t.Errorf("the EnvoyFilter does not name %s:\n%s", wantCluster, got)
	}

	bad := bytes.Replace(read(t, file), []byte("connect_timeout:"), []byte("connect_timout:"), 1)
	if _, err := decodeEnvoyCluster(file, bad); err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "connect_timout") {
		t.Errorf("a typo'd field: %v, want an error naming the file and the field", err)
	}
}

func rlserverService(t *testing.T) *corev1.Service {
	objs, err := decodeManifest("kubernetes/standalone/service.yaml", read(t, "kubernetes/standalone/service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return objs[0].obj.(*corev1.Service)
}

func servicePort(t *testing.T, svc *corev1.Service, name string) int32 {
	for _, p := range svc.Spec.Ports {
		if p.Name == name {
			return p.Port
		}
	}
	t.Fatalf("Service %s has no port %s", svc.Name, name)
	return 0
}
