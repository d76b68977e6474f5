package aof

import (
	"fmt"
	"runtime"
	"time"
)

// retryEvery is how often the writer retries a failed write, and the everysec period.
const retryEvery = time.Second

// writeGap is the least time between two writes under everysec and no: the records of
// that time go in one write. At one write a wake-up, redis-benchmark's RL.TOKEN -P 1
// at 50 connections ran at 0.78x of no persistence, the writer's syscalls taking the
// core the server is pinned to; a process crash loses at most this much more.
const writeGap = time.Millisecond

// run is the writer: it takes the journal's records whenever there are some and
// appends them as a frame, syncs as the policy says, rotates the increment for a
// rewrite, and on Close writes and syncs what is left.
func (l *Log) run() {
	defer close(l.done)
	tick := time.NewTicker(retryEvery / 4)
	defer tick.Stop()
	for {
		select {
		case <-l.j.Wake():
			if l.failing() {
				continue // retried on the tick, not at every write refused meanwhile
			}
			if l.policy() == FsyncAlways {
				l.gather()
			}
		case <-tick.C:
		case reply := <-l.rotate:
			reply <- l.rotateIncr()
			continue
		case <-l.stop:
			l.flush(true)
			l.f.Close()
			return
		}
		l.flush(false)
		l.maybeRewrite()
		if l.policy() != FsyncAlways {
			time.Sleep(writeGap)
		}
	}
}

// gatherYields bounds gather: while records keep coming, a sync waits at most this
// many turns of the runnable goroutines.
const gatherYields = 4

// gather yields the processor while the connections that are ready to run still add
// records, so that one sync takes them all. The writer is woken by a connection's
// first record, and Go runs a goroutine woken so next, ahead of the connections
// already runnable: each sync took one or two connections' records. strace over 3 s
// of redis-benchmark RL.TOKEN -P 16 at 50 connections, the server on one core: 2,144
// and 2,577 fdatasyncs for 4,140 and 5,016 replies' writes without it, 477 and 347 for
// 11,128 and 8,578 with it. Unstraced, alternating, three rounds: 18k-50k calls/s
// without it, 86k-263k with it, Redis INCR under always 82k-204k.
func (l *Log) gather() {
	for range gatherYields {
		end := l.j.End()
		runtime.Gosched()
		if l.j.End() == end {
			return
		}
	}
}

// failing reports whether the last write or sync failed.
func (l *Log) failing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeErr != nil
}

// flush writes what the journal holds and syncs as the policy says, or at once with
// force. A failure is kept for Status and the writes' refusal (MISCONF), and the
// records are kept to be written by the next try.
func (l *Log) flush(force bool) {
	b, end := l.j.Take(l.spare)
	body := b
	if len(l.pending) > 0 {
		l.pending = append(l.pending, b...)
		body = l.pending
	}
	l.mu.Lock()
	written, durable := l.written, l.durable
	l.mu.Unlock()
	if len(body) > 0 {
		if err := l.write(body); err != nil {
			if len(l.pending) == 0 {
				l.pending = append(l.pending, b...)
			}
			l.spare = b[:0]
			l.fail(fmt.Errorf("write: %w", err))
			return
		}
		l.pending = l.pending[:0]
		written = end
	}
	l.spare = b[:0]
	policy := l.policy()
	// Under always, a wake-up whose records an earlier flush took has nothing to
	// sync: such syncs were a third of all (strace: 5,053 syncs to 3,498 writes at
	// RL.TOKEN -P 16), each delaying the next sync that had records.
	sync := force || policy == FsyncAlways && written > durable ||
		policy == FsyncEverySec && time.Since(l.lastSync) >= retryEvery
	synced := false
	if sync {
		if err := datasync(l.f); err != nil {
			l.fail(fmt.Errorf("fsync: %w", err))
			return
		}
		l.lastSync = time.Now()
		synced = true
	}
	l.mu.Lock()
	if l.writeErr != nil {
		l.log.Info("aof: writes succeed again", "file", l.f.Name())
	}
	l.written, l.writeErr = written, nil
	l.failed.Store(false)
	if synced {
		l.durable = written
		l.synced.Broadcast()
	}
	l.mu.Unlock()
}

// write appends body as one frame at the increment's end. A write that fails part
// way is cut off again, so that the file holds whole frames only.
func (l *Log) write(body []byte) error {
	l.frame = appendFrame(l.frame[:0], body)
	n, err := l.f.WriteAt(l.frame, l.size)
	if err != nil {
		if n > 0 {
			l.f.Truncate(l.size)
		}
		return err
	}
	l.size += int64(n)
	l.curSize.Add(int64(n))
	return nil
}

// fail records err as the log's state.
func (l *Log) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writeErr == nil {
		l.log.Error("aof: writes refused until the log's file can be written again", "file", l.f.Name(), "err", err)
	}
	l.writeErr = err
	l.failed.Store(true)
}

// WaitDurable returns once the journal's bytes up to off are synced, at once under
// appendfsync everysec and no, or when the log closes. A connection calls it with the
// journal's End read after its writes, before it replies (group commit: the writes
// of every connection waiting share one sync). It waits through a failing disk,
// until a write succeeds again.
func (l *Log) WaitDurable(off int64) {
	if off <= 0 || l.policy() != FsyncAlways {
		return
	}
	l.mu.Lock()
	for l.durable < off && !l.closed {
		l.synced.Wait()
	}
	l.mu.Unlock()
}

// Mark returns the journal's End under appendfsync always, for WaitDurable after
// the writes made before it; 0 under everysec and no, where replies do not wait.
func (l *Log) Mark() int64 {
	if l.policy() != FsyncAlways {
		return 0
	}
	return l.j.End()
}

// End is the journal's End: the offset a connection's writes so far lie before.
func (l *Log) End() int64 { return l.j.End() }

// Durable is the journal offset up to which the file's records are synced: a write
// made before End read at some moment survives a crash once Durable reaches it.
// Under appendfsync no it moves only at Close, as Redis's fsynced offset does not
// move without an fsync of its own.
func (l *Log) Durable() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durable
}

// Failing reports, without a lock, whether Err is not nil.
func (l *Log) Failing() bool { return l.failed.Load() }

// Err is the last write's or sync's error, nil if it succeeded: while it is not nil
// the server refuses writes (MISCONF).
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeErr
}

// Close writes and syncs what the journal holds, closes the file and stops logging
// st's writes. Waiters of WaitDurable return.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.stopping {
		l.mu.Unlock()
		return ErrClosed
	}
	l.stopping = true // no rewrite starts from now on
	l.mu.Unlock()
	l.st.SetJournal(nil)
	close(l.stop)
	<-l.done
	l.rewrites.wg.Wait() // a rewrite's base being written: its files are left consistent
	l.mu.Lock()
	l.closed = true
	l.synced.Broadcast()
	err := l.writeErr
	l.mu.Unlock()
	return err
}
