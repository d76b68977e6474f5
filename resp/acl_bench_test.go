package resp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/acl"
)

// BenchmarkACLCheck is the price of an ACL user on the hot path: RL.TOKEN over
// loopback at pipeline depths 1 and 16, as the default user with every right
// against one of ten key patterns whose last matches (each call checks all ten).
func BenchmarkACLCheck(b *testing.B) {
	tenPatterns := "default on nopass ~t0:* ~t1:* ~t2:* ~t3:* ~t4:* ~t5:* ~t6:* ~t7:* ~t8:* ~user:* +@ratelimit"
	for _, mode := range []struct {
		name string
		cfg  Config
	}{
		{"all", Config{}},
		{"patterns10", Config{Users: []UserDirective{{Args: strings.Fields(tenPatterns)}}}},
	} {
		for _, depth := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/P%d", mode.name, depth), func(b *testing.B) {
				benchPipeline(b, mode.cfg, "RL.TOKEN user:%d 100 1000", depth)
			})
		}
	}
}

// BenchmarkACLRefusal is the check itself, as serveCommand runs it for one
// RL.TOKEN of a user with ten key patterns, the last matching: without the
// network's noise around it.
func BenchmarkACLRefusal(b *testing.B) {
	r := acl.NewRegistry(aclTable)
	if err := r.SetUser("bench", strings.Fields("on nopass ~t0:* ~t1:* ~t2:* ~t3:* ~t4:* ~t5:* ~t6:* ~t7:* ~t8:* ~user:* +@ratelimit")); err != nil {
		b.Fatal(err)
	}
	p := r.User("bench").Perms()
	cm := lookup(commandIndex, []byte("rl.token"))
	args := [][]byte{[]byte("RL.TOKEN"), []byte("user:12345"), []byte("100"), []byte("1000")}
	b.ReportAllocs()
	for b.Loop() {
		if reason, _ := aclCheck(p, cm, args); reason != "" {
			b.Fatal(reason)
		}
	}
}
