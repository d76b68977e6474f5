package acl

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// User is a named user. Connections hold it while ACL SETUSER swaps its rules, so
// a change reaches the connections logged in as it, as in Redis.
type User struct {
	name    string
	perms   atomic.Pointer[Perms]
	deleted atomic.Bool
}

// Name is the user's name.
func (u *User) Name() string { return u.name }

// Perms is the user's rules now.
func (u *User) Perms() *Perms { return u.perms.Load() }

// Deleted reports whether ACL DELUSER or ACL LOAD removed the user.
func (u *User) Deleted() bool { return u.deleted.Load() }

// Registry is the server's users. The default user always exists.
type Registry struct {
	t     *Table
	mu    sync.Mutex
	users map[string]*User
	def   *User
}

// DefaultRules are the default user's rules when nothing configures it.
var DefaultRules = []string{"+@all", "~*", "&*", "on", "nopass"}

// NewRegistry holds the default user alone, which may run anything without a password.
func NewRegistry(t *Table) *Registry {
	r := &Registry{t: t, users: map[string]*User{}}
	r.def = &User{name: "default"}
	r.def.perms.Store(mustPerms(t, DefaultRules))
	r.users["default"] = r.def
	return r
}

func mustPerms(t *Table, rules []string) *Perms {
	p := newPerms(t)
	for _, op := range rules {
		if err := p.apply(op); err != nil {
			panic(err)
		}
	}
	return p.finish()
}

// Table is the commands the registry's rules name.
func (r *Registry) Table() *Table { return r.t }

// Default is the default user, whom a connection is before AUTH.
func (r *Registry) Default() *User { return r.def }

// User finds a user by name (case-sensitive, as Redis), or nil.
func (r *Registry) User(name string) *User {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.users[name]
}

// Names lists the users' names in Redis's order (bytes, ascending).
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.users))
	for n := range r.users {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// List is ACL LIST: a "user NAME RULES" line per user, in name order.
func (r *Registry) List() []string {
	names := r.Names()
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := make([]string, 0, len(names))
	for _, n := range names {
		if u := r.users[n]; u != nil {
			lines = append(lines, "user "+n+" "+u.Perms().Describe())
		}
	}
	return lines
}

// errNameSpaces is Redis's refusal of a username with white space.
var errNameSpaces = errors.New("Usernames can't contain spaces or null characters")

// build applies rules to a copy of from (a new user's rules if nil): all of them,
// or, at the first bad one, none, with Redis's ACL SETUSER error.
func build(t *Table, from *Perms, rules []string) (*Perms, int, error) {
	p := newPerms(t)
	if from != nil {
		p = from.clone()
	}
	for i, op := range rules {
		if op != "" && op[0] == '(' {
			// Redis's selectors: rlserver has the root selector only.
			return nil, i, fmt.Errorf("Error in ACL SETUSER modifier '%s': %w", op, errSyntax)
		}
		if err := p.apply(op); err != nil {
			return nil, i, fmt.Errorf("Error in ACL SETUSER modifier '%s': %w", op, err)
		}
	}
	return p.finish(), 0, nil
}

// SetUser is ACL SETUSER: creates the user or changes its rules, all of them or,
// when one is bad, none.
func (r *Registry) SetUser(name string, rules []string) error {
	if hasSpaces(name) {
		return errNameSpaces
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.users[name]
	var from *Perms
	if u != nil {
		from = u.Perms()
	}
	p, _, err := build(r.t, from, rules)
	if err != nil {
		return err
	}
	if u == nil {
		u = &User{name: name}
		r.users[name] = u
	}
	u.perms.Store(p)
	return nil
}

// DelUser is ACL DELUSER: it removes the users named and returns those that
// existed, whose connections the front closes.
func (r *Registry) DelUser(names []string) ([]*User, error) {
	if slices.Contains(names, "default") {
		return nil, errors.New("The 'default' user cannot be removed")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []*User
	for _, n := range names {
		if u := r.users[n]; u != nil {
			delete(r.users, n)
			u.deleted.Store(true)
			gone = append(gone, u)
		}
	}
	return gone, nil
}

// Authenticate finds the user that name and pass log in as, or nil: a user that
// is off never logs in; one with nopass takes any password. Passwords are
// compared by hash in constant time, as Redis does.
func (r *Registry) Authenticate(name, pass string) *User {
	u := r.User(name)
	if u == nil {
		return nil
	}
	p := u.Perms()
	if !p.on {
		return nil
	}
	if p.nopass {
		return u
	}
	h := []byte(HashPassword(pass))
	ok := false
	for _, want := range p.passwords {
		ok = subtle.ConstantTimeCompare(h, []byte(want)) == 1 || ok
	}
	if ok {
		return u
	}
	return nil
}

// SetDefaultPassword is requirepass: the default user's only password, or none
// and nopass for "", as Redis's ACLUpdateDefaultUserPassword.
func (r *Registry) SetDefaultPassword(pass string) {
	rules := []string{"resetpass", "nopass"}
	if pass != "" {
		rules[1] = ">" + pass
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p, _, err := build(r.t, r.def.Perms(), rules)
	if err != nil {
		panic(err) // these rules always apply
	}
	r.def.perms.Store(p)
}

// DefaultNeedsPassword reports whether the default user has no nopass: AUTH with
// one argument is then accepted, and connections start unauthenticated.
func (r *Registry) DefaultNeedsPassword() bool { return !r.def.Perms().nopass }

// AuthRequired says whether a connection that has not logged in must: the
// default user has a password or is off, as Redis's authRequired.
func (r *Registry) AuthRequired() bool {
	p := r.def.Perms()
	return !p.nopass || !p.on
}

// Replace swaps in a whole set of users (ACL LOAD, an aclfile at start): the
// default user keeps its object, its rules replaced by the set's "default" (or
// the default rules if the set has none). It returns the users that were
// replaced, whose connections the front closes, as Redis does.
func (r *Registry) Replace(users map[string]*Perms) []*User {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []*User
	for n, u := range r.users {
		if n != "default" {
			u.deleted.Store(true)
			gone = append(gone, u)
		}
	}
	def := users["default"]
	if def == nil {
		def = mustPerms(r.t, DefaultRules)
	}
	r.def.perms.Store(def)
	r.users = map[string]*User{"default": r.def}
	for n, p := range users {
		if n != "default" {
			u := &User{name: n}
			u.perms.Store(p)
			r.users[n] = u
		}
	}
	return gone
}

// Pristine reports whether the default user is alone and has DefaultRules:
// CONFIG REWRITE then adds no user line to a file that has none.
func (r *Registry) Pristine() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.users) == 1 && r.def.Perms().Describe() == mustPerms(r.t, DefaultRules).Describe()
}

// Save is the aclfile's text for the users now, as ACL SAVE writes it.
func (r *Registry) Save() string {
	var b strings.Builder
	for _, l := range r.List() {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}
