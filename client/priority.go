package client

import (
	"fmt"
)

// Class is one priority class: its name and the percent of a limit's capacity it
// leaves to the classes above it, as a policy's priorities write them
// (docs/policies.md, "Priorities": name and reserve_percent).
type Class struct {
	Name           string
	ReservePercent int
}

// Priorities are named classes, highest first, each leaving a share of every limit to
// those above it: the shared limiter's reserved capacity, by the same names as a
// policy's. Build them with NewPriorities; the zero value has no class.
type Priorities struct{ classes []Class }

// NewPriorities checks classes as a policy file's are checked: highest first, named,
// each name once, each share 0 to 100 and at least the share of the class above it.
// An error wraps ErrBadLimit.
func NewPriorities(classes ...Class) (Priorities, error) {
	if len(classes) == 0 {
		return Priorities{}, fmt.Errorf("%w: priorities need at least one class", ErrBadLimit)
	}
	for i, c := range classes {
		switch {
		case c.Name == "":
			return Priorities{}, fmt.Errorf("%w: priority class %d has no name", ErrBadLimit, i)
		case c.ReservePercent < 0 || c.ReservePercent > 100:
			return Priorities{}, fmt.Errorf("%w: priority '%s' leaves %d%%: shares are 0 to 100%%", ErrBadLimit, c.Name, c.ReservePercent)
		case i > 0 && c.ReservePercent < classes[i-1].ReservePercent:
			return Priorities{}, fmt.Errorf("%w: priorities not ordered: '%s' leaves %d%%, less than the %d%% of '%s' above it",
				ErrBadLimit, c.Name, c.ReservePercent, classes[i-1].ReservePercent, classes[i-1].Name)
		}
		for _, above := range classes[:i] {
			if above.Name == c.Name {
				return Priorities{}, fmt.Errorf("%w: duplicate priority '%s'", ErrBadLimit, c.Name)
			}
		}
	}
	return Priorities{classes: append([]Class(nil), classes...)}, nil
}

// Limit is l for a call of class name: l WithReserve the class's share of l's
// capacity (Fixed's, Slide's and Log's limit, a token bucket's capacity, GCRA's burst,
// Leaky's queue places), rounded up so that at least the share is left, at most the
// limit, as a policy computes it. An unknown name is an error wrapping ErrBadLimit.
func (p Priorities) Limit(l Limit, name string) (Limit, error) {
	for _, c := range p.classes {
		if c.Name == name {
			return l.WithReserve(int(l.request(1, false).ReserveShare(int64(c.ReservePercent)))), nil
		}
	}
	return Limit{}, fmt.Errorf("%w: unknown priority '%s'", ErrBadLimit, name)
}

// Names returns the classes' names, highest first. A new slice each call.
func (p Priorities) Names() []string {
	names := make([]string, len(p.classes))
	for i, c := range p.classes {
		names[i] = c.Name
	}
	return names
}

// Places is what class name leaves of places (a concurrency limit's) to the classes
// above it: its share, rounded up so that at least the share is left, at most all of
// them; the reserve to give AcquireReserving. An unknown name is an error wrapping
// ErrBadLimit.
func (p Priorities) Places(places int, name string) (int, error) {
	for _, c := range p.classes {
		if c.Name == name {
			return min(places, (places*c.ReservePercent+99)/100), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown priority '%s'", ErrBadLimit, name)
}
