package resp

import (
	"bytes"
	"runtime/debug"
	"strconv"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// Error replies shared by several commands, worded as Redis words them.
const (
	errSyntax        = "ERR syntax error"
	errNotInteger    = "ERR value is not an integer or out of range"
	errInvalidCursor = "ERR invalid cursor"
)

// cmdDel serves DEL, UNLINK and RL.RESET: remove the keys, answer how many existed.
func cmdDel(s *Server, c *client, args [][]byte, now int64) {
	var n int64
	for _, key := range args[1:] {
		if s.store.Delete(key, now) {
			n++
		}
	}
	c.w.WriteInt64(n)
}

func cmdExists(s *Server, c *client, args [][]byte, now int64) {
	var n int64
	for _, key := range args[1:] {
		if s.store.Exists(key, now) {
			n++
		}
	}
	c.w.WriteInt64(n)
}

func cmdType(s *Server, c *client, args [][]byte, now int64) {
	kind, ok := s.store.Type(args[1], now)
	if !ok {
		c.w.WriteString("none")
		return
	}
	c.w.WriteString(kind.String())
}

// cmdTTL serves TTL (unit 1e6 µs) and PTTL (unit 1e3 µs). Both round up, as the
// contract rounds every duration: a client that waits that long finds the key gone.
func cmdTTL(unit int64) func(s *Server, c *client, args [][]byte, now int64) {
	return func(s *Server, c *client, args [][]byte, now int64) {
		left, ok := s.store.TTL(args[1], now)
		if !ok {
			c.w.WriteInt64(-2)
			return
		}
		c.w.WriteInt64((left + unit - 1) / unit)
	}
}

// kindNamed is the algorithm TYPE names name, case-insensitively, as SCAN's TYPE
// option takes it.
func kindNamed(name []byte) (algo.Kind, bool) {
	for k := algo.KindFixed; k <= algo.LastKind; k++ {
		if bytes.EqualFold(name, []byte(k.String())) {
			return k, true
		}
	}
	return 0, false
}

func cmdScan(s *Server, c *client, args [][]byte, now int64) {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		c.writeError(errInvalidCursor)
		return
	}
	count := int64(10)
	var match []byte
	var kind algo.Kind
	anyKind := true
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.writeError(errSyntax)
			return
		}
		opt, val := args[i], args[i+1]
		switch {
		case bytes.EqualFold(opt, []byte("match")):
			match = val
			if bytes.Equal(match, []byte("*")) {
				match = nil
			}
		case bytes.EqualFold(opt, []byte("count")):
			n, ok := rlcmd.ParseInt(val)
			if !ok {
				c.writeError(errNotInteger)
				return
			}
			if n < 1 {
				c.writeError(errSyntax)
				return
			}
			count = n
		case bytes.EqualFold(opt, []byte("type")):
			kind, anyKind = kindNamed(val)
			if !anyKind {
				// A Redis type (string, hash, ...) or an unknown name: no key has it.
				c.w.WriteArray(2)
				c.w.WriteBulkString("0")
				c.w.WriteArray(0)
				return
			}
		default:
			c.writeError(errSyntax)
			return
		}
	}
	next, keys := s.store.Scan(cursor, int(min(count, 1<<20)), match, kind, now)
	c.w.WriteArray(2)
	c.w.WriteBulkString(strconv.FormatUint(next, 10))
	c.w.WriteArray(len(keys))
	for _, k := range keys {
		c.w.WriteBulk(k)
	}
}

func cmdKeys(s *Server, c *client, args [][]byte, now int64) {
	match := args[1]
	if bytes.Equal(match, []byte("*")) {
		match = nil
	}
	var all [][]byte
	cursor := uint64(0)
	for {
		var keys [][]byte
		cursor, keys = s.store.Scan(cursor, 1024, match, 0, now)
		all = append(all, keys...)
		if cursor == 0 {
			break
		}
	}
	c.w.WriteArray(len(all))
	for _, k := range all {
		c.w.WriteBulk(k)
	}
}

func cmdDBSize(s *Server, c *client, _ [][]byte, now int64) {
	c.w.WriteInt64(int64(s.store.Len(now)))
}

// cmdFlush serves FLUSHALL and FLUSHDB [ASYNC|SYNC].
func cmdFlush(s *Server, c *client, args [][]byte, _ int64) {
	if len(args) > 2 || len(args) == 2 &&
		!bytes.EqualFold(args[1], []byte("async")) && !bytes.EqualFold(args[1], []byte("sync")) {
		c.writeError(errSyntax)
		return
	}
	s.store.Flush()
	c.w.WriteString("OK")
}

// cmdMemoryUsage serves MEMORY USAGE key [SAMPLES count]; SAMPLES is accepted and
// has no effect, the size being exact.
func cmdMemoryUsage(s *Server, c *client, args [][]byte, now int64) {
	for i := 3; i < len(args); i += 2 {
		if i+1 >= len(args) || !bytes.EqualFold(args[i], []byte("samples")) {
			c.writeError(errSyntax)
			return
		}
		n, ok := rlcmd.ParseInt(args[i+1])
		if !ok {
			c.writeError(errNotInteger)
			return
		}
		if n < 0 {
			c.writeError(errSyntax)
			return
		}
	}
	n, ok := s.store.MemoryUsage(args[2], now)
	if !ok {
		c.writeNull()
		return
	}
	c.w.WriteInt64(n)
}

// cmdMemoryPurge serves MEMORY PURGE. Redis asks its allocator to release free
// pages; here the Go runtime collects garbage and returns free memory to the OS.
func cmdMemoryPurge(_ *Server, c *client, _ [][]byte, _ int64) {
	debug.FreeOSMemory()
	c.w.WriteString("OK")
}

// cmdObject serves OBJECT ENCODING|FREQ|IDLETIME|REFCOUNT key: what rlserver can
// say of a key (see the command's doc), or null if it does not exist.
func cmdObject(s *Server, c *client, args [][]byte, now int64) {
	if !s.store.Exists(args[2], now) {
		c.writeNull()
		return
	}
	switch string(bytes.ToLower(args[1])) {
	case "encoding":
		c.w.WriteBulkString("raw")
	case "refcount":
		c.w.WriteInt64(1)
	default: // freq, idletime: not tracked
		c.w.WriteInt64(0)
	}
}
