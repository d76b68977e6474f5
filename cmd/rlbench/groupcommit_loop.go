package main

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// loopConn is a connection of the loop model: the bytes of an incomplete request and
// the answers waiting for the next sync.
type loopConn struct {
	in, out []byte
}

// serveLoop is the loop model (runGroupCommit): Redis's event loop on one locked
// thread. Each turn reads every readable connection, writes and syncs the records of
// the commands read, then writes their answers, as Redis's beforeSleep does under
// appendfsync always.
func serveLoop(ctx context.Context, ln net.Listener, f *os.File) error {
	runtime.LockOSThread()
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	defer lf.Close()
	lfd := int(lf.Fd())
	if err := unix.SetNonblock(lfd, true); err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(ep)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, lfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lfd)}); err != nil {
		return err
	}
	conns := map[int]*loopConn{}
	defer func() {
		for fd := range conns {
			unix.Close(fd)
		}
	}()
	events := make([]unix.EpollEvent, 128)
	in := make([]byte, 16<<10)
	var records []byte
	var answered []int
	for ctx.Err() == nil {
		n, err := unix.EpollWait(ep, events, 100)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			if fd == lfd {
				acceptAll(ep, lfd, conns)
				continue
			}
			c := conns[fd]
			m, err := unix.Read(fd, in)
			if m <= 0 {
				if !errors.Is(err, unix.EAGAIN) {
					unix.Close(fd) // also leaves the epoll set
					delete(conns, fd)
				}
				continue
			}
			c.in = append(c.in, in[:m]...)
			cmds, used := countCommands(c.in)
			c.in = append(c.in[:0], c.in[used:]...)
			if cmds == 0 {
				continue
			}
			records = appendRecords(records, cmds)
			c.out = appendAnswers(c.out, cmds)
			answered = append(answered, fd)
		}
		if len(records) > 0 {
			if _, err := f.Write(records); err != nil {
				return err
			}
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				return err
			}
			records = records[:0]
		}
		for _, fd := range answered {
			if c := conns[fd]; c != nil {
				unix.Write(fd, c.out) // a short write is not retried: answers are a few bytes
				c.out = c.out[:0]
			}
		}
		answered = answered[:0]
	}
	return nil
}

// acceptAll accepts every pending connection on lfd into ep and conns.
func acceptAll(ep, lfd int, conns map[int]*loopConn) {
	for {
		fd, _, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return
		}
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		if unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}) != nil {
			unix.Close(fd)
			continue
		}
		conns[fd] = &loopConn{}
	}
}
