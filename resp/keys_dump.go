package resp

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// Replies of DUMP, RESTORE and GCRASETVALUE in Redis's words (cluster.c, gcra.c).
const (
	errBusyKey     = "BUSYKEY Target key name already exists."
	errDumpPayload = "ERR DUMP payload version or checksum are wrong"
	errDumpData    = "ERR Bad data format"
	errRestoreTTL  = "ERR Invalid TTL value, must be >= 0"
	errIdleTime    = "ERR Invalid IDLETIME value, must be >= 0"
	errFreq        = "ERR Invalid FREQ value, must be >= 0 and <= 255"
	errTatValue    = "ERR Invalid TaT value"
	errTatNegative = "ERR Invalid negative TaT value"
)

// cmdDump serves DUMP key: the key's state as store.Dump writes it, or null.
func cmdDump(s *Server, c *client, args [][]byte, now int64) {
	payload, ok := s.store.Dump(args[1], now)
	if !ok {
		c.writeNull()
		return
	}
	c.w.WriteBulk(payload)
}

// cmdRestore serves RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f],
// checking as Redis's restoreCommand does, in its order: the options (IDLETIME and
// FREQ are checked and have no effect: no key has an LRU or LFU clock here), BUSYKEY,
// the TTL, then the payload. ttl 0 keeps the state's own deadline, the moment its key
// would have gone; any other ttl is the key's expire time in ms, relative or ABSTTL,
// and one already past stores nothing (REPLACE still removes the old key), as Redis.
func cmdRestore(s *Server, c *client, args [][]byte, now int64) {
	var replace, absTTL, idle, freq bool
	for j := 4; j < len(args); j++ {
		more := j+1 < len(args)
		switch opt := args[j]; {
		case bytes.EqualFold(opt, []byte("replace")):
			replace = true
		case bytes.EqualFold(opt, []byte("absttl")):
			absTTL = true
		case bytes.EqualFold(opt, []byte("idletime")) && more && !freq:
			n, ok := rlcmd.ParseInt(args[j+1])
			switch {
			case !ok:
				c.writeError(errNotInteger)
				return
			case n < 0:
				c.writeError(errIdleTime)
				return
			}
			idle = true
			j++
		case bytes.EqualFold(opt, []byte("freq")) && more && !idle:
			n, ok := rlcmd.ParseInt(args[j+1])
			switch {
			case !ok:
				c.writeError(errNotInteger)
				return
			case n < 0 || n > 255:
				c.writeError(errFreq)
				return
			}
			freq = true
			j++
		default:
			c.writeError(errSyntax)
			return
		}
	}
	if !replace && s.store.Exists(args[1], now) {
		c.writeError(errBusyKey)
		return
	}
	ttl, ok := rlcmd.ParseInt(args[2])
	switch {
	case !ok:
		c.writeError(errNotInteger)
		return
	case ttl < 0:
		c.writeError(errRestoreTTL)
		return
	}
	var deadline int64 // 0: the state's own
	if ttl > 0 {
		at := ttl // ms
		if !absTTL {
			at = min(ttl, math.MaxInt64/1000-now/1000) + now/1000
		}
		// The key goes as its expire ms begins, as Redis's GCRA keys do here; an
		// expire time of 0 ms or less (ABSTTL) is already past.
		deadline = max(1, min(at, math.MaxInt64/1000)*1000)
	}
	if err := s.store.Restore(args[1], args[3], deadline, replace, now); err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	c.w.WriteString("OK")
}

// cmdExpireTime serves PEXPIRETIME (ms) and EXPIRETIME (s): the absolute Unix time
// the key goes at, -2 if absent. Every state has one, so never -1. The ms are rounded
// up as PTTL rounds, the seconds to the nearest as Redis rounds its ms.
func cmdExpireTime(ms bool) func(s *Server, c *client, args [][]byte, now int64) {
	return func(s *Server, c *client, args [][]byte, now int64) {
		left, ok := s.store.TTL(args[1], now)
		if !ok {
			c.w.WriteInt64(-2)
			return
		}
		at := now + left
		at = at/1000 + min(1, at%1000) // whole ms, rounded up
		if !ms {
			at = (at + 500) / 1000
		}
		c.w.WriteInt64(at)
	}
}

// cmdGCRASetValue serves GCRASETVALUE key tat, Redis 8.8's command that sets a GCRA
// key's theoretical arrival time (µs) and its expiry (the ms after tat), as Redis's
// replication and AOF rewrite send it: the key's type first, then the tat.
func cmdGCRASetValue(s *Server, c *client, args [][]byte, now int64) {
	if kind, ok := s.store.Type(args[1], now); ok && kind != algo.KindRedisGCRA {
		c.writeError(errWrongType.Text)
		return
	}
	tat, ok := rlcmd.ParseInt(args[2])
	switch {
	case !ok:
		c.writeError(errTatValue)
		return
	case tat < 0:
		c.writeError(errTatNegative)
		return
	}
	if err := s.store.SetGCRA(args[1], tat, now); err != nil {
		c.writeError(ErrorReply(err))
		return
	}
	c.w.WriteString("OK")
}

// digestHex is a digest as DEBUG DIGEST answers it: 40 hex digits, all 0 for none.
func digestHex(d [20]byte) string { return hex.EncodeToString(d[:]) }

// debugDigestValue serves DEBUG DIGEST-VALUE key ...: each key's state digest
// (store.Digest; 40 zeros for an absent key) as a status reply, as Redis answers.
func debugDigestValue(s *Server, c *client, keys [][]byte, now int64) {
	c.w.WriteArray(len(keys))
	for _, k := range keys {
		d, _ := s.store.Digest(k, now)
		c.w.WriteString(digestHex(d))
	}
}

// debugDigest serves DEBUG DIGEST: the keyspace's digest, each key's name and state
// digest hashed together and xored over the keys (order-free, as Redis's), 40 zeros
// for an empty keyspace.
func debugDigest(s *Server, c *client, now int64) {
	var all [20]byte
	cursor := uint64(0)
	for {
		var keys [][]byte
		cursor, keys = s.store.Scan(cursor, 1024, nil, 0, now)
		for _, k := range keys {
			if d, ok := s.store.Digest(k, now); ok {
				kd := keyDigest(k, d)
				for i := range all {
					all[i] ^= kd[i]
				}
			}
		}
		if cursor == 0 {
			break
		}
	}
	c.w.WriteString(digestHex(all))
}

// keyDigest is the SHA-1 of a key's name followed by its state digest.
func keyDigest(key []byte, d [20]byte) [20]byte {
	h := sha1.New()
	h.Write(key)
	h.Write(d[:])
	var out [20]byte
	h.Sum(out[:0])
	return out
}

// cmdFunctionFlush serves FUNCTION FLUSH [ASYNC|SYNC]: no functions, nothing to
// delete; the mode is checked as Redis checks it.
func cmdFunctionFlush(_ *Server, c *client, args [][]byte, _ int64) {
	if len(args) > 3 || len(args) == 3 &&
		!bytes.EqualFold(args[2], []byte("async")) && !bytes.EqualFold(args[2], []byte("sync")) {
		if len(args) > 3 {
			c.writeError(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try FUNCTION HELP.", args[1]))
			return
		}
		c.writeError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	c.w.WriteString("OK")
}
