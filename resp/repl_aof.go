package resp

import (
	"errors"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/aof"
	"github.com/rlserver/rlserver/core"
)

// errMisconfAOF begins the refusal of a write while the append-only log cannot be
// written, Redis's words; the reason follows.
const errMisconfAOF = "MISCONF Errors writing to the AOF file: "

// writeRefusal is the error that keeps a write from running here, or "": the
// server is a replica (READONLY), or its append-only log's last write failed
// (MISCONF: a write that could not be logged would be lost to a crash), or it has
// fewer good replicas than min-replicas-to-write (NOREPLICAS). Reads, and
// decisions that write nothing (PEEK), go on.
func (s *Server) writeRefusal() string {
	if s.repl.ReadOnly() {
		return errReadOnly
	}
	if l := s.core.AOF(); l != nil && l.Failing() {
		if err := l.Err(); err != nil {
			return errMisconfAOF + err.Error()
		}
	}
	return s.replicasRefusal()
}

// cmdBgRewriteAOF serves BGREWRITEAOF, answered as Redis answers it.
func cmdBgRewriteAOF(s *Server, c *client, _ [][]byte, _ int64) {
	switch err := s.core.RewriteAOF(); {
	case err == nil:
		c.w.WriteString("Background append only file rewriting started")
	case errors.Is(err, aof.ErrRewriteRunning):
		c.writeError("ERR Background append only file rewriting already in progress")
	case errors.Is(err, core.ErrAOFOff):
		c.writeError("ERR Background append only file rewriting needs appendonly yes here (rlserver keeps no log while it is off)")
	default:
		c.writeError("ERR " + err.Error())
	}
}

// cmdBgSave serves BGSAVE [SCHEDULE]: the snapshot is written in the background.
func cmdBgSave(s *Server, c *client, _ [][]byte, _ int64) {
	if s.cfg.SnapshotPath == "" {
		c.writeError(errNoSnapshot)
		return
	}
	go s.core.Save() // a failure is logged and shown in INFO's rdb_last_bgsave_status
	c.w.WriteString("Background saving started")
}

// aofInfo is INFO persistence's aof_* fields, Redis's.
func (s *Server) aofInfo() [][2]string {
	l := s.core.AOF()
	if l == nil {
		return [][2]string{{"aof_enabled", "0"}, {"aof_rewrite_in_progress", "0"}, {"aof_rewrite_scheduled", "0"},
			{"aof_last_rewrite_time_sec", "-1"}, {"aof_current_rewrite_time_sec", "-1"},
			{"aof_last_bgrewrite_status", "ok"}, {"aof_rewrites", "0"}, {"aof_last_write_status", "ok"}}
	}
	st := l.Status()
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	ok := func(v bool) string {
		if v {
			return "ok"
		}
		return "err"
	}
	secs := func(d time.Duration) string {
		if d < 0 {
			return "-1"
		}
		return strconv.FormatInt(int64(d/time.Second), 10)
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	werr := ""
	if st.WriteErr != nil {
		werr = st.WriteErr.Error()
	}
	return [][2]string{
		{"aof_enabled", "1"},
		{"aof_rewrite_in_progress", b(st.RewriteInProgress)},
		{"aof_rewrite_scheduled", b(st.RewriteScheduled)},
		{"aof_last_rewrite_time_sec", secs(st.LastRewrite)},
		{"aof_current_rewrite_time_sec", secs(st.CurrentRewrite)},
		{"aof_last_bgrewrite_status", ok(st.LastRewriteOK)},
		{"aof_rewrites", strconv.FormatUint(st.Rewrites, 10)},
		{"aof_last_write_status", ok(st.WriteErr == nil)},
		{"aof_last_write_error", werr},
		{"aof_fsync", st.Fsync.String()},
		{"aof_current_size", i64(st.CurrentSize)},
		{"aof_base_size", i64(st.BaseSize)},
		{"aof_pending_rewrite", b(st.RewriteScheduled)},
		{"aof_buffer_length", i64(st.Buffered)},
		{"aof_unsynced_bytes", i64(st.Unsynced)},
		{"aof_last_load_truncated_bytes", i64(s.core.AOFLoaded().Truncated)},
	}
}
