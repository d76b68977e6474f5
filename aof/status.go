package aof

import "time"

// Status is the log's state, as INFO persistence shows it.
type Status struct {
	Fsync             Fsync
	RewriteInProgress bool
	RewriteScheduled  bool
	LastRewriteOK     bool
	LastRewrite       time.Duration // how long the last rewrite took, -1 if none
	CurrentRewrite    time.Duration // how long the running rewrite has taken, -1 if none
	Rewrites          uint64
	WriteErr          error // the last write's or sync's error, nil if it succeeded
	CurrentSize       int64 // bytes of every file of the log
	BaseSize          int64 // CurrentSize after the last rewrite or the start
	Buffered          int64 // bytes of records not yet written
	Unsynced          int64 // bytes of records written but not yet synced
}

// Status reads the log's state.
func (l *Log) Status() Status {
	s := Status{Fsync: l.policy(), RewriteInProgress: l.rewrites.running.Load(),
		RewriteScheduled: l.rewrites.scheduled.Load(),
		LastRewriteOK:    !l.rewrites.failed.Load(), LastRewrite: -1, CurrentRewrite: -1,
		Rewrites: l.rewrites.count.Load(), CurrentSize: l.curSize.Load(), BaseSize: l.baseSize.Load()}
	if t := l.rewrites.took.Load(); t >= 0 {
		s.LastRewrite = time.Duration(t) * time.Microsecond
	}
	if s.RewriteInProgress {
		s.CurrentRewrite = time.Since(time.UnixMicro(l.rewrites.began.Load()))
	}
	end := l.j.End()
	l.mu.Lock()
	s.WriteErr = l.writeErr
	s.Buffered = end - l.written
	s.Unsynced = l.written - l.durable
	l.mu.Unlock()
	return s
}
