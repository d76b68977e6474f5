package resp

import (
	"errors"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/reply"
	"github.com/rlserver/rlserver/store"
)

// The store's errors in Redis's words (ErrorReply). docs/commands.md lists these
// texts; clients match them, so they change only with the contract. The grammar's
// own errors are package rlcmd's. OOM and WRONGTYPE are Redis's own texts, which
// clients recognise by their first word.
var (
	errWrongType  = &reply.Error{Text: "WRONGTYPE Operation against a key holding the wrong kind of value"}
	errKeyTooLong = &reply.Error{Text: reply.KeyTooLong}
	errLogLimit   = &reply.Error{Text: reply.LogLimit}
	errOOM        = &reply.Error{Text: "OOM command not allowed when used memory > 'maxmemory'."}
	errShardFull  = &reply.Error{Text: "OOM the key's shard holds 67108864 keys of its size: run rlserver with more -shards"}
	errSameKey    = &reply.Error{Text: reply.SameKey}
)

// ErrorReply is the error reply rlserver sends for err, without its '-': the
// grammar's own, or a store error in Redis's words; anything else is a bug's,
// answered as Redis answers one. For code that drives a store.Store directly and
// must answer as the server does.
func ErrorReply(err error) string {
	var re *reply.Error
	switch {
	case errors.As(err, &re):
		return re.Text
	case errors.Is(err, algo.ErrCostOverflow): // Redis's GCRA, at a tat near 2^63 µs
		return reply.GCRATokensOvf
	case errors.Is(err, store.ErrWrongType):
		return errWrongType.Text
	case errors.Is(err, store.ErrKeyTooLong):
		return errKeyTooLong.Text
	case errors.Is(err, store.ErrLogLimit):
		return errLogLimit.Text
	case errors.Is(err, store.ErrOOM):
		return errOOM.Text
	case errors.Is(err, store.ErrShardFull):
		return errShardFull.Text
	case errors.Is(err, store.ErrSameKey):
		return errSameKey.Text
	case errors.Is(err, store.ErrBusyKey):
		return errBusyKey
	case errors.Is(err, store.ErrDumpPayload):
		return errDumpPayload
	case errors.Is(err, store.ErrDumpData):
		return errDumpData
	}
	return "ERR " + err.Error()
}
