package regions_test

import (
	"net"
	"sync"
	"testing"
	"time"
)

// proxy is a TCP proxy between a region and its home, written for these tests: it
// delays every byte by half a round trip each way (a link between regions), and
// while cut it drops every byte both ways, as a partition does, without closing
// anything. Heal ends the partition and closes the connections that lived through
// it: bytes were lost in their streams, so the clients must dial again, as after a
// real partition long enough for their timeouts. A connection the partition saw
// never forwards a byte again, so that no request slips through between the heal
// and its close.
type proxy struct {
	ln     net.Listener
	target string
	delay  time.Duration // each way: half the round trip

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
	dead  map[net.Conn]bool // the connections a partition saw
}

// startProxy listens on loopback and forwards to target with rtt added to each
// round trip, until t ends.
func startProxy(t testing.TB, target string, rtt time.Duration) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, delay: rtt / 2, dead: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.closeAll()
	})
	return p
}

// addr is where the proxy listens.
func (p *proxy) addr() string { return p.ln.Addr().String() }

// partition drops every byte from now on, both ways, until heal.
func (p *proxy) partition() {
	p.mu.Lock()
	p.cut = true
	for _, c := range p.conns {
		p.dead[c] = true
	}
	p.mu.Unlock()
}

// heal forwards again on new connections, and closes those the partition broke.
func (p *proxy) heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
	p.closeAll()
}

// forwards reports whether bytes read from c go on: not while cut, nor ever on a
// connection the partition saw.
func (p *proxy) forwards(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.cut && !p.dead[c]
}

func (p *proxy) closeAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (p *proxy) serve() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, down, up)
		p.dead[down], p.dead[up] = p.cut, p.cut
		p.mu.Unlock()
		go p.pipe(down, up)
		go p.pipe(up, down)
	}
}

// chunk is bytes read, to be written at at.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies src to dst, each chunk written delay after it was read, or dropped
// while cut; it closes both when either fails.
func (p *proxy) pipe(src, dst net.Conn) {
	ch := make(chan chunk, 1024)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 && p.forwards(src) {
				ch <- chunk{buf[:n], time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at)) // the link's latency, not the test's clock
		if !p.forwards(src) {
			continue // in flight when the link was cut: lost
		}
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	src.Close()
	dst.Close()
	for range ch { // until the reader sees the close
	}
}
