// Package keyfamily names a key's family, the unit INFO slices and the client's
// slice metrics count by, and keeps one value per family in bounded memory.
//
// A key's family is the key up to its first ':' ("api:alice" and "api:bob" are
// "api"), the whole key when it has none. A family of 1 to MaxLen letters, digits,
// '_', '-' and '.' is named; any other (empty, longer, or with a byte that INFO's
// "name:value" lines or a Prometheus label would have to escape) is counted as Other.
package keyfamily

import (
	"maps"
	"slices"
	"sync"
)

// MaxLen is the longest family named; longer ones are Other.
const MaxLen = 32

// MaxFamilies is how many families a Table names: the first MaxFamilies seen. Past
// it, new families count as Other, so that random keys cost no memory; 64 lines of
// INFO and 64 label values per metric stay readable.
const MaxFamilies = 64

// Other is the name of the families not named: never a family's own name, as '('
// is not a family's byte.
const Other = "(other)"

// Of returns key's family, or Other.
func Of[K ~string | ~[]byte](key K) K {
	i := 0
	for i < len(key) && key[i] != ':' {
		c := key[i]
		if i == MaxLen || !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return K(Other)
		}
		i++
	}
	if i == 0 {
		return K(Other)
	}
	return key[:i]
}

// Table holds a *T per family, for at most MaxFamilies families and Other. T is
// meant to be counters safe for concurrent use (atomics): the Table guards only
// which families it holds. The zero Table is empty and ready.
type Table[T any] struct {
	mu    sync.Mutex
	named map[string]*T
	other T
}

// Get returns the T of key's family, adding the family if there is room, else Other's.
func (t *Table[T]) Get(key []byte) *T {
	return t.get(key, true)
}

// Find returns what Get would without adding a family: the T of key's family if the
// Table holds it, Other's if Get would count it there, nil if Get would add it.
func (t *Table[T]) Find(key []byte) *T {
	return t.get(key, false)
}

func (t *Table[T]) get(key []byte, add bool) *T {
	f := Of(key)
	if string(f) == Other {
		return &t.other
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.named[string(f)]; ok {
		return v
	}
	if len(t.named) >= MaxFamilies {
		return &t.other
	}
	if !add {
		return nil
	}
	if t.named == nil {
		t.named = map[string]*T{}
	}
	v := new(T)
	t.named[string(f)] = v
	return v
}

// Each calls fn with each family the Table holds and its T, by name, then Other's:
// fn must read T as concurrent writers may be writing it.
func (t *Table[T]) Each(fn func(family string, v *T)) {
	t.mu.Lock()
	names := slices.Sorted(maps.Keys(t.named))
	vs := make([]*T, len(names))
	for i, k := range names {
		vs[i] = t.named[k]
	}
	t.mu.Unlock()
	for i, k := range names {
		fn(k, vs[i])
	}
	fn(Other, &t.other)
}
