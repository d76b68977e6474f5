package resp

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
// syncs, and applying the primary's frames (the protocol is described in replication.go).

// startLink starts a link's goroutine; repl.mu is held.
func (s *Server) startLink(host string, port int) *link {
	l := &link{host: host, port: port, stop: make(chan struct{}), done: make(chan struct{})}
	l.state.Store("connect")
	l.downSince.Store(time.Now().UnixNano())
	go s.runLink(l)
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
func (s *Server) runLink(l *link) {
	defer close(l.done)
	defer s.repl.loading.Store(false)
	addr := net.JoinHostPort(l.host, strconv.Itoa(l.port))
	wait := replRetryFirst
	for {
		wasUp, err := s.syncLink(l, addr)
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
		s.log.Warn("replication link down", "primary", addr, "err", err, "retry_in", wait)
		select {
		case <-l.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, replRetryLast)
	}
}

// syncLink runs one connection of l: it returns why it ended, and whether it had come up.
func (s *Server) syncLink(l *link, addr string) (bool, error) {
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
	if s.cfg.MasterAuth != "" {
		if _, err := conn.Write(respCommand("AUTH", s.cfg.MasterAuth)); err != nil {
			return false, err
		}
		line, err := readLine(br)
		if err != nil {
			return false, err
		}
		if line != "+OK" {
			return false, fmt.Errorf("AUTH with -masterauth refused by the primary: %s", line)
		}
	}
	s.applied.mu.Lock()
	replID, offset := s.applied.replID, s.applied.offset
	s.applied.mu.Unlock()
	if replID == "" {
		replID, offset = "?", -1
	}
	port := "0"
	if a := s.Addr(); a != nil {
		_, port, _ = net.SplitHostPort(a.String())
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
		format, err := s.fullSync(l, conn, br)
		if err != nil {
			return false, fmt.Errorf("full sync from %s: %w", addr, err)
		}
		replID, offset = fields[1], off
		s.applied.mu.Lock()
		s.applied.replID, s.applied.offset, s.applied.format = replID, offset, format
		s.applied.mu.Unlock()
	case len(fields) == 2 && fields[0] == "+CONTINUE":
		// The id is the one asked for, or a promoted sibling's new one: its offsets
		// continue the same stream.
		s.applied.mu.Lock()
		s.applied.replID = fields[1]
		s.applied.mu.Unlock()
		s.log.Info("replication: partial resync", "primary", addr, "offset", offset)
	default:
		return false, fmt.Errorf("%s answered %q to RLSYNC: not an rlserver primary", addr, line)
	}
	s.repl.mu.Lock()
	h := s.repl.history
	if h == nil {
		h = store.NewBacklog(s.backlogSize(), offset)
	} else if _, end := h.Offsets(); end != offset { // a full sync: a new history
		h = store.NewBacklog(s.backlogSize(), offset)
	}
	s.repl.history = h
	s.repl.mu.Unlock()
	l.up.Store(true)
	l.downSince.Store(0)
	l.state.Store("connected")
	l.lastIO.Store(time.Now().UnixNano())
	return true, s.applyFrames(l, conn, br, offset, h)
}

// fullSync loads the primary's snapshot into the emptied store, refusing commands
// meanwhile (LOADING), and returns its format version. On error the store is left
// empty: never half a snapshot.
func (s *Server) fullSync(l *link, conn net.Conn, br *bufio.Reader) (uint32, error) {
	l.state.Store("sync")
	s.repl.loading.Store(true)
	defer s.repl.loading.Store(false)
	s.store.Flush()
	begin := time.Now()
	info, err := s.store.ReadSnapshot(&chunkReader{r: br, conn: conn}, s.clock.now())
	if err != nil {
		return 0, err
	}
	s.log.Info("replication: full sync loaded", "keys", info.Keys, "bytes", info.Bytes, "took", time.Since(begin))
	return info.Version, nil
}

// applyFrames applies the primary's frames from offset on until the link fails,
// acknowledging what it applied from another goroutine.
func (s *Server) applyFrames(l *link, conn net.Conn, br *bufio.Reader, offset int64, history *store.Backlog) error {
	acked := make(chan struct{})
	stopAck := make(chan struct{})
	var applied atomic.Int64
	applied.Store(offset)
	go func() {
		defer close(acked)
		last, lastAt := int64(-1), time.Time{}
		t := time.NewTicker(replAckEvery)
		defer t.Stop()
		for {
			select {
			case <-stopAck:
				return
			case <-t.C:
			}
			if off := applied.Load(); off != last || time.Since(lastAt) >= time.Second {
				conn.SetWriteDeadline(time.Now().Add(replTimeout))
				if _, err := conn.Write(respCommand("REPLCONF", "ACK", strconv.FormatInt(off, 10))); err != nil {
					conn.Close()
					return
				}
				last, lastAt = off, time.Now()
			}
		}
	}()
	defer func() { close(stopAck); <-acked }()
	s.applied.mu.Lock()
	format := s.applied.format
	s.applied.mu.Unlock()
	ap := s.store.NewApplier(format)
	ap.SetLog(history)
	received := offset
	var head [frameHead]byte
	var body []byte
	for {
		conn.SetReadDeadline(time.Now().Add(replTimeout))
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return err
		}
		n := binary.LittleEndian.Uint32(head[:])
		at := int64(binary.LittleEndian.Uint64(head[4:]))
		if n > frameMax {
			return fmt.Errorf("corrupt stream: a frame of %d bytes at offset %d", n, at)
		}
		if cap(body) < int(n) {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return err
		}
		l.lastIO.Store(time.Now().UnixNano())
		if n == 0 {
			continue // heartbeat
		}
		if xxh3.Hash(body) != binary.LittleEndian.Uint64(head[12:]) {
			return fmt.Errorf("corrupt stream: checksum mismatch in the frame at offset %d", at)
		}
		if at != received {
			return fmt.Errorf("corrupt stream: a frame at offset %d, expected %d", at, received)
		}
		done, err := ap.Apply(body, s.clock.now())
		received += int64(n)
		s.applied.mu.Lock()
		s.applied.offset += int64(done)
		off := s.applied.offset
		s.applied.mu.Unlock()
		applied.Store(off)
		if err != nil {
			return err
		}
	}
}
