package policy

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rlserver/rlserver/store"
)

// Policy is a loaded set of domains. It is immutable once loaded.
type Policy struct{}

// Load reads a policy file, or a directory whose *.yaml files are read, one domain each.
func Load(path string) (*Policy, error) { return nil, errors.New("policy: not implemented yet") }

// Domains lists the policy's domains, sorted.
func (p *Policy) Domains() []string { return nil }

// MarshalText dumps the policy readably.
func (p *Policy) MarshalText() ([]byte, error) { return nil, nil }

// Engine decides requests against the policy in force.
type Engine struct {
	st  *store.Store
	pol atomic.Pointer[Policy]
}

// NewEngine returns an engine deciding on st under p.
func NewEngine(st *store.Store, p *Policy) *Engine {
	e := &Engine{st: st}
	e.pol.Store(p)
	return e
}

// Policy is the policy in force.
func (e *Engine) Policy() *Policy { return e.pol.Load() }

// SetPolicy puts p in force; a request in flight keeps the policy it started with.
func (e *Engine) SetPolicy(p *Policy) { e.pol.Store(p) }

// Decide decides req at now (µs since the epoch, the server's clock).
func (e *Engine) Decide(req Request, now int64) (Response, error) {
	return Response{}, errors.New("policy: not implemented yet")
}

// Watch reloads path's policy into e whenever it changes, until ctx ends.
func Watch(ctx context.Context, path string, e *Engine, log *slog.Logger) error {
	<-ctx.Done()
	return nil
}

// Collector exports the engine's counters.
func (e *Engine) Collector() prometheus.Collector {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "rlserver_policy_placeholder"})
}

// Refused is a descriptor value refused often: its domain, the descriptor as
// key=value pairs, and the hits refused over the last minute.
type Refused struct {
	Domain     string
	Descriptor string
	Count      uint64
}

// TopRefused lists at most n descriptors refused most over the minute before now (µs),
// most first. Values are tracked for rules with detailed_metric; others count by key.
func (e *Engine) TopRefused(n int, now int64) []Refused { return nil }
