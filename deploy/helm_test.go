package deploy

import (
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

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// chartDir is the Helm chart; its ci/values-*.yaml are the values each mode is
// linted and rendered with (Helm's convention, which chart-testing reads too).
const chartDir = "helm/rlserver"

// chartModes are the modes values.yaml documents: each needs a ci/ values file.
var chartModes = []string{"standalone", "sentinel", "rls", "envoyGateway"}

// ciValues reads the chart's ci/values-*.yaml, file name to values.
func ciValues(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "values-*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s/ci: no values files (%v)", chartDir, err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		out[f] = readValues(t, f)
	}
	return out
}

func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	v := map[string]any{}
	if err := yaml.Unmarshal(read(t, file), &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// renderChart renders the chart in dir as `helm install --dry-run` does without a
// cluster: values coalesced with values.yaml and checked against values.schema.json
// (unless skipSchema, as --skip-schema-validation), then every template executed
// strictly (a missing value is an error). The result maps template path to its output.
func renderChart(dir string, vals map[string]any, skipSchema bool) (map[string]string, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(chrt, vals,
		chartutil.ReleaseOptions{Name: "rl", Namespace: "limits", IsInstall: true}, chartutil.DefaultCapabilities, skipSchema)
	if err != nil {
		return nil, err
	}
	return engine.Engine{Strict: true}.Render(chrt, top)
}

// chartErrors renders the chart in dir with vals, decodes every document strictly, as
// the manifests are (decodeManifest), and checks the objects (checkChart).
func chartErrors(t *testing.T, dir string, vals map[string]any) []error {
	t.Helper()
	out, err := renderChart(dir, vals, false)
	if err != nil {
		return []error{fmt.Errorf("render: %w", err)}
	}
	var objs []object
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if !strings.HasSuffix(name, ".yaml") || strings.TrimSpace(stripComments(out[name])) == "" {
			continue // _helpers.tpl, a template off in this mode
		}
		o, err := decodeManifest(name, []byte(out[name]))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs = append(objs, o...)
	}
	if len(objs) == 0 {
		return append(errs, errors.New("the chart rendered no object"))
	}
	return append(errs, checkChart(t, objs, mergedValues(t, vals))...)
}

// TestHelmLint runs Helm's linter on the chart with each ci/ values file: a warning
// or an error fails.
func TestHelmLint(t *testing.T) {
	for file, vals := range ciValues(t) {
		l := lint.All(chartDir, vals, "limits", false)
		if len(l.Messages) == 0 {
			t.Errorf("%s: the linter said nothing: did it run?", file)
		}
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: %s", file, m)
			}
		}
	}
}

// TestHelmRender renders the chart with each ci/ values file, decodes every object
// strictly into the Kubernetes API's types and checks the pods as the manifests'
// (user 65532, read-only root, probes on declared ports...), that each rlserver
// container listens on exactly the ports it declares, the Services, the policies'
// ConfigMap as the pod loads it, and what each mode promises.
func TestHelmRender(t *testing.T) {
	modes := map[string]bool{}
	for file, vals := range ciValues(t) {
		modes[mergedValues(t, vals).Mode] = true
		t.Run(filepath.Base(file), func(t *testing.T) {
			for _, err := range chartErrors(t, chartDir, vals) {
				t.Error(err)
			}
		})
	}
	for _, m := range chartModes {
		if !modes[m] {
			t.Errorf("mode %s: no %s/ci values file renders it", m, chartDir)
		}
	}
}

// chartValues are the values the checks read, coalesced with values.yaml.
type chartValues struct {
	Mode           string
	Replicas       int
	Metrics        struct{ Enabled bool }
	ServiceMonitor struct{ Enabled bool }
	Tracing        tracingValues
}

// tracingValues are the chart's tracing values.
type tracingValues struct {
	Enabled                                           bool
	Endpoint, Protocol, ServiceName, ServiceNamespace string
	SamplingRate                                      float64
}

