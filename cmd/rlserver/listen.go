package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/rlserver/rlserver/resp"
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

// listen opens the listeners of -addr, or of -bind and -port (redis.conf's port and
// bind, each address on the port, -addr's host or port where one is not given). An
// address with a leading '-' is optional, as in Redis: one that cannot be listened on
// is skipped; any other failure closes what was opened.
func listen(opts options) ([]net.Listener, error) {
	host, port, err := net.SplitHostPort(opts.addr)
	if err != nil {
		return nil, err
	}
	if opts.port != 0 {
		port = strconv.Itoa(opts.port)
	}
	hosts := strings.Fields(opts.bind)
	if len(hosts) == 0 {
		hosts = []string{host}
	}
	var lns []net.Listener
	for _, h := range hosts {
		h, optional := strings.CutPrefix(h, "-")
		ln, err := net.Listen("tcp", net.JoinHostPort(h, port))
		switch {
		case err == nil:
			lns = append(lns, ln)
		case !optional:
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
	}
	if len(lns) == 0 {
		return nil, fmt.Errorf("no address of -bind %q could be listened on", opts.bind)
	}
	return lns, nil
}

func serve(ctx context.Context, srv *resp.Server, ln net.Listener, logger *slog.Logger) error {
	logger.Info("rlserver listening", "addr", ln.Addr().String(), "version", resp.Version)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		logger.Info("signal received, shutting down")
		srv.Close()
		return <-done
	case err := <-done:
		logger.Info("server stopped")
		return err
	}
}
