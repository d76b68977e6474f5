package resp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// MIGRATE from one rlserver to another, as redis-cli --cluster reshard moves keys:
// each key's DUMP payload (its state and absolute deadline) goes to the target by
// RESTORE-ASKING, and leaves this node once the target has it. The slots of the keys
// are locked meanwhile (lockSlot): no call on this node decides on a key being moved,
// and once the lock is released the key is gone here, so calls are sent on (ASK).
// The payload is rlserver's own: a real Redis refuses it, and nothing moves.

// Errors of MIGRATE, in Redis's words.
const (
	errMigrateKeysArg = "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
	errMigrateConnect = "IOERR error or timeout connecting to the client"
	errMigrateWrite   = "IOERR error or timeout writing to target instance"
	errMigrateRead    = "IOERR error or timeout reading to target instance"
)

// migrateArgs are MIGRATE's arguments.
type migrateArgs struct {
	addr           string
	keys           [][]byte
	copy, replace  bool
	user, password string
	timeout        time.Duration
}

// parseMigrate reads MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw]
// [AUTH2 user pw] [KEYS key...] as Redis's migrateCommand, or answers its error.
func parseMigrate(args [][]byte) (m migrateArgs, msg string) {
	m.keys = args[3:4]
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "copy":
			m.copy = true
		case opt == "replace":
			m.replace = true
		case opt == "auth" && more >= 1:
			m.password = string(args[j+1])
			j++
		case opt == "auth2" && more >= 2:
			m.user, m.password = string(args[j+1]), string(args[j+2])
			j += 2
		case opt == "keys":
			if len(args[3]) != 0 {
				return m, errMigrateKeysArg
			}
			m.keys = args[j+1:]
			j = len(args)
		default:
			return m, errSyntax
		}
	}
	timeout, ok1 := rlcmd.ParseInt(args[5])
	_, ok2 := rlcmd.ParseInt(args[4])
	if !ok1 || !ok2 {
		return m, errNotInteger
	}
	if timeout <= 0 {
		timeout = 1000
	}
	m.timeout = time.Duration(min(timeout, 1<<40)) * time.Millisecond
	m.addr = string(args[1]) + ":" + string(args[2])
	return m, ""
}

// migrateKeys are MIGRATE's keys, as Redis's key specs find them: the key
// argument, or those after KEYS when it is empty; none when the arguments are bad.
func migrateKeys(args [][]byte) [][]byte {
	m, msg := parseMigrate(args)
	if msg != "" {
		return nil
	}
	if len(m.keys) == 1 && len(m.keys[0]) == 0 {
		return nil
	}
	return m.keys
}

// cmdMigrate serves MIGRATE to another rlserver.
func cmdMigrate(s *Server, c *client, args [][]byte, now int64) {
	m, msg := parseMigrate(args)
	if msg != "" {
		c.writeError(msg)
		return
	}
	// The keys' slots, each locked once, in order (two MIGRATEs cannot deadlock).
	var slots []uint16
	for _, k := range m.keys {
		slots = append(slots, cluster.Slot(k))
	}
	slices.Sort(slots)
	slots = slices.Compact(slots)
	if s.slotLocks != nil {
		for _, sl := range slots {
			s.slotLocks[sl].Lock()
			defer s.slotLocks[sl].Unlock()
		}
	}
	var keys, payloads [][]byte
	for _, k := range m.keys {
		if p, ok := s.store.Dump(k, now); ok {
			keys, payloads = append(keys, k), append(payloads, p)
		}
	}
	if len(keys) == 0 {
		c.w.WriteString("NOKEY")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	rdb := s.migrateClient(m)
	if rdb == nil {
		c.writeError(errMigrateConnect)
		return
	}
	// A new connection is tried first, for Redis's error texts; one kept from an
	// earlier MIGRATE is not, which saves a round trip a call (a slot's move).
	if rdb.PoolStats().IdleConns == 0 {
		if err := rdb.Ping(ctx).Err(); err != nil && !isRedisError(err) {
			// A refused connection shows in Redis's non-blocking connect as a failed
			// write; a connection that never completes as the connect's timeout.
			msg := errMigrateConnect
			if errors.Is(err, syscall.ECONNREFUSED) {
				msg = errMigrateWrite
			}
			c.writeError(msg)
			return
		}
	}
	pipe := rdb.Pipeline()
	cmds := make([]*redis.StatusCmd, len(keys))
	for i, k := range keys {
		a := []any{"RESTORE-ASKING", k, 0, payloads[i]}
		if m.replace {
			a = append(a, "REPLACE")
		}
		cmds[i] = redis.NewStatusCmd(ctx, a...)
		pipe.Process(ctx, cmds[i])
	}
	if _, err := pipe.Exec(ctx); err != nil && !isRedisError(err) {
		c.writeError(errMigrateRead)
		return
	}
	var failed string
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			if failed == "" {
				failed = "ERR Target instance replied with error: " + err.Error()
			}
			continue
		}
		if !m.copy {
			s.store.Delete(keys[i], now)
		}
	}
	if failed != "" {
		c.writeError(failed)
		return
	}
	c.w.WriteString("OK")
}

// isRedisError reports whether err is the target's error reply, not a failure to
// reach it.
func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, context.DeadlineExceeded)
}

// migrateClient is a connection pool to MIGRATE's target, with its AUTH or AUTH2,
// kept among the peers' (cluster_peers.go); the call's context bounds each use.
// Nil once the server has closed.
func (s *Server) migrateClient(m migrateArgs) *redis.Client {
	return s.peers.client(m.addr+"\x00"+m.user+"\x00"+m.password, func() *redis.Options {
		return &redis.Options{Addr: m.addr, Username: m.user, Password: m.password, ContextTimeoutEnabled: true}
	})
}
