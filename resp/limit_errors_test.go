package resp

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rlserver/rlserver/internal/reply"
	"github.com/rlserver/rlserver/store"
)

// TestErrorReply: the store's errors, wrapped or not, get Redis's words; the grammar's
// replies pass as they are; anything else is an ERR line.
func TestErrorReply(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{store.ErrWrongType, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{fmt.Errorf("shard 3: %w", store.ErrWrongType), "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{store.ErrKeyTooLong, "ERR key is longer than 268435455 bytes"},
		{store.ErrLogLimit, "ERR RL.LOG limit is above the server's max-log-limit"},
		{store.ErrOOM, "OOM command not allowed when used memory > 'maxmemory'."},
		{store.ErrSameKey, "ERR RL.ALL names the same key in two rules"},
		{&reply.Error{Text: reply.Window}, "ERR window_ms must be an integer between 1 and 31536000000"},
		{&reply.Error{Text: reply.LimitUpTo("7")}, "ERR limit must be an integer between 1 and 7"},
		{errors.New("surprise"), "ERR surprise"},
	} {
		if got := ErrorReply(c.err); got != c.want {
			t.Errorf("ErrorReply(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestBadRequestKnowsStoreRefusals: the client recognises the store's refusals of a
// request as given, and none of those about the server's state.
func TestBadRequestKnowsStoreRefusals(t *testing.T) {
	for _, err := range []error{errKeyTooLong, errLogLimit, errSameKey} {
		if !reply.BadRequest(err.Error()) {
			t.Errorf("reply.BadRequest(%q) = false", err)
		}
	}
	for _, err := range []error{errWrongType, errOOM} {
		if reply.BadRequest(err.Error()) {
			t.Errorf("reply.BadRequest(%q) = true", err)
		}
	}
}
