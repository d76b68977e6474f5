package replication

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
// at the first replica; n.mu is held.
func (n *Node) ensureBacklogLocked() *store.Backlog {
	if n.backlog == nil {
		n.backlog = store.NewBacklog(n.backlogSize(), n.baseOffset)
		n.store.SetBacklog(n.backlog)
	}
	return n.backlog
}

// backlogSize is Config.BacklogSize or its default.
func (n *Node) backlogSize() int {
	if n.cfg.BacklogSize == 0 {
		return DefaultBacklogSize
	}
	return n.cfg.BacklogSize
}

// Sync serves a replica's RLSYNC replid offset listening-port on conn: the
// connection leaves the caller's loop (redcon.Conn.Detach) and becomes the
// replica's link, fed by goroutines of its own until it fails or Stop. It returns
// ErrReplica on a replica (chained replication) and ErrStopped after Stop, with
// conn left as it was.
func (n *Node) Sync(conn redcon.Conn, id string, reqOff int64, port int) error {
	n.mu.Lock()
	if n.readOnly.Load() {
		n.mu.Unlock()
		return ErrReplica
	}
	if n.stopped {
		n.mu.Unlock()
		return ErrStopped
	}
	bl := n.ensureBacklogLocked()
	replID := n.replID
	full := !bl.Holds(reqOff) || id != replID &&
		!(id == n.replID2 && id != "" && reqOff <= n.secondOffset)
	switch {
	case !full:
		n.syncPartialOK.Add(1)
	case id != "?":
		n.syncPartialErr.Add(1)
		n.syncFull.Add(1)
	default:
		n.syncFull.Add(1)
	}
	start := reqOff
	if full {
		_, start = bl.Offsets() // before the snapshot: see the protocol's comment
	}
	ip, _, _ := net.SplitHostPort(conn.RemoteAddr())
	dc := conn.Detach()
	nc := dc.NetConn()
	nc.SetReadDeadline(time.Time{})
	r := &replicaConn{ip: ip, port: port, conn: nc, gone: make(chan struct{})}
	r.ack.Store(start)
	r.ackAt.Store(time.Now().UnixNano())
	r.fack.Store(-1)
	if n.replicas == nil {
		n.replicas = map[*replicaConn]struct{}{}
	}
	n.replicas[r] = struct{}{}
	n.feeders.Add(2)
	n.mu.Unlock()
	go n.readAcks(r, dc)
	go n.feedReplica(r, bl, replID, full, start)
	return nil
}

// readAcks reads a replica's REPLCONF ACK <offset> [FACK <synced>] until its
// connection closes.
func (n *Node) readAcks(r *replicaConn, dc redcon.DetachedConn) {
	defer n.feeders.Done()
	defer r.drop()
	for {
		r.conn.SetReadDeadline(time.Now().Add(replTimeout))
		cmd, err := dc.ReadCommand()
		if err != nil {
			return
		}
		a := cmd.Args
		if (len(a) != 3 && len(a) != 5) || !bytes.EqualFold(a[0], []byte("replconf")) ||
			!bytes.EqualFold(a[1], []byte("ack")) {
			continue
		}
		off, err := strconv.ParseInt(string(a[2]), 10, 64)
		if err != nil {
			continue
		}
		if len(a) == 5 && bytes.EqualFold(a[3], []byte("fack")) {
			if synced, err := strconv.ParseInt(string(a[4]), 10, 64); err == nil {
				r.fack.Store(synced)
			}
		}
		r.ack.Store(off)
		r.ackAt.Store(time.Now().UnixNano())
	}
}

// feedReplica sends a replica the snapshot if full, then the backlog from start,
// until its connection fails or the backlog no longer holds what it needs.
func (n *Node) feedReplica(r *replicaConn, bl *store.Backlog, replID string, full bool, start int64) {
	defer n.feeders.Done()
	defer func() {
		n.mu.Lock()
		delete(n.replicas, r)
		n.mu.Unlock()
		r.drop()
	}()
	addr := net.JoinHostPort(r.ip, strconv.Itoa(r.port))
	w := bufio.NewWriterSize(r.conn, 256<<10)
	r.conn.SetWriteDeadline(time.Now().Add(replTimeout))
	if full {
		fmt.Fprintf(w, "+FULLRESYNC %s %d\r\n", replID, start)
		cw := &chunkWriter{w: w, conn: r.conn}
		info, err := n.store.WriteSnapshot(cw, n.now())
		if err == nil {
			err = cw.close()
		}
		if err != nil {
			n.log.Warn("replication: full sync to a replica failed", "replica", addr, "err", err)
			return
		}
		n.log.Info("replication: full sync sent", "replica", addr, "keys", info.Keys, "bytes", info.Bytes)
	} else {
		fmt.Fprintf(w, "+CONTINUE %s\r\n", replID)
		if err := w.Flush(); err != nil {
			return
		}
		n.log.Info("replication: partial resync", "replica", addr, "offset", start)
	}
	r.online.Store(true)
	off := start
	buf := make([]byte, frameHead+frameMax)
	ping := time.NewTicker(replPing)
	defer ping.Stop()
	for {
		size, wake, err := bl.ReadAt(off, buf[frameHead:])
		if err != nil {
			n.log.Warn("replication: a replica fell behind the backlog; it will sync again",
				"replica", addr, "offset", off)
			return
		}
		if size == 0 {
			select {
			case <-wake:
				continue
			case <-r.gone:
				return
			case <-ping.C:
			}
		}
		binary.LittleEndian.PutUint32(buf[0:], uint32(size))
		binary.LittleEndian.PutUint64(buf[4:], uint64(off))
		binary.LittleEndian.PutUint64(buf[12:], xxh3.Hash(buf[frameHead:frameHead+size]))
		r.conn.SetWriteDeadline(time.Now().Add(replTimeout))
		if _, err := r.conn.Write(buf[:frameHead+size]); err != nil {
			return
		}
		off += int64(size)
		if size > 0 && size < replBatchBytes {
			// Let effects gather: a frame per write would cost a loaded primary a
			// system call per write and replica, and the replicas as many reads.
			time.Sleep(replBatchDelay)
		}
	}
}
