package rlcmd

import (
	"bytes"

	"github.com/rlserver/rlserver/algo"
)

// ParseAcquire reads RL.ACQUIRE's arguments after the key: limit lease_ms [ID id]
// [RESERVE n], n from 0 to the limit (algo.LeaseRequest.Reserve). The
// limit is at most maxLogLimit (capped at 1e9), since a lease set's memory grows with
// it as a log's does; lease_ms is at most a year; the ID option's keyword is
// case-insensitive, its id binary-safe, 1 to 128 bytes, and any other option is
// "ERR syntax error". The ID aliases args. Errors are Redis error replies, whole.
func ParseAcquire(args [][]byte, maxLogLimit int64) (algo.LeaseRequest, error) {
	if len(args) < 2 {
		return algo.LeaseRequest{}, arityError(algo.KindLease)
	}
	var r algo.LeaseRequest
	_, maxL := algo.Request{Kind: algo.KindLease}.Range(algo.ArgLimit)
	maxL = min(maxLogLimit, maxL)
	var ok bool
	if r.Limit, ok = ParseIntIn(args[0], 1, maxL); !ok {
		return algo.LeaseRequest{}, limitError(maxL)
	}
	if r.Duration, ok = parseLeaseMs(args[1]); !ok {
		return algo.LeaseRequest{}, errLeaseMs
	}
	for i := 2; i < len(args); i += 2 {
		switch {
		case i+1 == len(args):
			return algo.LeaseRequest{}, ErrSyntax
		case bytes.EqualFold(args[i], []byte("RESERVE")):
			if r.Reserve, ok = ParseIntIn(args[i+1], 0, r.Limit); !ok {
				return algo.LeaseRequest{}, reserveError(r.Limit)
			}
		case !bytes.EqualFold(args[i], []byte("ID")):
			return algo.LeaseRequest{}, ErrSyntax
		case len(args[i+1]) == 0 || len(args[i+1]) > algo.MaxLeaseID:
			return algo.LeaseRequest{}, errLeaseID
		default:
			r.ID = args[i+1]
		}
	}
	return r, nil
}

// ParseRenew reads RL.RENEW's arguments after the key: lease_id lease_ms, and returns
// the id and the duration in µs. Any id is accepted: one that names no live lease
// answers 0, as RL.RELEASE's does.
func ParseRenew(args [][]byte) (id []byte, duration int64, err error) {
	if len(args) != 2 {
		return nil, 0, errRenewArity
	}
	duration, ok := parseLeaseMs(args[1])
	if !ok {
		return nil, 0, errLeaseMs
	}
	return args[0], duration, nil
}

// parseLeaseMs reads lease_ms, 1 ms to a year, and returns it in µs.
func parseLeaseMs(b []byte) (int64, bool) {
	lo, hi := algo.Request{Kind: algo.KindLease}.Range(algo.ArgWindow)
	ms, ok := ParseIntIn(b, lo/1000, hi/1000)
	return ms * 1000, ok
}
