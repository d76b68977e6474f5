package config

import "testing"

// TestMarshalText checks the dump RL.LIMITS answers: a line per rule, sorted, after
// its domain's line and its priority classes.
func TestMarshalText(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`domain: edge
all_or_nothing: true
priorities:
  descriptor_key: priority
  default: normal
  classes:
    - name: critical
    - name: normal
      reserve_percent: 20
    - name: batch
      reserve_percent: 50
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: token, burst: 40}
  - key: ip
    shadow_mode: true
    rate_limit: {name: by_ip, window: 1500ms, requests_per_unit: 5}
  - key: health
    rate_limit: {unlimited: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	want := `# policy p.yaml: 1 domains
domain edge (p.yaml) all_or_nothing
  priorities by priority: critical, normal (leaves 20%, default), batch (leaves 50%)
  edge.health: unlimited
  edge.ip: 5 per 1.5s, fixed, shadow_mode, name by_ip
  edge.user: 10 per minute, token, burst 40
`
	if string(got) != want {
		t.Fatalf("MarshalText:\n%s\nwant:\n%s", got, want)
	}
}