func mergedValues(t *testing.T, vals map[string]any) chartValues {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	all, err := chartutil.CoalesceValues(chrt, vals)
	if err != nil {
		t.Fatal(err)
	}
	data, err := yaml.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	var v chartValues
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func checkChart(t *testing.T, objs []object, v chartValues) []error {
	var errs []error
	var services []object
	pods := map[string]corev1.PodTemplateSpec{}
	sets := map[string]int32{} // StatefulSet component label to replicas
	var monitors []*monitoringv1.ServiceMonitor
	for _, o := range objs {
		switch x := o.obj.(type) {
		case *appsv1.Deployment:
			pods[o.String()+" Deployment "+x.Name] = x.Spec.Template
		case *appsv1.StatefulSet:
			pods[o.String()+" StatefulSet "+x.Name] = x.Spec.Template
			sets[x.Spec.Template.Labels["app.kubernetes.io/component"]] = *x.Spec.Replicas
		case *corev1.Service:
			services = append(services, o)
		case *corev1.ConfigMap:
			if strings.HasSuffix(x.Name, "-limits") {
				if err := loadPolicyConfigMap(o.file, x, t.TempDir()); err != nil {
					errs = append(errs, err)
				}
			}
		case *monitoringv1.ServiceMonitor:
			monitors = append(monitors, x)
		}
	}
	for where, tmpl := range pods {
		errs = append(errs, checkPodWith(where, tmpl.Spec, func(c corev1.Container) []error {
			return append(checkChartRlserver(where, tmpl.Spec, c, v.Mode), checkTracingEnv(where, c, v.Tracing)...)
		})...)
	}
	errs = append(errs, checkServices(services, pods)...)
	if v.Mode == "sentinel" {
		if sets["sentinel"] != 3 || sets["server"] != int32(v.Replicas+1) {
			errs = append(errs, fmt.Errorf("StatefulSets' replicas %v: want 3 Sentinels and %d rlservers", sets, v.Replicas+1))
		}
	} else if len(sets) > 0 {
		errs = append(errs, fmt.Errorf("mode %s renders StatefulSets %v", v.Mode, sets))
	}
	if n := len(monitors); v.ServiceMonitor.Enabled != (n == 1) || n > 1 {
		errs = append(errs, fmt.Errorf("serviceMonitor.enabled %v and %d ServiceMonitors", v.ServiceMonitor.Enabled, n))
	}
	for _, m := range monitors {
		errs = append(errs, checkServiceMonitor(m, services)...)
	}
	return errs
}

// checkChartRlserver checks that an rlserver container listens on 0.0.0.0 on exactly
// the ports it declares (RESP on loopback only in rls mode), reads its policy as the
// mode says (-limits on a whole ConfigMap, or over xDS with exactly the variables
// docs/gateway.md names, its certificates mounted).
func checkChartRlserver(where string, spec corev1.PodSpec, c corev1.Container, mode string) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: container %s: %s", where, c.Name, fmt.Sprintf(format, args...)))
	}
	var declared, listening []int
	for _, p := range c.Ports {
		declared = append(declared, int(p.ContainerPort))
	}
	if mode == "envoyGateway" {
		if !slices.Equal(c.Command, []string{"/bin/ratelimit"}) || len(c.Args) > 0 {
			fail("command %q args %q: want envoyproxy/ratelimit's /bin/ratelimit alone", c.Command, c.Args)
		}
		env := map[string]string{}
		for _, e := range c.Env {
			if !tracingVar(e.Name) { // checkTracingEnv's
				env[e.Name] = e.Value
			}
		}
		if got, want := slices.Sorted(maps.Keys(env)), envoyGatewayVars(); !slices.Equal(got, want) {
			fail("variables %v, docs/gateway.md names %v", got, want)
		}
		if env["CONFIG_TYPE"] != "GRPC_XDS_SOTW" {
			fail("CONFIG_TYPE %q", env["CONFIG_TYPE"])
		}
		// With CONFIG_TYPE set, rlserver takes envoyproxy/ratelimit's listeners.
		listening = []int{8081, 8080}
		if env["USE_PROMETHEUS"] == "true" {
			_, p, _ := net.SplitHostPort(env["PROMETHEUS_ADDR"])
			n, _ := strconv.Atoi(p)
			listening = append(listening, n)
		}
		for _, name := range []string{"CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "CONFIG_GRPC_XDS_CLIENT_TLS_KEY", "CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "GRPC_SERVER_TLS_CERT", "GRPC_SERVER_TLS_KEY", "GRPC_SERVER_TLS_CA_CERT"} {
			if !secretMounted(spec, c, filepath.Dir(env[name])) {
				fail("%s %q: no Secret mounted at its directory", name, env[name])
			}
		}
	} else {
		args := append(slices.Clone(c.Command), c.Args...)
		for _, f := range listenFlags {
			v := flagValue(args, f)
			if v == "" {
				continue // off
			}
			host, port, err := net.SplitHostPort(v)
			n, _ := strconv.Atoi(port)
			switch {
			case err != nil:
				fail("%s %q: not host:port", f, v)
			case f == "-addr" && mode == "rls":
				if host != "127.0.0.1" {
					fail("-addr %q: rls mode keeps RESP on loopback", v)
				}
			case host != "0.0.0.0":
				fail("%s %q: want 0.0.0.0:port", f, v)
			default:
				listening = append(listening, n)
			}
		}
		errs = append(errs, checkVolumes(where, spec, c, args)...)
	}
	slices.Sort(declared)
	slices.Sort(listening)
	if !slices.Equal(declared, listening) {
		fail("declares ports %v, listens on %v", declared, listening)
	}
	return errs
}

