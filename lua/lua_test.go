package lua

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"
)

// TestScripts checks that every command has its script, common.lua then its body,
// named by its command and by the SHA1 that EVALSHA takes. That Redis runs them as rlserver decides is proved by
// ../compat_test.go.
func TestScripts(t *testing.T) {
	for _, command := range []string{"rl.fixed", "rl.slide", "rl.log", "rl.token", "rl.gcra", "rl.leaky", "cl.throttle"} {
		s, ok := Scripts[command]
		if !ok {
			t.Errorf("no script for %s", command)
			continue
		}
		sum := sha1.Sum([]byte(s.Source))
		if s.Command != command || s.SHA1 != hex.EncodeToString(sum[:]) {
			t.Errorf("Scripts[%q] is named %q with SHA1 %s; want %q and the source's SHA1 %x", command, s.Command, s.SHA1, command, sum)
		}
		if !strings.HasPrefix(s.Source, common) || len(s.Source) == len(common) {
			t.Errorf("Scripts[%q] is not common.lua followed by a body", command)
		}
		if !strings.Contains(s.Source, strings.ToUpper(command)+" reference script") {
			t.Errorf("Scripts[%q] holds another command's script", command)
		}
	}
	if len(Scripts) != 7 {
		t.Errorf("%d scripts, want 7", len(Scripts))
	}
}
