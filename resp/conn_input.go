package resp

import (
	"net"
	"sync"
	"syscall"
	"time"
)

// Why PUBLISH waits for a subscriber's pending input. Redis serves every connection
// from one event loop, in the order their bytes came: once a client's UNSUBSCRIBE is
// in the server's socket, a PUBLISH another client sends after it finds it served
// (pubsub.tcl writes UNSUBSCRIBE, reads no reply and expects PUBLISH to answer 0). A
// subscriber here reads in a goroutine of its own (pubsub.go), which the PUBLISH may
// overtake while the UNSUBSCRIBE waits unread in its socket or in redcon's buffer.
// So PUBLISH lets each subscriber it targets serve what it had received first,
// within publishWait: not longer, since a subscriber may be stuck (a half-sent
// request, a slow client, a PUBLISH of its own waiting for this one).

// publishWait bounds how long one PUBLISH waits for its subscribers' pending input.
const publishWait = 100 * time.Millisecond

// input tells whether a subscriber has requests it received but not yet served.
type input struct {
	raw syscall.RawConn // the socket, for the bytes the kernel holds; nil if unknown
	// plain: its Reads are the socket's (no TLS between), so the bytes they returned
	// can be set against those the kernel received.
	plain bool

	mu sync.Mutex
	// reading: its goroutine waits in the socket's Read, every request read before
	// it served, as redcon reads only when it has no whole request buffered.
	reading bool
	read    uint64        // bytes its Reads returned since the connection opened
	idle    chan struct{} // closed when it next waits in Read, for publishers; nil if none waits
}

// newInput is the input of lc, whose Reads have returned read bytes so far.
func newInput(lc *boundedConn, read uint64) *input {
	_, isTLS := lc.Conn.(interface{ NetConn() net.Conn })
	return &input{raw: socketOf(lc), plain: !isTLS, read: read}
}

// enter marks the start of a socket Read: all received before it is served.
func (in *input) enter() {
	in.mu.Lock()
	in.reading = true
	if in.idle != nil {
		close(in.idle)
		in.idle = nil
	}
	in.mu.Unlock()
}

// leave marks the end of a socket Read that returned n bytes, to be served.
func (in *input) leave(n int) {
	in.mu.Lock()
	in.reading = false
	in.read += uint64(n)
	in.mu.Unlock()
}

// drained reports whether the kernel holds no byte the subscriber has not read;
// in.mu is held. The kernel's count of bytes received, set against those read, is
// exact even while a Read has taken bytes and not yet returned (it counts them
// unread); where that count is not to be had, the bytes the kernel still holds.
func (in *input) drained() bool {
	if in.plain {
		if got, ok := receivedBytes(in.raw); ok && got >= in.read {
			return got == in.read
		}
	}
	return unreadBytes(in.raw) == 0
}

// settle waits until the subscriber has served what it received before now, or
// until the deadline.
func (in *input) settle(deadline time.Time) {
	for {
		in.mu.Lock()
		if in.reading && in.drained() {
			in.mu.Unlock()
			return
		}
		if in.idle == nil {
			in.idle = make(chan struct{})
		}
		idle := in.idle
		in.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-idle:
			t.Stop()
		case <-t.C:
			return
		}
	}
}

// socketOf is the socket under conn (TLS and boundedConn unwrapped), or nil.
func socketOf(conn net.Conn) syscall.RawConn {
	for {
		switch cc := conn.(type) {
		case *boundedConn:
			conn = cc.Conn
			continue
		case interface{ NetConn() net.Conn }: // *tls.Conn
			conn = cc.NetConn()
			continue
		case syscall.Conn:
			raw, err := cc.SyscallConn()
			if err != nil {
				return nil
			}
			return raw
		}
		return nil
	}
}