// tracingVar reports whether name is one of the tracing values' variables.
func tracingVar(name string) bool {
	return strings.HasPrefix(name, "TRACING_") || strings.HasPrefix(name, "OTEL_")
}

// checkTracingEnv checks that an rlserver container has the tracing variables with
// the values' settings when tracing is enabled, rlserver's names for them
// (cmd/rlserver's tracingEnv, envoyproxy/ratelimit's), and none when it is not.
func checkTracingEnv(where string, c corev1.Container, tr tracingValues) []error {
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		if tracingVar(e.Name) {
			env[e.Name] = e
		}
	}
	fail := func(format string, args ...any) []error {
		return []error{fmt.Errorf("%s: container %s: %s", where, c.Name, fmt.Sprintf(format, args...))}
	}
	if !tr.Enabled {
		if len(env) > 0 {
			return fail("tracing off, variables %v", slices.Sorted(maps.Keys(env)))
		}
		return nil
	}
	rate, err := strconv.ParseFloat(env["TRACING_SAMPLING_RATE"].Value, 64)
	if err != nil || rate != tr.SamplingRate {
		return fail("TRACING_SAMPLING_RATE %q, want %v", env["TRACING_SAMPLING_RATE"].Value, tr.SamplingRate)
	}
	want := map[string]string{"TRACING_ENABLED": "true", "TRACING_EXPORTER_PROTOCOL": tr.Protocol, "TRACING_SERVICE_NAME": tr.ServiceName,
		"TRACING_SAMPLING_RATE": env["TRACING_SAMPLING_RATE"].Value, "TRACING_SERVICE_INSTANCE_ID": "", "OTEL_EXPORTER_OTLP_ENDPOINT": tr.Endpoint}
	if tr.ServiceNamespace != "" {
		want["TRACING_SERVICE_NAMESPACE"] = tr.ServiceNamespace
	}
	got := map[string]string{}
	for name, e := range env {
		got[name] = e.Value
	}
	if !maps.Equal(got, want) {
		return fail("tracing variables %v, want %v", got, want)
	}
	if id := env["TRACING_SERVICE_INSTANCE_ID"].ValueFrom; id == nil || id.FieldRef == nil || id.FieldRef.FieldPath != "metadata.name" {
		return fail("TRACING_SERVICE_INSTANCE_ID is not the pod's name")
	}
	return nil
}

func secretMounted(spec corev1.PodSpec, c corev1.Container, dir string) bool {
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if m.MountPath == dir && v.Name == m.Name && v.Secret != nil {
				return true
			}
		}
	}
	return false
}

// checkServiceMonitor checks that m selects a Service with the port it scrapes.
func checkServiceMonitor(m *monitoringv1.ServiceMonitor, services []object) []error {
	if len(m.Spec.Endpoints) == 0 {
		return []error{fmt.Errorf("ServiceMonitor %s: no endpoint", m.Name)}
	}
	for _, o := range services {
		svc := o.obj.(*corev1.Service)
		if !labelsMatch(m.Spec.Selector.MatchLabels, svc.Labels) {
			continue
		}
		for _, p := range svc.Spec.Ports {
			if p.Name == m.Spec.Endpoints[0].Port {
				return nil
			}
		}
	}
	return []error{fmt.Errorf("ServiceMonitor %s: no Service it selects has a port %q", m.Name, m.Spec.Endpoints[0].Port)}
}

// envoyGatewayVars are the variables docs/gateway.md says the chart's envoyGateway
// mode sets: the backquoted names of the sentence after "sets exactly these variables".
func envoyGatewayVars() []string {
	data, err := os.ReadFile("../docs/gateway.md")
	if err != nil {
		return []string{err.Error()}
	}
	_, after, ok := strings.Cut(strings.ReplaceAll(string(data), "\n", " "), "sets exactly these variables")
	if !ok {
		return []string{`docs/gateway.md: no "sets exactly these variables"`}
	}
	para, _, _ := strings.Cut(after, ". ")
	var names []string
	for _, m := range regexp.MustCompile("`([A-Z][A-Z0-9_]+)`").FindAllStringSubmatch(para, -1) {
		names = append(names, m[1])
	}
	slices.Sort(names)
	return names
}

