package rlcmd

import (
	"errors"
	"strconv"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/reply"
)

// The grammar's errors, each a *reply.Error whose text is package reply's: the server
// writes them as they are and the Go client recognises them (reply.BadRequest).
// docs/commands.md lists the texts; clients match them, so they change only with the
// contract. Those naming a computed bound or an argument are built by the functions
// below.
var (
	// ErrSyntax is Redis's "ERR syntax error", for an unknown option or a missing
	// value, which other commands' parsers answer too.
	ErrSyntax = &reply.Error{Text: reply.Syntax}

	// The arguments of the RL.* commands, CL.THROTTLE, RL.ALL and the leases.
	errLimit         = &reply.Error{Text: reply.Limit}
	errWindow        = &reply.Error{Text: reply.Window}
	errRate          = &reply.Error{Text: reply.Rate}
	errBurst         = &reply.Error{Text: reply.Burst}
	errQueue         = &reply.Error{Text: reply.Queue}
	errMaxBurst      = &reply.Error{Text: reply.MaxBurst}
	errCount         = &reply.Error{Text: reply.Count}
	errPeriod        = &reply.Error{Text: reply.Period}
	errQuantity      = &reply.Error{Text: reply.Quantity}
	errUnknownKind   = &reply.Error{Text: reply.UnknownKind}
	errRLAllArity    = &reply.Error{Text: reply.Arity("rl.all")}
	errRLAllTooMany  = &reply.Error{Text: reply.AllTooMany}
	errRLAllUnknown  = &reply.Error{Text: reply.AllUnknown}
	errLeaseMs       = &reply.Error{Text: reply.LeaseMs}
	errLeaseID       = &reply.Error{Text: reply.LeaseID}
	errRenewArity    = &reply.Error{Text: reply.Arity("rl.renew")}
	errRefundAlone   = &reply.Error{Text: reply.RefundAlone}
	errRefundReserve = &reply.Error{Text: reply.RefundReserve}
	errSliceArity    = &reply.Error{Text: reply.Arity("rl.slice")}
	errSliceUnknown  = &reply.Error{Text: reply.SliceUnknown}
	errSliceLog      = &reply.Error{Text: reply.SliceLog}
	errSliceLeaky    = &reply.Error{Text: reply.SliceLeaky}
	errSliceOption   = &reply.Error{Text: reply.SliceOption}

	// algo's schedule errors, in each command's terms (scheduleError).
	errBurstSpan    = &reply.Error{Text: reply.BurstSpan}
	errQueueSpan    = &reply.Error{Text: reply.QueueSpan}
	errCostSpan     = &reply.Error{Text: reply.CostSpan}
	errMaxBurstSpan = &reply.Error{Text: reply.MaxBurstSpan}

	// Redis 8.8's GCRA, in Redis's words.
	errGCRAArity     = &reply.Error{Text: reply.Arity("gcra")}
	errGCRAMaxBurst  = &reply.Error{Text: reply.GCRAMaxBurst}
	errGCRANotInt    = &reply.Error{Text: reply.GCRANotInt}
	errGCRAPositive  = &reply.Error{Text: reply.GCRAPositive}
	errGCRAFloat     = &reply.Error{Text: reply.GCRAFloat}
	errGCRAPeriod    = &reply.Error{Text: reply.GCRAPeriod}
	errGCRAMissing   = &reply.Error{Text: reply.GCRAMissing}
	errGCRATokensOvf = &reply.Error{Text: reply.GCRATokensOvf}
	errGCRABurstOvf  = &reply.Error{Text: reply.GCRABurstOvf}
)

// arityError is Redis's reply to a wrong argument count for kind's command.
func arityError(kind algo.Kind) error { return &reply.Error{Text: reply.Arity(kind.Command())} }

// limitError is the reply to a limit out of 1..most (RL.LOG, RL.ACQUIRE: the server's
// max-log-limit).
func limitError(most int64) error {
	return &reply.Error{Text: reply.LimitUpTo(strconv.FormatInt(most, 10))}
}

// costError is the reply to a COST out of 0..most (limit·1000).
func costError(most int64) error {
	return &reply.Error{Text: reply.CostUpTo(strconv.FormatInt(most, 10))}
}

// refundError is the reply to a REFUND out of 1..most (COST's bound).
func refundError(most int64) error {
	return &reply.Error{Text: reply.RefundUpTo(strconv.FormatInt(most, 10))}
}

// reserveError is the reply to a RESERVE out of 0..most (the limit).
func reserveError(most int64) error {
	return &reply.Error{Text: reply.ReserveUpTo(strconv.FormatInt(most, 10))}
}

// countError is the reply to an RL.SLICE count out of 1..most (the limit).
func countError(most int64) error {
	return &reply.Error{Text: reply.CountUpTo(strconv.FormatInt(most, 10))}
}

// unknownAlgorithmError is the reply to an RL.ALL whose first word is no algorithm.
func unknownAlgorithmError(word []byte) error {
	return &reply.Error{Text: reply.UnknownAlgorithm(string(word))}
}

// scheduleError words an error of algo.CheckSchedule or algo.NativeGCRA for r's
// command, whose arguments name the quantities differently; nil stays nil.
func scheduleError(r algo.Request, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, algo.ErrCostOverflow):
		return errGCRATokensOvf
	case errors.Is(err, algo.ErrBurstOverflow):
		return errGCRABurstOvf
	case errors.Is(err, algo.ErrQueueSpan):
		return errQueueSpan
	case errors.Is(err, algo.ErrCostSpan):
		return errCostSpan
	case r.Kind == algo.KindThrottle:
		return errMaxBurstSpan
	}
	return errBurstSpan
}
