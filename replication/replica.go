package replication

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/store"
	"github.com/zeebo/xxh3"
)

// The replica side of replication: the link to the primary, full and partial
// syncs, and applying the primary's frames (the protocol is described in the package comment).

// startLink starts a link's goroutine; n.mu is held.
func (n *Node) startLink(host string, port int) *link {
	l := &link{host: host, port: port, stop: make(chan struct{}), done: make(chan struct{})}
	l.state.Store("connect")
	l.downSince.Store(time.Now().UnixNano())
	go n.runLink(l)
	return l
}

// stopLink ends l and waits for its goroutine.
func stopLink(l *link) {
	close(l.stop)
	l.mu.Lock()
	if l.conn != nil {
		l.conn.Close()
	}
	l.mu.Unlock()
	<-l.done
}

// runLink keeps l up until it is stopped: connect, sync, apply; on failure, log why
// and try again after a backoff that doubles up to replRetryLast (a link that came
// up starts over from replRetryFirst).
func (n *Node) runLink(l *link) {
	defer close(l.done)
	defer n.loading.Store(false)
	addr := net.JoinHostPort(l.host, strconv.Itoa(l.port))
	wait := replRetryFirst
	for {
		wasUp, err := n.syncLink(l, addr)
		if l.up.Swap(false) || l.downSince.Load() == 0 {
			l.downSince.Store(time.Now().UnixNano())
		}
		l.state.Store("connect")
		select {
		case <-l.stop:
			return
		default:
		}
		if wasUp {
			wait = replRetryFirst
		}
		n.log.Warn("replication link down", "primary", addr, "err", err, "retry_in", wait)
		select {
		case <-l.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, replRetryLast)
	}
}

// syncLink runs one connection of l: it returns why it ended, and whether it had come up.
func (n *Node) syncLink(l *link, addr string) (bool, error) {
	l.state.Store("connecting")
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false, err
	}
	l.mu.Lock()
	select {
	case <-l.stop:
		l.mu.Unlock()
		conn.Close()
		return false, errors.New("stopped")
	default:
	}
	l.conn = conn
	l.mu.Unlock()
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 256<<10)
	conn.SetDeadline(time.Now().Add(replTimeout))
	if n.cfg.MasterAuth != "" {
		auth := []string{"AUTH", n.cfg.MasterAuth}
		if n.cfg.MasterUser != "" { // as Redis: masteruser goes with masterauth only
			auth = []string{"AUTH", n.cfg.MasterUser, n.cfg.MasterAuth}
		}
		if _, err := conn.Write(respCommand(auth...)); err != nil {
			return false, err
		}
		line, err := readLine(br)
		if err != nil {
			return false, err
		}
		if line != "+OK" {
			return false, fmt.Errorf("AUTH with -masteruser/-masterauth refused by the primary: %s", line)
		}
	}
	n.applied.mu.Lock()
	replID, offset := n.applied.replID, n.applied.offset
	n.applied.mu.Unlock()
	if replID == "" {
		replID, offset = "?", -1
	}
	port := "0"
	if n.cfg.ListenPort != nil {
		port = strconv.Itoa(n.cfg.ListenPort())
	}
	if _, err := conn.Write(respCommand("RLSYNC", replID, strconv.FormatInt(offset, 10), port)); err != nil {
		return false, err
	}
	line, err := readLine(br)
	if err != nil {
		return false, err
	}
	fields := strings.Fields(line)
	switch {
	case strings.HasPrefix(line, "-ERR unknown command"):
		return false, fmt.Errorf("%s is not an rlserver (a plain Redis?): it answered %q to RLSYNC", addr, line)
	case strings.HasPrefix(line, "-"):
		return false, fmt.Errorf("the primary refused to sync: %s", line)
	case len(fields) == 3 && fields[0] == "+FULLRESYNC":
		off, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil || off < 0 {
			return false, fmt.Errorf("bad FULLRESYNC offset in %q", line)
		}
		format, err := n.fullSync(l, conn, br)
		if err != nil {
			return false, fmt.Errorf("full sync from %s: %w", addr, err)
		}
		replID, offset = fields[1], off
		n.applied.mu.Lock()
		n.applied.replID, n.applied.offset, n.applied.format = replID, offset, format
		n.applied.mu.Unlock()
		if n.cfg.OnApplied != nil {
			n.cfg.OnApplied(Position{ReplID: replID, Offset: offset, Format: format})
		}
	case len(fields) == 2 && fields[0] == "+CONTINUE":
		// The id is the one asked for, or a promoted sibling's new one: its offsets
		// continue the same stream.
		n.applied.mu.Lock()
		n.applied.replID = fields[1]
		n.applied.mu.Unlock()
		n.log.Info("replication: partial resync", "primary", addr, "offset", offset)
	default:
		return false, fmt.Errorf("%s answered %q to RLSYNC: not an rlserver primary", addr, line)
	}
	n.mu.Lock()
	h := n.history
	if h == nil {
		h = store.NewBacklog(n.backlogSize(), offset)
	} else if _, end := h.Offsets(); end != offset { // a full sync: a new history
		h = store.NewBacklog(n.backlogSize(), offset)
	}
	n.history = h
	n.mu.Unlock()
	l.up.Store(true)
	l.downSince.Store(0)
	l.state.Store("connected")
	l.lastIO.Store(time.Now().UnixNano())
	return true, n.applyFrames(l, conn, br, offset, h)
}

