package resp

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

const errDebugDisabled = "ERR DEBUG command not allowed. " +
	"Start rlserver with -enable-debug-command to use it (tests only)."

// cmdTime serves TIME from the server clock: seconds and microseconds, as strings.
func cmdTime(_ *Server, c *client, _ [][]byte, now int64) {
	c.w.WriteArray(2)
	c.w.WriteBulkString(strconv.FormatInt(now/1_000_000, 10))
	c.w.WriteBulkString(strconv.FormatInt(now%1_000_000, 10))
}

// cmdShutdown serves SHUTDOWN [NOSAVE|SAVE]. As in Redis, SAVE (and no argument when
// there is a snapshot file) saves first and refuses to stop if that fails; NOSAVE
// stops without saving. A successful SHUTDOWN answers nothing: the connection closes.
// The core saves once more after the last command has run (core.Core.Close).
func cmdShutdown(s *Server, c *client, args [][]byte, _ int64) {
	if len(args) > 2 || len(args) == 2 &&
		!bytes.EqualFold(args[1], []byte("nosave")) && !bytes.EqualFold(args[1], []byte("save")) {
		c.writeError(errSyntax)
		return
	}
	save := s.cfg.SnapshotPath != ""
	if len(args) == 2 {
		save = bytes.EqualFold(args[1], []byte("save"))
	}
	switch {
	case save && s.cfg.SnapshotPath == "":
		c.writeError(errNoSnapshot)
		return
	case save:
		if s.core.Save() != nil {
			c.writeError("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
	default:
		s.core.SkipFinalSave()
	}
	s.log.Info("SHUTDOWN requested", "client", c.id, "addr", c.addr, "save", save)
	c.conn.ReadPipeline()
	c.conn.Close()
	s.Close()
}

// cmdDebug serves DEBUG CLOCK SET unix_us | ADVANCE us | REAL, and DEBUG HELP, when
// the server was started with -enable-debug-command.
func cmdDebug(s *Server, c *client, args [][]byte, now int64) {
	if !s.cfg.EnableDebugCommand {
		c.writeError(errDebugDisabled)
		return
	}
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "help" && len(args) == 2:
		lines := []string{
			"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CLOCK SET unix_us",
			"    Freeze the server clock at unix_us microseconds since the Unix epoch.",
			"CLOCK ADVANCE us",
			"    Move the clock us microseconds forward and keep it frozen there.",
			"CLOCK REAL",
			"    Follow the real time again.",
			"DIGEST",
			"    Output a hex signature representing the current keyspace.",
			"DIGEST-VALUE <key> [<key> ...]",
			"    Output a hex signature of the values of all the specified keys.",
			"SLEEP <seconds>",
			"    Stop this connection for <seconds> (a decimal number), then answer OK.",
		}
		c.w.WriteArray(len(lines))
		for _, l := range lines {
			c.w.WriteString(l)
		}
		return
	case sub == "digest" && len(args) == 2:
		debugDigest(s, c, now)
		return
	case sub == "digest" || sub == "sleep" && len(args) != 3:
		c.writeError(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try DEBUG HELP.", args[1]))
		return
	case sub == "digest-value":
		debugDigestValue(s, c, args[2:], now)
		return
	case sub == "sleep" && len(args) == 3:
		// Redis's strtod, what does not parse being 0; only this connection waits.
		if secs, _ := strconv.ParseFloat(string(args[2]), 64); secs > 0 && secs < 1e9 {
			time.Sleep(time.Duration(secs * float64(time.Second)))
		}
		c.w.WriteString("OK")
		return
	case sub != "clock":
		c.writeError(fmt.Sprintf("ERR unknown subcommand '%.128s'. Try DEBUG HELP.", args[1]))
		return
	}
	action := ""
	if len(args) > 2 {
		action = strings.ToLower(string(args[2]))
	}
	switch {
	case action == "real" && len(args) == 3:
		s.core.RealClock()
	case action == "set" && len(args) == 4:
		// The engine's float64 formulas hold µs exactly below 2^53 (year 2255).
		t, ok := rlcmd.ParseInt(args[3])
		if !ok || !s.core.SetClock(t) {
			c.writeError(fmt.Sprintf("ERR unix_us must be an integer between 1 and %d", core.MaxClock))
			return
		}
	case action == "advance" && len(args) == 4:
		d, ok := rlcmd.ParseInt(args[3])
		if !ok || d < 0 || d > core.MaxClock {
			c.writeError(fmt.Sprintf("ERR us must be an integer between 0 and %d", core.MaxClock))
			return
		}
		if !s.core.AdvanceClock(d) {
			c.writeError(fmt.Sprintf("ERR the clock would pass %d", core.MaxClock))
			return
		}
	default:
		c.writeError(errSyntax)
		return
	}
	c.batchOpen = false // the next command of this pipeline reads the new time
	c.w.WriteString("OK")
}
