package main

import (
	"fmt"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/aof"
	"github.com/rlserver/rlserver/store"
)

// writeTestLog writes a log in dir of n keys, one frame each.
func writeTestLog(t *testing.T, dir string, n int) {
	t.Helper()
	st, err := store.New(store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const now = int64(1_700_000_000_000_000)
	l, err := aof.Open(aof.Config{Dir: dir, Fsync: aof.FsyncAlways}, st, func() int64 { return now })
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		st.Do([]byte(fmt.Sprint("k", i)), algo.Request{Kind: algo.KindFixed, Limit: 5, Window: 60e6, Cost: 1}, now)
		l.WaitDurable(l.End())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
