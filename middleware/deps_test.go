package middleware_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLightImport checks that package middleware pulls no Prometheus and no protobuf
// of its own: its collector lives in middleware/middlewaremetrics. What package
// policy pulls is policy's (its engine's metrics, until the engine leaves it), so
// the packages policy depends on are set aside; every other package middleware
// depends on must import neither.
func TestLightImport(t *testing.T) {
	deps := func(pkg string) map[string][]string { // each dependency's imports
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pkg).Output()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string][]string{}
		for line := range strings.Lines(string(out)) {
			f := strings.Fields(line)
			m[f[0]] = f[1:]
		}
		return m
	}
	heavy := func(path string) bool {
		return strings.Contains(path, "prometheus") || strings.Contains(path, "protobuf")
	}
	policy := deps("github.com/rlserver/rlserver/policy")
	for pkg, imports := range deps(".") {
		if _, ok := policy[pkg]; ok {
			continue
		}
		for _, imp := range imports {
			if heavy(pkg) || heavy(imp) {
				t.Errorf("%s, which package middleware depends on, imports %s", pkg, imp)
			}
		}
	}
}
