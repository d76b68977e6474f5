package middleware_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLightImport checks that package middleware pulls no Prometheus (nor its
// protobufs), no YAML and no file watcher: its collector lives in
// middleware/middlewaremetrics, the policy loader in policy/config. Measured with
// them: 73 packages outside the standard library, a 16.5 MB example app (11.4 MB
// stripped); without: 33 (12 of them this module's), and 13.7 MB (9.5 MB).
func TestLightImport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, heavy := range []string{"prometheus", "protobuf", "yaml", "fsnotify"} {
			if strings.Contains(dep, heavy) {
				t.Errorf("package middleware imports %s", dep)
			}
		}
	}
}
