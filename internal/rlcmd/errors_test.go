package rlcmd

import (
	"strconv"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/reply"
)

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
// grammar refuses a request as given (resp's TestBadRequestKnowsStoreRefusals checks
// the store's).
func TestBadRequestKnowsEveryRefusal(t *testing.T) {
	refusals := []error{ErrSyntax, errLimit, errWindow, errRate, errBurst, errQueue, errMaxBurst,
		errCount, errPeriod, errQuantity, errUnknownKind, errRLAllArity, errRLAllTooMany, errRLAllUnknown,
		errLeaseMs, errLeaseID, errRenewArity, errBurstSpan, errQueueSpan, errCostSpan, errMaxBurstSpan,
		errGCRAArity, errGCRAMaxBurst, errGCRANotInt, errGCRAPositive, errGCRAFloat, errGCRAPeriod,
		errGCRAMissing, errGCRATokensOvf, errGCRABurstOvf, arityError(algo.KindLeaky), limitError(100_000), costError(5000),
		unknownAlgorithmError([]byte("THROTTLE")), errSliceArity, errSliceUnknown, errSliceLog, errSliceLeaky,
		errSliceOption, countError(100)}
	for _, err := range refusals {
		if !reply.BadRequest(err.Error()) {
			t.Errorf("reply.BadRequest(%q) = false", err)
		}
	}
	if want := "ERR RL.ALL takes at most " + strconv.Itoa(algo.MaxRules) + " rules"; reply.AllTooMany != want {
		t.Errorf("reply.AllTooMany = %q, want %q", reply.AllTooMany, want)
	}
}
