package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCountCommands(t *testing.T) {
	incr := "*2\r\n$4\r\nINCR\r\n$3\r\nc:1\r\n"
	for _, tc := range []struct {
		in         string
		cmds, used int
	}{
		{"", 0, 0},
		{incr, 1, len(incr)},
		{incr + incr + incr, 3, 3 * len(incr)},
		{incr + incr[:len(incr)-1], 1, len(incr)}, // the second one's last byte to come
		{incr + "*2\r\n$4\r\nIN", 1, len(incr)},
		{"*x\r\n", 0, 0},
		{"PING\r\n", 0, 0}, // inline commands are not counted
	} {
		cmds, used := countCommands([]byte(tc.in))
		if cmds != tc.cmds || used != tc.used {
			t.Errorf("countCommands(%q) = %d, %d; want %d, %d", tc.in, cmds, used, tc.cmds, tc.used)
		}
	}
}

// TestGroupCommit has pipelining clients call each model and checks that every
// command is answered ":1" and has its record in the file once answered.
func TestGroupCommit(t *testing.T) {
	const clients, rounds, pipeline = 8, 20, 5
	for _, model := range []string{"conns", "writer", "loop"} {
		t.Run(model, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- serveGroupCommit(ctx, model, ln, f) }()
			errs := make(chan error, clients)
			for i := range clients {
				go func() { errs <- callPipelined(ln.Addr().String(), i, rounds, pipeline, path) }()
			}
			for range clients {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			cancel()
			select {
			case err := <-served:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the server did not stop")
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(clients * rounds * pipeline * recordSize); st.Size() != want {
				t.Fatalf("log holds %d bytes, want %d", st.Size(), want)
			}
		})
	}
}

// callPipelined sends rounds of pipeline INCRs and reads their answers, checking after
// each round that the file holds at least the records of the answers read so far by
// this client.
func callPipelined(addr string, id, rounds, pipeline int, path string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)
	req := strings.Repeat(fmt.Sprintf("*2\r\n$4\r\nINCR\r\n$3\r\nc:%d\r\n", id%10), pipeline)
	for round := range rounds {
		if _, err := io.WriteString(c, req); err != nil {
			return err
		}
		for range pipeline {
			line, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			if line != ":1\r\n" {
				return fmt.Errorf("answer %q, want \":1\\r\\n\"", line)
			}
		}
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		if min := int64((round + 1) * pipeline * recordSize); st.Size() < min {
			return fmt.Errorf("after %d answers the log holds %d bytes, want at least %d", (round+1)*pipeline, st.Size(), min)
		}
	}
	return nil
}
