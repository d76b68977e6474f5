package rlcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

func TestParseAcquire(t *testing.T) {
	for _, c := range []struct {
		args string
		want algo.LeaseRequest
	}{
		{"3 1000", algo.LeaseRequest{Limit: 3, Duration: ms(1000)}},
		{"100000 31536000000", algo.LeaseRequest{Limit: 100000, Duration: year}},
		{"1 1 ID job-7", algo.LeaseRequest{Limit: 1, Duration: 1000, ID: []byte("job-7")}},
		{"1 1 id a ID b", algo.LeaseRequest{Limit: 1, Duration: 1000, ID: []byte("b")}}, // the last ID wins
		{"1 1 Id " + strings.Repeat("x", 128), algo.LeaseRequest{Limit: 1, Duration: 1000, ID: []byte(strings.Repeat("x", 128))}},
		{"10 1 RESERVE 2", algo.LeaseRequest{Limit: 10, Duration: 1000, Reserve: 2}},
		{"10 1 reserve 10 ID j RESERVE 0", algo.LeaseRequest{Limit: 10, Duration: 1000, ID: []byte("j")}},
	} {
		got, err := ParseAcquire(split(c.args), 100_000)
		if err != nil || got.Limit != c.want.Limit || got.Reserve != c.want.Reserve || got.Duration != c.want.Duration || !bytes.Equal(got.ID, c.want.ID) ||
			(got.ID == nil) != (c.want.ID == nil) {
			t.Errorf("ParseAcquire(%q) = %+v, %v; want %+v", c.args, got, err, c.want)
		}
	}
}

func TestParseLeaseErrors(t *testing.T) {
	const (
		limit = "ERR limit must be an integer between 1 and 100000"
		lease = "ERR lease_ms must be an integer between 1 and 31536000000"
		id    = "ERR lease id must be 1 to 128 bytes"
	)
	for _, c := range []struct {
		renew bool
		args  []string
		want  string
	}{
		{false, nil, "ERR wrong number of arguments for 'rl.acquire' command"},
		{false, []string{"1"}, "ERR wrong number of arguments for 'rl.acquire' command"},
		{false, []string{"0", "1000"}, limit},
		{false, []string{"100001", "1000"}, limit},
		{false, []string{"01", "1000"}, limit},
		{false, []string{"1", "0"}, lease},
		{false, []string{"1", "31536000001"}, lease},
		{false, []string{"1", "1.5"}, lease},
		{false, []string{"1", "1000", "ID"}, "ERR syntax error"},
		{false, []string{"1", "1000", "ID", ""}, id},
		{false, []string{"1", "1000", "ID", strings.Repeat("x", 129)}, id},
		{false, []string{"1", "1000", "PEEK"}, "ERR syntax error"},
		{false, []string{"1", "1000", "COST", "1"}, "ERR syntax error"},
		{false, []string{"3", "1000", "RESERVE"}, "ERR syntax error"},
		{false, []string{"3", "1000", "RESERVE", "4"}, "ERR reserve must be an integer between 0 and 3"},
		{false, []string{"3", "1000", "RESERVE", "-1"}, "ERR reserve must be an integer between 0 and 3"},
		{false, []string{"3", "1000", "RESERVE", "one"}, "ERR reserve must be an integer between 0 and 3"},
		{true, []string{"id"}, "ERR wrong number of arguments for 'rl.renew' command"},
		{true, []string{"id", "1", "2"}, "ERR wrong number of arguments for 'rl.renew' command"},
		{true, []string{"id", "0"}, lease},
		{true, []string{"id", "x"}, lease},
	} {
		args := make([][]byte, len(c.args))
		for i, a := range c.args {
			args[i] = []byte(a)
		}
		var err error
		if c.renew {
			_, _, err = ParseRenew(args)
		} else {
			_, err = ParseAcquire(args, 100_000)
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("renew %v %q: %v; want error %q", c.renew, c.args, err, c.want)
		}
	}
	if id, d, err := ParseRenew(split("abc 250")); err != nil || string(id) != "abc" || d != ms(250) {
		t.Errorf("ParseRenew(abc 250) = %q, %d, %v", id, d, err)
	}
	if _, err := ParseAcquire(split("1000000001 1000"), 1<<40); err == nil ||
		err.Error() != "ERR limit must be an integer between 1 and 1000000000" {
		t.Errorf("a max-log-limit above 1e9 lifted the lease limit: %v", err)
	}
}
