package deploy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3" // typed_config of the EnvoyFilter
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3" // typed_extension_protocol_options of the cluster
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

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