// fullSync loads the primary's snapshot into the emptied store, refusing commands
// meanwhile (LOADING), and returns its format version. On error the store is left
// empty: never half a snapshot.
func (n *Node) fullSync(l *link, conn net.Conn, br *bufio.Reader) (uint32, error) {
	l.state.Store("sync")
	n.loading.Store(true)
	defer n.loading.Store(false)
	if n.cfg.BeforeFullSync != nil {
		n.cfg.BeforeFullSync()
	}
	n.store.Flush()
	begin := time.Now()
	info, err := n.store.ReadSnapshot(&chunkReader{r: br, conn: conn}, n.now())
	if err != nil {
		return 0, err
	}
	n.log.Info("replication: full sync loaded", "keys", info.Keys, "bytes", info.Bytes, "took", time.Since(begin))
	if n.cfg.OnFullSync != nil {
		n.cfg.OnFullSync()
	}
	return info.Version, nil
}

// applyFrames applies the primary's frames from offset on until the link fails,
// acknowledging what it applied from another goroutine.
func (n *Node) applyFrames(l *link, conn net.Conn, br *bufio.Reader, offset int64, history *store.Backlog) error {
	acked := make(chan struct{})
	stopAck := make(chan struct{})
	var applied atomic.Int64
	applied.Store(offset)
	go func() {
		defer close(acked)
		last, lastSynced, lastAt := int64(-1), int64(-1), time.Time{}
		t := time.NewTicker(replAckEvery)
		defer t.Stop()
		for {
			select {
			case <-stopAck:
				return
			case <-t.C:
			}
			off, synced, hasLog := applied.Load(), int64(-1), false
			if n.cfg.Synced != nil {
				synced, hasLog = n.cfg.Synced()
			}
			if off == last && synced == lastSynced && time.Since(lastAt) < time.Second {
				continue
			}
			ack := []string{"REPLCONF", "ACK", strconv.FormatInt(off, 10)}
			if hasLog {
				ack = append(ack, "FACK", strconv.FormatInt(synced, 10))
			}
			conn.SetWriteDeadline(time.Now().Add(replTimeout))
			if _, err := conn.Write(respCommand(ack...)); err != nil {
				conn.Close()
				return
			}
			last, lastSynced, lastAt = off, synced, time.Now()
		}
	}()
	defer func() { close(stopAck); <-acked }()
	n.applied.mu.Lock()
	format := n.applied.format
	n.applied.mu.Unlock()
	ap := n.store.NewApplier(format)
	ap.SetLog(history)
	received := offset
	var head [frameHead]byte
	var body []byte
	for {
		conn.SetReadDeadline(time.Now().Add(replTimeout))
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return err
		}
		size := binary.LittleEndian.Uint32(head[:])
		at := int64(binary.LittleEndian.Uint64(head[4:]))
		if size > frameMax {
			return fmt.Errorf("corrupt stream: a frame of %d bytes at offset %d", size, at)
		}
		if cap(body) < int(size) {
			body = make([]byte, size)
		}
		body = body[:size]
		if _, err := io.ReadFull(br, body); err != nil {
			return err
		}
		l.lastIO.Store(time.Now().UnixNano())
		if size == 0 {
			continue // heartbeat
		}
		if xxh3.Hash(body) != binary.LittleEndian.Uint64(head[12:]) {
			return fmt.Errorf("corrupt stream: checksum mismatch in the frame at offset %d", at)
		}
		if at != received {
			return fmt.Errorf("corrupt stream: a frame at offset %d, expected %d", at, received)
		}
		done, err := ap.Apply(body, n.now())
		received += int64(size)
		n.applied.mu.Lock()
		n.applied.offset += int64(done)
		off := n.applied.offset
		pos := Position{ReplID: n.applied.replID, Offset: off, Format: format}
		n.applied.mu.Unlock()
		applied.Store(off)
		if err != nil {
			return err
		}
		if n.cfg.OnApplied != nil && done > 0 {
			n.cfg.OnApplied(pos)
		}
	}
}
