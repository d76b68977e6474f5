package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The table as text: Redis's CLUSTER NODES lines, which are also what its
// nodes.conf holds and what nodes send each other (exchange.go):
//
//	id host:port@cport flags master-id ping-sent pong-recv config-epoch link slot...
//
// flags "myself,master" or "master", master-id "-" (a replica: "myself,slave" or
// "slave" and its master's id, its epoch its master's, as Redis's nodeEpoch), the
// bus port 0 (there is no bus), slots as "first-last" or "slot", and on this node's own line the slots
// being moved: "[slot->-id]" (migrating to id) and "[slot-<-id]" (importing from
// id). nodes.conf ends with "vars currentEpoch N lastVoteEpoch 0".

// Describe is CLUSTER NODES: one line per node, each ending in "\n".
func (t *Topology) Describe() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.describe()
}

func (t *Topology) describe() string {
	var b strings.Builder
	for _, p := range t.peers {
		t.describeNode(&b, p)
		b.WriteByte('\n')
	}
	return b.String()
}

// describeNode writes p's line, without its "\n". t.mu is held.
func (t *Topology) describeNode(b *strings.Builder, p *peer) {
	flags, master, epoch := "master", "-", p.epoch
	if p.master != nil {
		flags, master, epoch = "slave", p.master.ID, p.master.epoch
	}
	if p == t.self {
		flags = "myself," + flags
	}
	b.WriteString(p.ID + " " + p.Addr() + "@0 " + flags + " " + master + " 0 0 " +
		strconv.FormatUint(epoch, 10) + " connected")
	for s := 0; s < Slots; s++ {
		if t.owner[s].Load() != p {
			continue
		}
		e := s
		for e+1 < Slots && t.owner[e+1].Load() == p {
			e++
		}
		b.WriteString(" " + strconv.Itoa(s))
		if e > s {
			b.WriteString("-" + strconv.Itoa(e))
		}
		s = e
	}
	if p == t.self {
		for s := range Slots {
			if to := t.migrating[s].Load(); to != nil {
				b.WriteString(" [" + strconv.Itoa(s) + "->-" + to.ID + "]")
			}
			if from := t.importing[s].Load(); from != nil {
				b.WriteString(" [" + strconv.Itoa(s) + "-<-" + from.ID + "]")
			}
		}
	}
}

// line is one parsed line of the table.
type line struct {
	node      Node
	myself    bool
	master    string // a replica's master id; "" for a master
	epoch     uint64
	slots     []Range
	migrating map[uint16]string // slot → node id
	importing map[uint16]string
}

// parseTable reads the lines of Describe (and nodes.conf's vars line).
func parseTable(text string) (lines []line, current uint64, err error) {
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if f[0] == "vars" {
			for i := 1; i+1 < len(f); i += 2 {
				if f[i] == "currentEpoch" {
					current, _ = strconv.ParseUint(f[i+1], 10, 64)
				}
			}
			continue
		}
		if len(f) < 8 || len(f[0]) != 40 {
			return nil, 0, fmt.Errorf("cluster: bad table line %q", l)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",") // host:port@cport,hostname
		host, portText, err := splitAddr(addr)
		if err != nil {
			return nil, 0, fmt.Errorf("cluster: bad address in %q", l)
		}
		port, _ := strconv.Atoi(portText)
		epoch, err := strconv.ParseUint(f[6], 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("cluster: bad epoch in %q", l)
		}
		ln := line{node: Node{Host: host, Port: port, ID: f[0]}, epoch: epoch,
			myself: strings.Contains(f[2], "myself")}
		if strings.Contains(f[2], "slave") && f[3] != "-" {
			ln.master = f[3]
		}
		for _, s := range f[8:] {
			if err := ln.addSlots(s); err != nil {
				return nil, 0, fmt.Errorf("cluster: %v in %q", err, l)
			}
		}
		lines = append(lines, ln)
	}
	return lines, current, nil
}

// splitAddr is net.SplitHostPort with the port checked.
func splitAddr(addr string) (string, string, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", "", errors.New("no port")
	}
	host, port := strings.Trim(addr[:i], "[]"), addr[i+1:]
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", "", errors.New("bad port")
	}
	return host, port, nil
}

