package main

import (
	"net"
	"sync"
)

// multiListener accepts on several listeners as one, so that one Serve serves every
// address of -bind. Its Addr is the first listener's.
type multiListener struct {
	lns   []net.Listener
	conns chan accepted
	done  chan struct{}
	once  sync.Once
}

// accepted is one listener's Accept result.
type accepted struct {
	conn net.Conn
	err  error
}

func newMultiListener(lns []net.Listener) *multiListener {
	m := &multiListener{lns: lns, conns: make(chan accepted), done: make(chan struct{})}
	for _, ln := range lns {
		go func() {
			for {
				c, err := ln.Accept()
				select {
				case m.conns <- accepted{c, err}:
				case <-m.done:
					if c != nil {
						c.Close()
					}
					return
				}
				if err != nil {
					return // a closed listener: the first error ends Serve, which closes them all
				}
			}
		}()
	}
	return m
}

func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case a := <-m.conns:
		return a.conn, a.err
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *multiListener) Close() error {
	var first error
	m.once.Do(func() {
		close(m.done)
		for _, ln := range m.lns {
			if err := ln.Close(); err != nil && first == nil {
				first = err
			}
		}
	})
	return first
}

func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
