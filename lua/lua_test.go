package lua

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/algo"
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

func TestArgs(t *testing.T) {
	tests := []struct {
		req  algo.Request
		want string
	}{
		{algo.Request{Kind: algo.KindFixed, Limit: 100, Window: 1_000_000, Cost: 1}, "[100 1000 1 0]"},
		{algo.Request{Kind: algo.KindLog, Limit: 5, Window: 2_000, Cost: 3, Peek: true}, "[5 2 3 1]"},
		{algo.Request{Kind: algo.KindToken, Limit: 10, Window: 1_000_000, Cost: 1, Rate: 4}, "[10 1000 1 0 4]"},
		{algo.Request{Kind: algo.KindGCRA, Limit: 10, Window: 1_000_000, Cost: 1, Burst: 2}, "[10 1000 1 0 2]"},
		{algo.Request{Kind: algo.KindLeaky, Limit: 10, Window: 1_000_000, Cost: 1, Queue: 7}, "[10 1000 1 0 7]"},
		{algo.Request{Kind: algo.KindThrottle, Limit: 15, Rate: 30, Window: 60_000_000, Cost: 1}, "[15 30 60 1]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(Args(tt.req)); got != tt.want {
			t.Errorf("Args(%+v) = %s, want %s", tt.req, got, tt.want)
		}
	}
}