// TestHelmBadValues: values that make no sense fail the render with a message naming
// the value, through the schema and, with the schema skipped, through the templates.
func TestHelmBadValues(t *testing.T) {
	for _, tc := range []struct {
		file     string
		schema   []string // what the error says with the schema
		noSchema []string // and with it skipped
	}{
		{"values-bad-replicas.yaml", []string{"/replicas", "minimum"}, []string{"replicas -1", "at least one"}},
		{"values-bad-mode.yaml", []string{"mode", "standalone"}, []string{`mode "cluster"`, "want one of"}},
		{"values-bad-servicemonitor.yaml", []string{"serviceMonitor.enabled needs metrics.enabled"}, []string{"serviceMonitor.enabled needs metrics.enabled"}},
		{"values-bad-sampling.yaml", []string{"/tracing/samplingRate", "maximum"}, []string{"tracing.samplingRate 1.5", "want 0 to 1"}},
		{"values-bad-tracing-endpoint.yaml", []string{"tracing.enabled needs tracing.endpoint"}, []string{"tracing.enabled needs tracing.endpoint"}},
	} {
		vals := readValues(t, filepath.Join("testdata/helm", tc.file))
		for _, skip := range []bool{false, true} {
			want := tc.schema
			if skip {
				want = tc.noSchema
			}
			out, err := renderChart(chartDir, vals, skip)
			if err == nil {
				t.Errorf("%s (schema skipped %v): rendered %d templates, want an error", tc.file, skip, len(out))
				continue
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s (schema skipped %v): %v\nwant it to say %q", tc.file, skip, err, w)
				}
			}
		}
	}
}

// TestHelmRenderBadChart: a template that renders a root user, a probe on a port no
// container declares, a typo'd field, two Sentinels, a variable docs/gateway.md does
// not name or a ServiceMonitor nobody asked for fails TestHelmRender's checks, naming
// the object and what is wrong.
func TestHelmRenderBadChart(t *testing.T) {
	for _, tc := range []struct {
		template, old, new, values, want string
	}{
		{"_helpers.tpl", "runAsUser: 65532\nrunAsGroup: 65532\ncapabilities", "runAsUser: 0\nrunAsGroup: 65532\ncapabilities",
			"values-standalone.yaml", "container rlserver: runAsUser 0, want 65532"},
		{"_helpers.tpl", "readinessProbe:\n{{- if $http }}\n  httpGet:\n    path: /healthcheck\n    port: http", "readinessProbe:\n{{- if $http }}\n  httpGet:\n    path: /healthcheck\n    port: admin",
			"values-rls.yaml", "a probe's port is not one the container declares"},
		{"sentinel.yaml", "readinessProbe:\n            exec", "readinesProbe:\n            exec", "values-sentinel.yaml", `unknown field "readinesProbe"`},
		{"_helpers.tpl", "- -http-addr\n- 0.0.0.0:8080", "- -http-addr\n- 127.0.0.1:8080",
			"values-standalone.yaml", `-http-addr "127.0.0.1:8080": want 0.0.0.0:port`},
		{"sentinel.yaml", "replicas: 3", "replicas: 2", "values-sentinel.yaml", "want 3 Sentinels and 3 rlservers"},
		{"_helpers.tpl", "- name: CONFIG_TYPE\n", "- name: USE_STATSD\n  value: \"false\"\n- name: CONFIG_TYPE\n",
			"values-envoy-gateway.yaml", "docs/gateway.md names"},
		{"servicemonitor.yaml", "if .Values.serviceMonitor.enabled", "if true", "values-standalone.yaml", "serviceMonitor.enabled false and 1 ServiceMonitors"},
		{"_helpers.tpl", "value: {{ .Values.tracing.samplingRate | quote }}", `value: "1"`, "values-envoy-gateway.yaml", `TRACING_SAMPLING_RATE "1", want 0.01`},
		{"sentinel.yaml", `{{- with include "rlserver.tracingEnv" . | trim }}`, `{{- with "" }}`, "values-sentinel.yaml", `container rlserver: TRACING_SAMPLING_RATE "", want 0.5`},
	} {
		dir := filepath.Join(t.TempDir(), "rlserver")
		if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "templates", tc.template)
		tmpl := string(read(t, path))
		if !strings.Contains(tmpl, tc.old) {
			t.Fatalf("%s has no %q", tc.template, tc.old)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(tmpl, tc.old, tc.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		errs := chartErrors(t, dir, readValues(t, filepath.Join(chartDir, "ci", tc.values)))
		if !strings.Contains(fmt.Sprint(errs), tc.want) {
			t.Errorf("%s: %q for %q with %s: errors %v\nwant one saying %q", tc.template, tc.old, tc.new, tc.values, errs, tc.want)
		}
	}
}
