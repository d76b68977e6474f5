package aof

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rlserver/rlserver/store"
)

// LoadInfo says what Load read.
type LoadInfo struct {
	Files     int   // files loaded
	Keys      int   // keys held after the load
	Bytes     int64 // bytes read
	Truncated int64 // bytes of a torn tail cut off, 0 if none
}

// Load replays the log in cfg.Dir into st, which is empty: the base, then every
// increment's records, each at now, so that a key whose state became fresh while the
// server was down is dropped as it would have been. It reports false, loading
// nothing, if there is no manifest (a first start). A torn tail of the last
// increment is cut off with a warning, or refused under cfg.RefuseTruncated; any
// other damage is refused with the file and the offset.
func Load(cfg Config, st *store.Store, now int64) (LoadInfo, bool, error) {
	var info LoadInfo
	m, err := readManifest(cfg.Dir, cfg.name())
	if notExist(err) {
		return info, false, nil
	}
	if err != nil {
		return info, false, err
	}
	if m.base != nil {
		path := filepath.Join(cfg.Dir, m.base.name)
		f, err := os.Open(path)
		if err != nil {
			return info, true, fmt.Errorf("aof: base: %w", err)
		}
		si, err := st.ReadSnapshot(bufio.NewReaderSize(f, 256<<10), now)
		f.Close()
		if err != nil {
			return info, true, fmt.Errorf("aof: %s: %w", path, err)
		}
		info.Files++
		info.Bytes += si.Bytes
	}
	for i, p := range m.incrs {
		path := filepath.Join(cfg.Dir, p.name)
		var ap *store.Applier
		version, size, err := readIncr(path, func(body []byte) error {
			if _, err := ap.Apply(body, now); err != nil {
				return err
			}
			return nil
		}, func(v uint32) { ap = st.NewApplier(v) })
		info.Files++
		info.Bytes += size
		if err == nil {
			continue
		}
		var fe *FrameError
		last := i == len(m.incrs)-1
		if !errors.As(err, &fe) || !errors.Is(err, ErrTorn) || !last {
			return info, true, fmt.Errorf("%w (see `rlserver check-aof --fix`)", err)
		}
		if cfg.RefuseTruncated {
			return info, true, fmt.Errorf("%w (aof-load-truncated is no; `rlserver check-aof --fix %s` cuts it off)", err, path)
		}
		full, _ := os.Stat(path)
		if err := truncateAt(path, fe.Offset, version); err != nil {
			return info, true, fmt.Errorf("aof: truncating the torn tail of %s: %w", path, err)
		}
		if full != nil {
			info.Truncated = full.Size() - max(fe.Offset, fileHeadBytes)
		}
		cfg.logger().Warn("aof: loaded a log whose last frame a crash cut short; cut it off (aof-load-truncated yes)",
			"file", path, "offset", fe.Offset, "bytes_dropped", info.Truncated)
	}
	info.Keys = st.Len(now)
	return info, true, nil
}

// truncateAt cuts path at off, keeping a whole header at least (one of version,
// written anew if the crash cut it), and syncs it.
func truncateAt(path string, off int64, version uint32) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if off < fileHeadBytes {
		if version == 0 {
			version = store.EffectVersion
		}
		if _, err := f.WriteAt(appendHeader(nil, version), 0); err != nil {
			return err
		}
		off = fileHeadBytes
	}
	if err := f.Truncate(off); err != nil {
		return err
	}
	return f.Sync()
}
