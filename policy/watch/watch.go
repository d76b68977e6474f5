// Package watch reloads a policy file into a running engine whenever the file
// changes: written in place, renamed over, or swapped as a Kubernetes ConfigMap. It
// is the one part of the policy that needs fsnotify, kept apart so that importing
// the policy's format (package policy/config) does not pull a file watcher in.
package watch

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rlserver/rlserver/policy/config"
)

// settle is how long Watch waits after a change for more of it: an editor's save or a
// ConfigMap swap is several events, and one reload should see them all.
const settle = 50 * time.Millisecond

// Target is what a watch reloads: a policy engine (engine.Engine is one).
type Target interface {
	// SetPolicy puts p in force.
	SetPolicy(p *config.Policy)
	// LoadResult counts a load, failed if err is not nil.
	LoadResult(err error)
}

// Watch reloads path's policy into e whenever it changes, until ctx ends: a file
// written in place, renamed over, or a Kubernetes ConfigMap's ..data symlink swapped.
// It watches path's directory (path itself if a directory), and where path is a
// symlink the directory it points into too. A policy that does not load leaves the one
// in force, logs the error and counts a load error; one that loads is put in force
// (SetPolicy) and counted. Watch returns at once with an error if it cannot watch.
func Watch(ctx context.Context, path string, e Target, log *slog.Logger) error {
	return watch(ctx, path, e, log, nil)
}

// watch is Watch, closing ready (if not nil) once the directories are watched.
func watch(ctx context.Context, path string, e Target, log *slog.Logger, ready chan<- struct{}) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	for _, dir := range watchDirs(path) {
		if err := w.Add(dir); err != nil {
			return err
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	if ready != nil {
		close(ready)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			timer.Reset(settle)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			log.Warn("policy watch", "path", path, "err", err)
			timer.Reset(settle)
		case <-timer.C:
			// A directory swapped whole (path itself renamed over) must be watched anew.
			for _, dir := range watchDirs(path) {
				_ = w.Add(dir) // already watched: no-op; gone: the load below says so
			}
			// Logged before counted: whoever sees the count finds the line.
			p, err := config.Load(path)
			if err != nil {
				log.Error("policy not reloaded, the one in force stays", "path", path, "err", err)
				e.LoadResult(err)
				continue
			}
			e.SetPolicy(p)
			log.Info("policy reloaded", "path", path, "domains", len(p.Domains()))
			e.LoadResult(nil)
		}
	}
}

// watchDirs are the directories whose changes can change path's policy.
func watchDirs(path string) []string {
	dir := path
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		dir = filepath.Dir(path)
	}
	dirs := []string{dir}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		if st, err := os.Stat(real); err == nil && !st.IsDir() {
			real = filepath.Dir(real)
		}
		if real != dir {
			dirs = append(dirs, real)
		}
	}
	return dirs
}
