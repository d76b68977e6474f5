package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/resp"
)

// memoryFlag is -maxmemory: a byte count with Redis's suffixes.
type memoryFlag int64

func (m *memoryFlag) String() string { return strconv.FormatInt(int64(*m), 10) }

func (m *memoryFlag) Set(s string) error {
	n, err := resp.ParseMemory(s)
	*m = memoryFlag(n)
	return err
}

// intMemoryFlag is -repl-backlog-size: a byte count with Redis's suffixes.
type intMemoryFlag int

func (m *intMemoryFlag) String() string {
	if *m == 0 {
		return strconv.Itoa(resp.DefaultReplBacklogSize)
	}
	return strconv.Itoa(int(*m))
}

func (m *intMemoryFlag) Set(s string) error {
	n, err := resp.ParseMemory(s)
	if err == nil && (n < 1<<10 || n > 1<<40) {
		err = fmt.Errorf("must be between 1kb and 1tb, got %d", n)
	}
	*m = intMemoryFlag(n)
	return err
}

// levelFlag is -loglevel: slog's level names or Redis's.
type levelFlag slog.Level

func (l *levelFlag) String() string { return strings.ToLower(slog.Level(*l).String()) }

func (l *levelFlag) Set(s string) error {
	v, err := resp.ParseLogLevel(s)
	*l = levelFlag(v)
	return err
}

// microsFlag is -slowlog-log-slower-than: µs as Redis takes them, into
// resp.Config's duration, whose 0 is the default (so Redis's 0 is 1 ns).
type microsFlag time.Duration

func (m *microsFlag) String() string {
	switch d := time.Duration(*m); {
	case d == 0:
		return strconv.FormatInt(resp.DefaultSlowlogLogSlowerThan.Microseconds(), 10)
	case d < 0:
		return "-1"
	default:
		return strconv.FormatInt(d.Microseconds(), 10)
	}
}

func (m *microsFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return err
	case n < 0:
		*m = microsFlag(-1)
	case n == 0:
		*m = microsFlag(time.Nanosecond)
	default:
		*m = microsFlag(time.Duration(n) * time.Microsecond)
	}
	return nil
}

// countFlag is -slowlog-max-len and -acllog-max-len: a count as Redis takes it,
// into resp.Config's, whose 0 is the default def (so Redis's 0 is negative).
type countFlag struct {
	n   *int
	def int
}

func (c *countFlag) String() string {
	switch {
	case c.n == nil || *c.n == 0:
		return strconv.Itoa(c.def)
	case *c.n < 0:
		return "0"
	default:
		return strconv.Itoa(*c.n)
	}
}

func (c *countFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return err
	case n < 0:
		return errors.New("must be 0 or more")
	case n == 0:
		*c.n = -1
	default:
		*c.n = n
	}
	return nil
}

// secondsFlag is -timeout: whole seconds, as Redis's timeout.
type secondsFlag time.Duration

func (d *secondsFlag) String() string {
	return strconv.FormatInt(int64(time.Duration(*d)/time.Second), 10)
}

func (d *secondsFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	*d = secondsFlag(time.Duration(n) * time.Second)
	return err
}
