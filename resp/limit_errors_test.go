package resp

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/rlserver/rlserver/algo"
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
		{errWindow, "ERR window_ms must be an integer between 1 and 31536000000"},
		{limitError(7), "ERR limit must be an integer between 1 and 7"},
		{errors.New("surprise"), "ERR surprise"},
	} {
		if got := ErrorReply(c.err); got != c.want {
			t.Errorf("ErrorReply(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestScheduleError: algo's errors are worded for the command of the request.
func TestScheduleError(t *testing.T) {
	for _, c := range []struct {
		r    algo.Request
		err  error
		want error
	}{
		{algo.Request{Kind: algo.KindGCRA}, algo.ErrBurstSpan, errBurstSpan},
		{algo.Request{Kind: algo.KindThrottle, Cell: true}, algo.ErrBurstSpan, errMaxBurstSpan},
		{algo.Request{Kind: algo.KindLeaky}, algo.ErrQueueSpan, errQueueSpan},
		{algo.Request{Kind: algo.KindLeaky}, algo.ErrCostSpan, errCostSpan},
		{algo.Request{Kind: algo.KindGCRA, Cell: true}, algo.ErrCostOverflow, errGCRATokensOvf},
		{algo.Request{Kind: algo.KindGCRA, Cell: true}, algo.ErrBurstOverflow, errGCRABurstOvf},
		{algo.Request{Kind: algo.KindFixed}, nil, nil},
	} {
		if got := scheduleError(c.r, c.err); got != c.want {
			t.Errorf("scheduleError(%v, %v) = %v, want %v", c.r.Kind, c.err, got, c.want)
		}
	}
}

// TestBadRequestKnowsEveryRefusal: the client recognises every reply with which the
// server refuses a request as given, and none of those about the server's state.
func TestBadRequestKnowsEveryRefusal(t *testing.T) {
	refusals := []error{errBadSyntax, errLimit, errWindow, errRate, errBurst, errQueue, errMaxBurst,
		errCount, errPeriod, errQuantity, errUnknownKind, errAllArity, errAllTooMany, errAllUnknown,
		errLeaseMs, errLeaseID, errRenewArity, errBurstSpan, errQueueSpan, errCostSpan, errMaxBurstSpan,
		errGCRAArity, errGCRAMaxBurst, errGCRANotInt, errGCRAPositive, errGCRAFloat, errGCRAPeriod,
		errGCRAMissing, errGCRATokensOvf, errGCRABurstOvf, errKeyTooLong, errLogLimit,
		errSameKey, arityError(algo.KindLeaky), limitError(100_000), costError(5000),
		unknownAlgorithmError([]byte("THROTTLE"))}
	for _, err := range refusals {
		if !reply.BadRequest(err.Error()) {
			t.Errorf("reply.BadRequest(%q) = false", err)
		}
	}
	for _, err := range []error{errWrongType, errOOM} {
		if reply.BadRequest(err.Error()) {
			t.Errorf("reply.BadRequest(%q) = true", err)
		}
	}
	if want := "ERR RL.ALL takes at most " + strconv.Itoa(algo.MaxRules) + " rules"; reply.AllTooMany != want {
		t.Errorf("reply.AllTooMany = %q, want %q", reply.AllTooMany, want)
	}
}
