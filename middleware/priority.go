package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/shed"
)

// classes is Config.Priorities and Config.Priority made ready. Without priorities it
// has one class, whose limits are the Config's as they are.
type classes struct {
	names []string                   // the classes, highest first; nil without Priorities
	of    func(*http.Request) string // Config.Priority
}

// index is r's class: the index of its name among c.names, the lowest class's for a
// name that is none of them; 0 without priorities.
func (c classes) index(r *http.Request) int {
	if len(c.names) == 0 {
		return 0
	}
	if i := slices.Index(c.names, c.of(r)); i >= 0 {
		return i
	}
	return len(c.names) - 1
}

// setPriorities checks the priority settings of cfg and gives every dimension its
// limit per class, and the concurrency limit its reserve per class.
func (l *limiterState) setPriorities(cfg Config) error {
	names := cfg.Priorities.Names()
	switch {
	case cfg.Priority != nil && len(names) == 0 && cfg.Shedder == nil:
		return errors.New("middleware: Config.Priority names classes, but Config.Priorities has none and Config.Shedder is nil")
	case len(names) > 0 && cfg.Priority == nil:
		return errors.New("middleware: Config.Priorities needs Config.Priority, which names a request's class")
	case len(names) > 0 && cfg.Policy != nil:
		return errors.New("middleware: Config.Priorities with Config.Policy: a policy's domain names its own priority classes")
	}
	if s := cfg.Shedder; s != nil {
		for _, name := range names {
			if _, err := s.Lookup(name); err != nil {
				return fmt.Errorf("middleware: priority class %q is no priority of Config.Shedder: %w", name, err)
			}
		}
	}
	l.classes = classes{names: names, of: cfg.Priority}
	if len(names) == 0 {
		names = []string{""} // one class: the limits as they are
	}
	for i := range l.every {
		d := &l.every[i]
		d.limits = make([]client.Limit, len(names))
		for c, name := range names {
			d.limits[c] = d.Limit
			if name != "" {
				d.limits[c], _ = cfg.Priorities.Limit(d.Limit, name) // a name of its own
			}
		}
	}
	if c := l.everyConc; c != nil {
		c.reserves = make([]int, len(names))
		for i, name := range names {
			if name != "" {
				c.reserves[i], _ = cfg.Priorities.Places(c.Limit, name)
			}
		}
	}
	return nil
}

// shedding returns h behind the Shedder, if there is one: a request of Priority's
// name (the lowest priority for a name it does not know) is admitted, queued or shed
// before h runs; health checks pass.
func (l *limiterState) shedding(h http.Handler) http.Handler {
	s := l.shedder
	if s == nil {
		return h
	}
	priority := func(*http.Request) shed.Priority { return s.Default() }
	if l.classes.of != nil {
		priority = func(r *http.Request) shed.Priority {
			if p, err := s.Lookup(l.classes.of(r)); err == nil {
				return p
			}
			return s.Lowest()
		}
	}
	return s.Handler(h, shed.HandlerOptions{Priority: priority, HealthPaths: l.healthPaths})
}
