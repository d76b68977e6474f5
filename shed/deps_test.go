package shed

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLightImport checks that package shed imports the standard library only: the
// HTTP middleware and every gRPC service import it, and Prometheus lives in
// shed/shedmetrics.
func TestLightImport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	if deps := strings.Fields(string(out)); len(deps) != 1 || deps[0] != "github.com/rlserver/rlserver/shed" {
		t.Errorf("package shed imports %q, want the standard library only", deps)
	}
}
