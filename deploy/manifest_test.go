package deploy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// object is one decoded document of a manifest file.
type object struct {
	file string
	doc  int // from 1
	obj  any // *corev1.ConfigMap, *appsv1.Deployment, ...
}

func (o object) String() string { return fmt.Sprintf("%s: document %d", o.file, o.doc) }

// kinds are the types a document's apiVersion and kind decode into.
var kinds = map[string]func() any{
	"v1/ConfigMap":                             func() any { return new(corev1.ConfigMap) },
	"v1/Service":                               func() any { return new(corev1.Service) },
	"apps/v1/Deployment":                       func() any { return new(appsv1.Deployment) },
	"apps/v1/StatefulSet":                      func() any { return new(appsv1.StatefulSet) },
	"policy/v1/PodDisruptionBudget":            func() any { return new(policyv1.PodDisruptionBudget) },
	"networking.istio.io/v1alpha3/EnvoyFilter": func() any { return new(envoyFilter) },
	"monitoring.coreos.com/v1/ServiceMonitor":  func() any { return new(monitoringv1.ServiceMonitor) },
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
