package resp

import (
	"strconv"
	"time"

	"github.com/rlserver/rlserver/core"
)

// The RESP commands of snapshots, over the core's persistence.

// DefaultSnapshotInterval is how often a changed store is saved when
// Config.SnapshotInterval is 0.
const DefaultSnapshotInterval = core.DefaultSnapshotInterval

// errNoSnapshot answers SAVE and SHUTDOWN SAVE on a server started without a file.
const errNoSnapshot = "ERR snapshots are off: start rlserver with -snapshot PATH"

// cmdSave serves SAVE: write the snapshot now and answer when it is on disk.
func cmdSave(s *Server, c *client, _ [][]byte, _ int64) {
	if s.cfg.SnapshotPath == "" {
		c.writeError(errNoSnapshot)
		return
	}
	if err := s.core.Save(); err != nil {
		c.writeError("ERR snapshot failed: " + err.Error())
		return
	}
	c.w.WriteString("OK")
}

// cmdLastSave serves LASTSAVE: the Unix time of the last successful save, or of the
// start if there was none, as Redis answers.
func cmdLastSave(s *Server, c *client, _ [][]byte, _ int64) {
	c.w.WriteInt64(s.core.SnapshotStatus().LastSave.Unix())
}

// persistenceInfo is INFO's persistence section, in Redis's names where they fit.
func (s *Server) persistenceInfo() [][2]string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	st := s.core.SnapshotStatus()
	status := "ok"
	if st.LastFailed {
		status = "err"
	}
	lastDuration := "-1" // Redis's answer before the first save
	if st.Saves > 0 || st.LastFailed {
		lastDuration = itoa(int64(st.LastDuration / time.Second))
	}
	enabled := "0"
	if st.Path != "" {
		enabled = "1"
	}
	return append([][2]string{
		{"loading", "0"},
		{"snapshot_enabled", enabled},
		{"snapshot_path", st.Path},
		{"rdb_changes_since_last_save", strconv.FormatUint(st.Changes, 10)},
		{"rdb_bgsave_in_progress", "0"},
		{"rdb_last_save_time", itoa(st.LastSave.Unix())},
		{"rdb_last_bgsave_status", status},
		{"rdb_last_bgsave_time_sec", lastDuration},
		{"rdb_saves", strconv.FormatUint(st.Saves, 10)},
		{"rdb_last_load_keys_loaded", strconv.Itoa(st.Loaded.Keys)},
		{"rdb_last_load_keys_expired", strconv.Itoa(st.Loaded.Fresh)},
	}, s.aofInfo()...)
}