// addSlots reads one slot field of a line: n, a-b, [n->-id] or [n-<-id].
func (ln *line) addSlots(s string) error {
	if strings.HasPrefix(s, "[") {
		body := strings.TrimSuffix(s[1:], "]")
		for _, sep := range []string{"->-", "-<-"} {
			if slotText, id, ok := strings.Cut(body, sep); ok {
				slot, err := strconv.Atoi(slotText)
				if err != nil || slot < 0 || slot >= Slots {
					return fmt.Errorf("bad slot %q", s)
				}
				m := &ln.migrating
				if sep == "-<-" {
					m = &ln.importing
				}
				if *m == nil {
					*m = map[uint16]string{}
				}
				(*m)[uint16(slot)] = id
				return nil
			}
		}
		return fmt.Errorf("bad slot %q", s)
	}
	firstText, lastText, isRange := strings.Cut(s, "-")
	if !isRange {
		lastText = firstText
	}
	first, err1 := strconv.Atoi(firstText)
	last, err2 := strconv.Atoi(lastText)
	if err1 != nil || err2 != nil || first < 0 || first > last || last >= Slots {
		return fmt.Errorf("bad slots %q", s)
	}
	ln.slots = append(ln.slots, Range{uint16(first), uint16(last)})
	return nil
}

// Open is a -cluster-enabled node's topology, kept in the config file path (Redis's
// nodes.conf): read from it if it exists, else a new node owning no slot, with a
// fresh random id, written to it at once. host and port are this node's address as
// the others and the clients reach it.
func Open(path, host string, port int) (*Topology, error) {
	t := &Topology{path: path, forgotten: map[string]int64{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		id := make([]byte, 20)
		rand.Read(id)
		t.self = &peer{Node: Node{Host: host, Port: port, ID: hex.EncodeToString(id)}}
		t.peers = []*peer{t.self}
		return t, t.save()
	case err != nil:
		return nil, err
	}
	lines, current, err := parseTable(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	byID := map[string]*peer{}
	for _, ln := range lines {
		p := &peer{Node: ln.node, epoch: ln.epoch}
		if ln.myself {
			p.Host, p.Port = host, port // the address now given wins over the one saved
			t.self = p
		}
		byID[p.ID] = p
		t.peers = append(t.peers, p)
	}
	if t.self == nil {
		return nil, fmt.Errorf("%s: no line for this node (myself)", path)
	}
	for _, ln := range lines {
		if ln.master != "" {
			byID[ln.node.ID].master = byID[ln.master] // nil, a master, if unknown
		}
		for _, r := range ln.slots {
			for s := int(r.First); s <= int(r.Last); s++ {
				t.owner[s].Store(byID[ln.node.ID])
			}
		}
		for s, id := range ln.migrating {
			t.migrating[s].Store(byID[id])
		}
		for s, id := range ln.importing {
			t.importing[s].Store(byID[id])
		}
	}
	t.current = max(current, t.maxEpoch())
	return t, nil
}

// Table is what a node sends its peers (CLUSTER RLTABLE) and keeps in its config
// file: Describe's lines and the current epoch, which Redis's nodes send in every
// message's header, so that a promoted replica's new epoch is above every node's.
func (t *Topology) Table() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.table()
}

func (t *Topology) table() string {
	return t.describe() + "vars currentEpoch " + strconv.FormatUint(t.current, 10) + " lastVoteEpoch 0\n"
}

// save writes the table to the config file, whole, through a rename: a crash leaves
// the old file or the new one. t.mu is held, or t is not shared yet.
func (t *Topology) save() error {
	t.changes.Add(1)
	if t.path == "" {
		return nil
	}
	return writeTable(t.path, t.table())
}

// writeTable replaces the file at path with text through a rename.
func writeTable(path, text string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return fmt.Errorf("error saving the cluster node config: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("error saving the cluster node config: %v", err)
	}
	return nil
}

// Save writes a change not yet in the config file, and returns the last write's
// error. Changes are written off the changing command's path (changed), so Save is
// what a server calls as it stops.
func (t *Topology) Save() error {
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	t.mu.Lock()
	if !t.unsaved {
		err := t.saveErr
		t.mu.Unlock()
		return err
	}
	t.unsaved = false
	text := t.table()
	t.mu.Unlock()
	err := writeTable(t.path, text)
	t.mu.Lock()
	t.saveErr = err
	t.mu.Unlock()
	return err
}

// maxEpoch is the highest config epoch of the table and the current epoch, as
// Redis's clusterGetMaxEpoch.
func (t *Topology) maxEpoch() uint64 {
	m := t.current
	for _, p := range t.peers {
		m = max(m, p.epoch)
	}
	return m
}
