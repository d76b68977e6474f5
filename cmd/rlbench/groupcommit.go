package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// groupcommit serves the least a RESP server does under appendfsync always: it
// counts the commands of each request, appends one record a command to a file, makes
// the file durable (fdatasync), and only then answers each command ":1". It does no
// command's work, so what it reaches against redis-server's INCR under appendfsync
// always, on the same disk and core, is a ceiling for any server of its model:
// scripts/bench-persistence.sh measures the three.
//
//	rlbench groupcommit [-model conns|writer|loop] [-addr 127.0.0.1:16390] -file PATH
//
// The models:
//   - conns: a goroutine a connection, which waits for the sync covering its records
//     and writes its own replies (redcon's model, and so rlserver's);
//   - writer: a goroutine a connection reads and appends; the syncing goroutine writes
//     every reply after its sync, as Redis's one thread does;
//   - loop: one thread and epoll, Redis's own model: read every ready connection,
//     write and sync the records, then write the replies.
//
// It serves until interrupted.
func runGroupCommit(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("rlbench groupcommit", flag.ContinueOnError)
	model := fs.String("model", "conns", "conns, writer or loop")
	addr := fs.String("addr", "127.0.0.1:16390", "listen `address`")
	path := fs.String("file", "", "the log `file`, created or truncated (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" {
		return errors.New("groupcommit: -file is required")
	}
	if *model != "conns" && *model != "writer" && *model != "loop" {
		return fmt.Errorf("groupcommit: unknown -model %q: want conns, writer or loop", *model)
	}
	f, err := os.OpenFile(*path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "groupcommit %s on %s, log %s\n", *model, ln.Addr(), *path)
	return serveGroupCommit(ctx, *model, ln, f)
}

// recordSize is the bytes logged a command: rlserver's log holds 43.1 bytes a
// RL.TOKEN decision (docs/persistence.md).
const recordSize = 43

// serveGroupCommit serves ln in model, logging to f, until ctx ends.
func serveGroupCommit(ctx context.Context, model string, ln net.Listener, f *os.File) error {
	if model == "loop" {
		defer ln.Close()
		return serveLoop(ctx, ln, f)
	}
	g := &groupLog{f: f, wake: make(chan struct{}, 1), repliesBySyncer: model == "writer"}
	g.synced = sync.NewCond(&g.mu)
	go g.run(ctx)
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go g.serve(c)
	}
}

// groupLog is the conns and writer models' shared log: connections append records,
// one goroutine writes and syncs them and releases the replies they cover.
type groupLog struct {
	f               *os.File
	wake            chan struct{} // has a value after an append
	repliesBySyncer bool          // the writer model

	mu      sync.Mutex
	synced  *sync.Cond
	buf     []byte  // records appended since the last sync started
	end     int64   // bytes ever appended
	durable int64   // bytes ever synced
	replies []reply // the writer model: replies the next sync releases
}

// reply is a connection's answers to one request, waiting for its records' sync.
type reply struct {
	c net.Conn
	b []byte
}

// add appends n records and, in the writer model, r; it returns the End after them.
func (g *groupLog) add(n int, r reply) int64 {
	g.mu.Lock()
	g.buf = appendRecords(g.buf, n)
	g.end += int64(n * recordSize)
	if g.repliesBySyncer {
		g.replies = append(g.replies, r)
	}
	end := g.end
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
	return end
}

// record is what groupcommit logs for a command: recordSize bytes.
var record = bytes.Repeat([]byte{'r'}, recordSize)

// appendRecords appends n records to b.
func appendRecords(b []byte, n int) []byte {
	for range n {
		b = append(b, record...)
	}
	return b
}

// appendAnswers appends n answers ":1" to b.
func appendAnswers(b []byte, n int) []byte {
	for range n {
		b = append(b, ":1\r\n"...)
	}
	return b
}

// run writes and syncs what was appended at each wake-up, after yielding while
// appends keep coming (at most 4 turns, as rlserver's writer gathers).
func (g *groupLog) run(ctx context.Context) {
	var spare []byte
	var released []reply
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.wake:
		}
		for range 4 {
			g.mu.Lock()
			end := g.end
			g.mu.Unlock()
			runtime.Gosched()
			g.mu.Lock()
			same := g.end == end
			g.mu.Unlock()
			if same {
				break
			}
		}
		g.mu.Lock()
		b, end := g.buf, g.end
		g.buf = spare[:0]
		released, g.replies = g.replies, released[:0]
		g.mu.Unlock()
		if len(b) > 0 {
			if _, err := g.f.Write(b); err != nil {
				return // the connections wait for ever: the measurement is void
			}
			if err := unix.Fdatasync(int(g.f.Fd())); err != nil {
				return
			}
		}
		spare = b
		g.mu.Lock()
		g.durable = end
		g.synced.Broadcast()
		g.mu.Unlock()
		for _, r := range released {
			r.c.Write(r.b)
		}
		clear(released)
	}
}

// serve reads c's requests, appends a record a command, and answers each ":1" once
// the records are durable: itself in the conns model, through the syncer in the
// writer model.
func (g *groupLog) serve(c net.Conn) {
	defer c.Close()
	var pending []byte
	in := make([]byte, 16<<10)
	for {
		n, err := c.Read(in)
		if err != nil {
			return
		}
		pending = append(pending, in[:n]...)
		cmds, used := countCommands(pending)
		if cmds == 0 {
			continue
		}
		pending = append(pending[:0], pending[used:]...)
		answers := appendAnswers(nil, cmds) // the writer model keeps it until the sync
		end := g.add(cmds, reply{c, answers})
		if g.repliesBySyncer {
			continue
		}
		g.mu.Lock()
		for g.durable < end {
			g.synced.Wait()
		}
		g.mu.Unlock()
		if _, err := c.Write(answers); err != nil {
			return
		}
	}
}

// countCommands returns how many whole RESP arrays of bulk strings b starts with and
// the bytes they take; it stops at the first incomplete or malformed one.
func countCommands(b []byte) (cmds, used int) {
	for {
		i, ok := skipCommand(b[used:])
		if !ok {
			return cmds, used
		}
		cmds++
		used += i
	}
}

// skipCommand returns the length of the array of bulk strings b starts with.
func skipCommand(b []byte) (int, bool) {
	args, i, ok := lengthLine(b, 0, '*')
	if !ok {
		return 0, false
	}
	for range args {
		n, next, ok := lengthLine(b, i, '$')
		if !ok || n < 0 || next+n+2 > len(b) {
			return 0, false
		}
		i = next + n + 2
	}
	return i, true
}

// lengthLine parses the line "<kind><n>\r\n" at b[i:], returning n and the offset after it.
func lengthLine(b []byte, i int, kind byte) (n, next int, ok bool) {
	if i >= len(b) || b[i] != kind {
		return 0, 0, false
	}
	eol := bytes.Index(b[i:], []byte("\r\n"))
	if eol < 0 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(string(b[i+1 : i+eol]))
	if err != nil {
		return 0, 0, false
	}
	return n, i + eol + 2, true
}
