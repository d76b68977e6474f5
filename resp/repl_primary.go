package resp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/store"
	"github.com/tidwall/redcon"
	"github.com/zeebo/xxh3"
)

// The primary side of replication: the backlog, RLSYNC, replicas' acks and their feeds.

// ensureBacklogLocked returns the backlog, creating it and handing it to the store
// at the first replica; repl.mu is held.
func (s *Server) ensureBacklogLocked() *store.Backlog {
	if s.repl.backlog == nil {
		s.repl.backlog = store.NewBacklog(s.backlogSize(), s.repl.baseOffset)
		s.store.SetBacklog(s.repl.backlog)
	}
	return s.repl.backlog
}

// backlogSize is Config.ReplBacklogSize or its default.
func (s *Server) backlogSize() int {
	if s.cfg.ReplBacklogSize == 0 {
		return DefaultReplBacklogSize
	}
	return s.cfg.ReplBacklogSize
}

// cmdRLSync serves RLSYNC replid offset listening-port: the connection becomes a
// replica's link, fed by its own goroutine.
func cmdRLSync(s *Server, c *client, args [][]byte, _ int64) {
	port, ok := parseInt(args[3])
	reqOff, ok2 := parseInt(args[2])
	if !ok || !ok2 || port < 0 || port > 65535 {
		c.writeError(errSyntax)
		return
	}
	s.repl.mu.Lock()
	if s.repl.readOnly.Load() {
		s.repl.mu.Unlock()
		c.writeError(errChained)
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		s.repl.mu.Unlock()
		return
	}
	bl := s.ensureBacklogLocked()
	replID := s.repl.replID
	id := string(args[1])
	full := !bl.Holds(reqOff) || id != replID &&
		!(id == s.repl.replID2 && id != "" && reqOff <= s.repl.secondOffset)
	switch {
	case !full:
		s.repl.syncPartialOK.Add(1)
	case string(args[1]) != "?":
		s.repl.syncPartialErr.Add(1)
		s.repl.syncFull.Add(1)
	default:
		s.repl.syncFull.Add(1)
	}
	start := reqOff
	if full {
		_, start = bl.Offsets() // before the snapshot: see the protocol's comment
	}
	dc := c.conn.Detach()
	nc := dc.NetConn()
	nc.SetReadDeadline(time.Time{})
	ip, _, _ := net.SplitHostPort(c.addr)
	r := &replicaConn{ip: ip, port: int(port), conn: nc, gone: make(chan struct{})}
	r.ack.Store(start)
	r.ackAt.Store(time.Now().UnixNano())
	if s.repl.replicas == nil {
		s.repl.replicas = map[*replicaConn]struct{}{}
	}
	s.repl.replicas[r] = struct{}{}
	s.repl.feeders.Add(2)
	s.repl.mu.Unlock()
	go s.readAcks(r, dc)
	go s.feedReplica(r, bl, replID, full, start)
}

// readAcks reads a replica's REPLCONF ACKs until its connection closes.
func (s *Server) readAcks(r *replicaConn, dc redcon.DetachedConn) {
	defer s.repl.feeders.Done()
	defer r.drop()
	for {
		r.conn.SetReadDeadline(time.Now().Add(replTimeout))
		cmd, err := dc.ReadCommand()
		if err != nil {
			return
		}
		if len(cmd.Args) == 3 && bytes.EqualFold(cmd.Args[0], []byte("replconf")) &&
			bytes.EqualFold(cmd.Args[1], []byte("ack")) {
			if off, ok := parseInt(cmd.Args[2]); ok {
				r.ack.Store(off)
				r.ackAt.Store(time.Now().UnixNano())
			}
		}
	}
}

// feedReplica sends a replica the snapshot if full, then the backlog from start,
// until its connection fails or the backlog no longer holds what it needs.
func (s *Server) feedReplica(r *replicaConn, bl *store.Backlog, replID string, full bool, start int64) {
	defer s.repl.feeders.Done()
	defer func() {
		s.repl.mu.Lock()
		delete(s.repl.replicas, r)
		s.repl.mu.Unlock()
		r.drop()
	}()
	addr := net.JoinHostPort(r.ip, strconv.Itoa(r.port))
	w := bufio.NewWriterSize(r.conn, 256<<10)
	r.conn.SetWriteDeadline(time.Now().Add(replTimeout))
	if full {
		fmt.Fprintf(w, "+FULLRESYNC %s %d\r\n", replID, start)
		cw := &chunkWriter{w: w, conn: r.conn}
		info, err := s.store.WriteSnapshot(cw, s.clock.now())
		if err == nil {
			err = cw.close()
		}
		if err != nil {
			s.log.Warn("replication: full sync to a replica failed", "replica", addr, "err", err)
			return
		}
		s.log.Info("replication: full sync sent", "replica", addr, "keys", info.Keys, "bytes", info.Bytes)
	} else {
		fmt.Fprintf(w, "+CONTINUE %s\r\n", replID)
		if err := w.Flush(); err != nil {
			return
		}
		s.log.Info("replication: partial resync", "replica", addr, "offset", start)
	}
	r.online.Store(true)
	off := start
	buf := make([]byte, frameHead+frameMax)
	ping := time.NewTicker(replPing)
	defer ping.Stop()
	for {
		n, wake, err := bl.ReadAt(off, buf[frameHead:])
		if err != nil {
			s.log.Warn("replication: a replica fell behind the backlog; it will sync again",
				"replica", addr, "offset", off)
			return
		}
		if n == 0 {
			select {
			case <-wake:
				continue
			case <-r.gone:
				return
			case <-ping.C:
			}
		}
		binary.LittleEndian.PutUint32(buf[0:], uint32(n))
		binary.LittleEndian.PutUint64(buf[4:], uint64(off))
		binary.LittleEndian.PutUint64(buf[12:], xxh3.Hash(buf[frameHead:frameHead+n]))
		r.conn.SetWriteDeadline(time.Now().Add(replTimeout))
		if _, err := r.conn.Write(buf[:frameHead+n]); err != nil {
			return
		}
		off += int64(n)
		if n > 0 && n < replBatchBytes {
			// Let effects gather: a frame per write would cost a loaded primary a
			// system call per write and replica, and the replicas as many reads.
			time.Sleep(replBatchDelay)
		}
	}
}
