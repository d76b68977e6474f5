package resp

import (
	"errors"
	"strconv"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/reply"
	"github.com/rlserver/rlserver/store"
)

// The error replies of the rate-limiting commands, and the one place where the typed
// errors of package algo and package store become Redis's words (ErrorReply,
// scheduleError). docs/commands.md lists these texts; clients match them, so they
// change only with the contract.

// replyError is an error whose text is a Redis error reply, whole: the argument
// grammar's errors, which are resp's own words. A pointer, so that storing one in an
// error allocates nothing: the parsers pick an error on the hot path before they
// know whether they need it.
type replyError struct{ text string }

func (e *replyError) Error() string { return e.text }

// Error replies with a fixed text; those naming a computed bound or an argument are
// built by the functions below. The texts are package reply's, which the Go client
// reads to recognise them.
var (
	// The argument grammar of the RL.* commands, CL.THROTTLE, RL.ALL and the leases.
	errBadSyntax   = &replyError{reply.Syntax}
	errLimit       = &replyError{reply.Limit}
	errWindow      = &replyError{reply.Window}
	errRate        = &replyError{reply.Rate}
	errBurst       = &replyError{reply.Burst}
	errQueue       = &replyError{reply.Queue}
	errMaxBurst    = &replyError{reply.MaxBurst}
	errCount       = &replyError{reply.Count}
	errPeriod      = &replyError{reply.Period}
	errQuantity    = &replyError{reply.Quantity}
	errUnknownKind = &replyError{reply.UnknownKind}
	errAllArity    = &replyError{reply.Arity("rl.all")}
	errAllTooMany  = &replyError{reply.AllTooMany}
	errAllUnknown  = &replyError{reply.AllUnknown}
	errLeaseMs     = &replyError{reply.LeaseMs}
	errLeaseID     = &replyError{reply.LeaseID}
	errRenewArity  = &replyError{reply.Arity("rl.renew")}
	errRefundAlone = &replyError{reply.RefundAlone}

	// algo's schedule errors, in each command's terms (scheduleError).
	errBurstSpan    = &replyError{reply.BurstSpan}
	errQueueSpan    = &replyError{reply.QueueSpan}
	errCostSpan     = &replyError{reply.CostSpan}
	errMaxBurstSpan = &replyError{reply.MaxBurstSpan}

	// Redis 8.8's GCRA, in Redis's words.
	errGCRAArity     = &replyError{reply.Arity("gcra")}
	errGCRAMaxBurst  = &replyError{reply.GCRAMaxBurst}
	errGCRANotInt    = &replyError{reply.GCRANotInt}
	errGCRAPositive  = &replyError{reply.GCRAPositive}
	errGCRAFloat     = &replyError{reply.GCRAFloat}
	errGCRAPeriod    = &replyError{reply.GCRAPeriod}
	errGCRAMissing   = &replyError{reply.GCRAMissing}
	errGCRATokensOvf = &replyError{reply.GCRATokensOvf}
	errGCRABurstOvf  = &replyError{reply.GCRABurstOvf}

	// The store's errors (ErrorReply). OOM and WRONGTYPE are Redis's own texts, which
	// clients recognise by their first word.
	errWrongType  = &replyError{"WRONGTYPE Operation against a key holding the wrong kind of value"}
	errKeyTooLong = &replyError{reply.KeyTooLong}
	errLogLimit   = &replyError{reply.LogLimit}
	errOOM        = &replyError{"OOM command not allowed when used memory > 'maxmemory'."}
	errShardFull  = &replyError{"OOM the key's shard holds 67108864 keys of its size: run rlserver with more -shards"}
	errSameKey    = &replyError{reply.SameKey}
)

// arityError is Redis's reply to a wrong argument count for kind's command.
func arityError(kind algo.Kind) error { return &replyError{reply.Arity(kind.Command())} }

// limitError is the reply to a limit out of 1..most (RL.LOG, RL.ACQUIRE: the server's
// max-log-limit).
func limitError(most int64) error {
	return &replyError{reply.LimitUpTo(strconv.FormatInt(most, 10))}
}

// costError is the reply to a COST out of 0..most (limit·1000).
func costError(most int64) error { return &replyError{reply.CostUpTo(strconv.FormatInt(most, 10))} }

// refundError is the reply to a REFUND out of 1..most (COST's bound).
func refundError(most int64) error {
	return &replyError{reply.RefundUpTo(strconv.FormatInt(most, 10))}
}

// unknownAlgorithmError is the reply to an RL.ALL whose first word is no algorithm.
func unknownAlgorithmError(word []byte) error {
	return &replyError{reply.UnknownAlgorithm(string(word))}
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

// ErrorReply is the error reply rlserver sends for err, without its '-': the
// grammar's own, or a store error in Redis's words; anything else is a bug's,
// answered as Redis answers one. For code that drives a store.Store directly and
// must answer as the server does.
func ErrorReply(err error) string {
	var re *replyError
	switch {
	case errors.As(err, &re):
		return re.text
	case errors.Is(err, algo.ErrCostOverflow): // Redis's GCRA, at a tat near 2^63 µs
		return errGCRATokensOvf.text
	case errors.Is(err, store.ErrWrongType):
		return errWrongType.text
	case errors.Is(err, store.ErrKeyTooLong):
		return errKeyTooLong.text
	case errors.Is(err, store.ErrLogLimit):
		return errLogLimit.text
	case errors.Is(err, store.ErrOOM):
		return errOOM.text
	case errors.Is(err, store.ErrShardFull):
		return errShardFull.text
	case errors.Is(err, store.ErrSameKey):
		return errSameKey.text
	case errors.Is(err, store.ErrBusyKey):
		return errBusyKey
	case errors.Is(err, store.ErrDumpPayload):
		return errDumpPayload
	case errors.Is(err, store.ErrDumpData):
		return errDumpData
	}
	return "ERR " + err.Error()
}
