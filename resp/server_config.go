package resp

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/aof"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/conffile"
	"github.com/rlserver/rlserver/internal/rlcmd"
	"github.com/rlserver/rlserver/store"
)

// Defaults of the slow log, Redis's.
const (
	// DefaultSlowlogLogSlowerThan is the run time from which a command enters SLOWLOG.
	DefaultSlowlogLogSlowerThan = 10 * time.Millisecond
	// DefaultSlowlogMaxLen is how many entries SLOWLOG keeps.
	DefaultSlowlogMaxLen = 128
)

// tunables are the RESP front's settings CONFIG SET changes while the server runs
// (the core's are core.Tunables). A change builds a new value and swaps the
// pointer, so the hot path reads them with one atomic load and no lock.
type tunables struct {
	// core is a copy of the core's, for CONFIG GET, SET and REWRITE to read and draft
	// (config, setConfig); zero in s.tun, where nothing reads it.
	core        core.Tunables
	maxClients  int64
	requirePass string // the default user's password, as last set (acl.Registry holds it)
	idleTimeout time.Duration
	// slowerThan is slowlog-log-slower-than in µs as Redis takes it: negative logs
	// nothing, 0 every command.
	slowerThan int64
	slowlogLen int
	aclLogLen  int // acllog-max-len
	// aofOn and aof are appendonly and the log's settings, read from the core for
	// CONFIG GET, SET and REWRITE (config) and applied after the rest (setConfig).
	aofOn bool
	aof   aof.Config
	// minReplicas and minReplicasLag are min-replicas-to-write and
	// min-replicas-max-lag (seconds).
	minReplicas    int
	minReplicasLag int
}

// initialTunables reads cfg, its defaults applied.
func initialTunables(cfg Config) *tunables {
	t := &tunables{maxClients: int64(cfg.MaxClients), idleTimeout: cfg.IdleTimeout, slowlogLen: cfg.SlowlogMaxLen,
		aclLogLen: cfg.ACLLogMaxLen, minReplicas: cfg.MinReplicasToWrite,
		minReplicasLag: cmp.Or(cfg.MinReplicasMaxLag, DefaultMinReplicasMaxLag)}
	t.requirePass = cfg.RequirePass
	switch d := cfg.SlowlogLogSlowerThan; {
	case d == 0:
		t.slowerThan = DefaultSlowlogLogSlowerThan.Microseconds()
	case d < 0:
		t.slowerThan = -1
	default:
		t.slowerThan = d.Microseconds()
	}
	switch {
	case cfg.SlowlogMaxLen == 0:
		t.slowlogLen = DefaultSlowlogMaxLen
	case cfg.SlowlogMaxLen < 0:
		t.slowlogLen = 0
	}
	switch {
	case cfg.ACLLogMaxLen == 0:
		t.aclLogLen = DefaultACLLogMaxLen
	case cfg.ACLLogMaxLen < 0:
		t.aclLogLen = 0
	}
	return t
}

// param is one parameter of CONFIG GET, and of CONFIG SET if set is not nil.
type param struct {
	name string
	get  func(s *Server, t *tunables) string
	// set parses v into t, a draft of the new tunables; the error says why v is refused.
	set func(s *Server, t *tunables, v string) error
	// def is the default value: CONFIG REWRITE adds a directive the file lacks only
	// when its value differs. Empty for parameters CONFIG REWRITE leaves to the file.
	def string
	// fixed marks what Redis too fixes at start (databases, cluster-enabled…):
	// CONFIG SET refuses it even to its value. The other parameters without set
	// (port, save, tls-*…) take their value, changing nothing, as Redis's
	// introspection.tcl "CONFIG sanity" asks of every parameter Redis can change.
	fixed bool
	// alias marks Redis's older name of another parameter: CONFIG REWRITE writes
	// only the new one.
	alias bool
}

// errImmutable is CONFIG SET's reason for a parameter fixed at start.
var errImmutable = core.ErrImmutable

// params are CONFIG GET's parameters: what redis-benchmark, redis-cli and client
// libraries ask, answered as a Redis without RDB or AOF would (the snapshot is
// rlserver's own format, set by -snapshot), and rlserver's own. Those with set are
// CONFIG SET's; every one of those is also a directive of the config file, of the
// same name, and CONFIG REWRITE writes them.
var params = []param{
	{name: "save", def: "",
		get: func(_ *Server, t *tunables) string { return core.FormatSave(t.core.SaveRules) },
		set: func(s *Server, t *tunables, v string) (err error) {
			if t.core.SaveRules, err = core.ParseSave(v); err != nil {
				return err
			}
			if len(t.core.SaveRules) > 0 && s.cfg.SnapshotPath == "" {
				return errors.New("save rules need a snapshot file: start with -snapshot, or with dbfilename and save lines")
			}
			return nil
		}},
	{name: "min-replicas-to-write", def: "0", get: getMinReplicas, set: setMinReplicas},
	{name: "min-replicas-max-lag", def: strconv.Itoa(DefaultMinReplicasMaxLag), get: getMinReplicasLag, set: setMinReplicasLag},
	{name: "min-slaves-to-write", get: getMinReplicas, set: setMinReplicas, alias: true},
	{name: "min-slaves-max-lag", get: getMinReplicasLag, set: setMinReplicasLag, alias: true},
	{name: "dbfilename", get: func(s *Server, _ *tunables) string { return dbFilename(s.cfg.SnapshotPath) }},
	{name: "dir", get: func(*Server, *tunables) string { d, _ := os.Getwd(); return d }},
	{name: "appendonly", def: "no",
		get: func(_ *Server, t *tunables) string { return yesNo(t.aofOn) },
		set: func(_ *Server, t *tunables, v string) (err error) { t.aofOn, err = configBool(v); return err }},
	{name: "appendfsync", def: "everysec",
		get: func(_ *Server, t *tunables) string { return t.aof.Fsync.String() },
		set: func(_ *Server, t *tunables, v string) (err error) {
			if t.aof.Fsync, err = aof.ParseFsync(v); err != nil {
				return errors.New("argument(s) must be one of the following: always, everysec, no") // Redis's words
			}
			return nil
		}},
	{name: "appendfilename", get: func(_ *Server, t *tunables) string { return cmp.Or(t.aof.Name, aof.DefaultName) }, fixed: true},
	{name: "appenddirname", get: func(_ *Server, t *tunables) string { return filepath.Base(t.aof.Dir) }, fixed: true},
	{name: "aof-load-truncated", def: "yes",
		get: func(_ *Server, t *tunables) string { return yesNo(!t.aof.RefuseTruncated) },
		set: func(_ *Server, t *tunables, v string) error {
			yes, err := configBool(v)
			t.aof.RefuseTruncated = !yes
			return err
		}},
	{name: "auto-aof-rewrite-percentage", def: strconv.Itoa(aof.DefaultRewritePercentage),
		get: func(_ *Server, t *tunables) string {
			return strconv.Itoa(max(cmp.Or(t.aof.RewritePercentage, aof.DefaultRewritePercentage), 0))
		},
		set: func(_ *Server, t *tunables, v string) error {
			n, err := configInt(v, 0, math.MaxInt32)
			if t.aof.RewritePercentage = int(n); n == 0 {
				t.aof.RewritePercentage = -1 // off, as Redis's 0
			}
			return err
		}},
	{name: "auto-aof-rewrite-min-size", def: strconv.Itoa(aof.DefaultRewriteMinSize),
		get: func(_ *Server, t *tunables) string {
			return strconv.FormatInt(cmp.Or(t.aof.RewriteMinSize, aof.DefaultRewriteMinSize), 10)
		},
		set: func(_ *Server, t *tunables, v string) (err error) {
			if t.aof.RewriteMinSize, err = ParseMemory(v); err != nil {
				return errors.New("argument must be a memory value")
			}
			return nil
		}},
	{name: "maxmemory", def: "0",
		get: func(_ *Server, t *tunables) string { return strconv.FormatInt(t.core.MaxMemory, 10) },
		set: func(_ *Server, t *tunables, v string) (err error) {
			if t.core.MaxMemory, err = ParseMemory(v); err != nil {
				return errors.New("argument must be a memory value") // Redis's words
			}
			return nil
		}},
	{name: "maxmemory-policy", def: store.PolicyVolatileTTL.String(),
		get: func(_ *Server, t *tunables) string { return t.core.EffectivePolicy().String() },
		set: func(_ *Server, t *tunables, v string) (err error) {
			t.core.MaxMemoryPolicy, err = store.ParsePolicy(v)
			return err
		}},
	{name: "databases", get: constant("1"), fixed: true},
	{name: "bind", get: func(s *Server, _ *tunables) string { h, _ := hostPort(s.Addr()); return h }},
	{name: "port", get: func(s *Server, _ *tunables) string { _, p := hostPort(s.Addr()); return p }},
	{name: "timeout", def: "0",
		get: func(_ *Server, t *tunables) string { return strconv.FormatInt(int64(t.idleTimeout/time.Second), 10) },
		set: func(_ *Server, t *tunables, v string) error {
			n, err := configInt(v, 0, 1<<31-1)
			if err != nil {
				return err
			}
			t.idleTimeout = time.Duration(n) * time.Second
			return nil
		}},
	{name: "requirepass", def: "", // in clear, as Redis answers it
		get: func(_ *Server, t *tunables) string { return t.requirePass },
		set: func(_ *Server, t *tunables, v string) error { t.requirePass = v; return nil }},
	{name: "maxclients", def: strconv.Itoa(DefaultMaxClients),
		get: func(_ *Server, t *tunables) string { return strconv.FormatInt(t.maxClients, 10) },
		set: func(_ *Server, t *tunables, v string) error {
			n, err := configInt(v, 1, 1<<32-1) // Redis's bounds
			if err != nil {
				return err
			}
			t.maxClients = n
			return nil
		}},
	{name: "loglevel", def: "info",
		get: func(_ *Server, t *tunables) string { return strings.ToLower(t.core.LogLevel.String()) },
		set: func(s *Server, t *tunables, v string) (err error) {
			if s.cfg.LogLevel == nil {
				return errImmutable
			}
			t.core.LogLevel, err = ParseLogLevel(v)
			return err
		}},
	{name: "snapshot-interval", def: DefaultSnapshotInterval.String(),
		get: func(_ *Server, t *tunables) string { return t.core.SnapshotInterval.String() },
		set: func(_ *Server, t *tunables, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return errors.New("argument must be a positive duration such as 500ms, 1s or 1m")
			}
			t.core.SnapshotInterval = d
			return nil
		}},
	{name: "slowlog-log-slower-than", def: strconv.FormatInt(DefaultSlowlogLogSlowerThan.Microseconds(), 10),
		get: func(_ *Server, t *tunables) string { return strconv.FormatInt(t.slowerThan, 10) },
		set: func(_ *Server, t *tunables, v string) error {
			n, err := configInt(v, -1, math.MaxInt64)
			if err != nil {
				return err
			}
			t.slowerThan = n
			return nil
		}},
	{name: "slowlog-max-len", def: strconv.Itoa(DefaultSlowlogMaxLen),
		get: func(_ *Server, t *tunables) string { return strconv.Itoa(t.slowlogLen) },
		set: func(_ *Server, t *tunables, v string) error {
			n, err := configInt(v, 0, 1<<31-1)
			if err != nil {
				return err
			}
			t.slowlogLen = int(n)
			return nil
		}},
	{name: "acllog-max-len", def: strconv.Itoa(DefaultACLLogMaxLen),
		get: func(_ *Server, t *tunables) string { return strconv.Itoa(t.aclLogLen) },
		set: func(_ *Server, t *tunables, v string) error {
			n, err := configInt(v, 0, math.MaxInt64) // Redis's bounds
			if err != nil {
				return err
			}
			t.aclLogLen = int(min(n, math.MaxInt32))
			return nil
		}},
	{name: "proto-max-bulk-len", get: func(s *Server, _ *tunables) string { return strconv.FormatInt(s.cfg.ProtoMaxBulkLen, 10) }},
	{name: "tls-port", get: func(s *Server, _ *tunables) string {
		if _, p := hostPort(s.TLSAddr()); p != "" {
			return p
		}
		return "0"
	}},
	{name: "tls-cert-file", get: func(s *Server, _ *tunables) string { return s.cfg.TLSCertFile }},
	{name: "tls-key-file", get: func(s *Server, _ *tunables) string { return s.cfg.TLSKeyFile }},
	{name: "tls-ca-cert-file", get: func(s *Server, _ *tunables) string { return s.cfg.TLSCACertFile }},
	{name: "tls-auth-clients", get: func(s *Server, _ *tunables) string { return s.cfg.TLSAuthClients }},
	{name: "protected-mode", get: constant("no")},
	{name: "cluster-enabled", get: func(s *Server, _ *tunables) string { return yesNo(s.cfg.Cluster != nil) }, fixed: true},
	{name: "enable-debug-command", get: func(s *Server, _ *tunables) string { return yesNo(s.cfg.EnableDebugCommand) }, fixed: true},
	{name: "shards", get: func(s *Server, _ *tunables) string { return strconv.Itoa(s.cfg.Shards) }},
	{name: "max-log-limit", get: func(s *Server, _ *tunables) string { return strconv.FormatInt(s.cfg.MaxLogLimit, 10) }},
	{name: "replicaof", get: func(s *Server, _ *tunables) string { return strings.Join(s.replicaOfArgs(), " ") }, fixed: true},
	{name: "slaveof", get: func(s *Server, _ *tunables) string { return strings.Join(s.replicaOfArgs(), " ") }, fixed: true}, // Redis's alias
	{name: "masterauth", get: func(s *Server, _ *tunables) string { return s.cfg.MasterAuth }},
	{name: "masteruser", get: func(s *Server, _ *tunables) string { return s.cfg.MasterUser }},
	{name: "aclfile", get: func(s *Server, _ *tunables) string { return s.cfg.ACLFile }, fixed: true},
	{name: "snapshot", get: func(s *Server, _ *tunables) string { return s.cfg.SnapshotPath }},
	{name: "quota-upstream", get: upstreamParam("quota-upstream"), fixed: true}, // its password redacted
	{name: "quota-upstream-prefix", get: upstreamParam("quota-upstream-prefix"), fixed: true},
	{name: "quota-upstream-fallback", get: upstreamParam("quota-upstream-fallback"), fixed: true},
	{name: "quota-upstream-regions", get: upstreamParam("quota-upstream-regions"), fixed: true},
}

func constant(v string) func(*Server, *tunables) string {
	return func(*Server, *tunables) string { return v }
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// hostPort splits a listener's address; empty strings before it listens.
func hostPort(a net.Addr) (host, port string) {
	if a != nil {
		host, port, _ = net.SplitHostPort(a.String())
	}
	return host, port
}

// ParseLogLevel reads a log level: slog's names (debug, info, warn, error, any case)
// or Redis's (verbose is debug, notice info, warning warn).
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "verbose":
		return slog.LevelDebug, nil
	case "notice":
		return slog.LevelInfo, nil
	case "warning":
		return slog.LevelWarn, nil
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, errors.New("argument must be one of debug, info, warn, error (or Redis's verbose, notice, warning)")
	}
	return l, nil
}

// lookupParam finds a parameter by its case-insensitive name.
func lookupParam(name string) *param {
	for i := range params {
		if strings.EqualFold(params[i].name, name) {
			return &params[i]
		}
	}
	return nil
}

// config is the settings in force, the core's with them, for CONFIG GET and REWRITE.
func (s *Server) config() *tunables {
	t := *s.tun.Load()
	t.core = *s.core.Tunables()
	t.aofOn, t.aof = s.core.AOF() != nil, s.core.AOFConfig()
	return &t
}

// setConfig applies CONFIG SET's name/value pairs all at once, or none of them: every
// value is parsed into a draft before anything changes. The error is Redis's reply.
func (s *Server) setConfig(pairs [][]byte) error {
	s.tunMu.Lock()
	defer s.tunMu.Unlock()
	old := s.config()
	draft := *old
	var parseErr error
	// The core applies its part of the draft (the memory bound first: the store may
	// refuse it), and nothing of it if the parse failed.
	err := s.core.UpdateTunables(func(ct *core.Tunables) error {
		draft.core = *ct
		if parseErr = s.parseConfig(pairs, &draft); parseErr != nil {
			return parseErr
		}
		*ct = draft.core
		return nil
	})
	switch {
	case err != nil && err == parseErr:
		return err
	case err != nil:
		return fmt.Errorf("ERR CONFIG SET failed (possibly related to argument 'maxmemory') - %v", err)
	}
	if err := s.applyAOF(old, &draft); err != nil {
		return err
	}
	draft.core, draft.aof = core.Tunables{}, aof.Config{}
	s.tun.Store(&draft)
	if draft.requirePass != old.requirePass {
		s.acl.SetDefaultPassword(draft.requirePass) // as Redis's: requirepass is the default user's password
	}
	if draft.idleTimeout != old.idleTimeout {
		s.rc.SetIdleClose(draft.idleTimeout) // for connections accepted from now on
		s.rcTLS.SetIdleClose(draft.idleTimeout)
	}
	s.slow.trim(draft.slowlogLen)
	s.aclLog.SetMax(draft.aclLogLen)
	return nil
}

// parseConfig parses CONFIG SET's name/value pairs into draft; the error is Redis's reply.
func (s *Server) parseConfig(pairs [][]byte, draft *tunables) error {
	seen := map[*param]bool{}
	for i := 0; i < len(pairs); i += 2 {
		p := lookupParam(string(pairs[i]))
		if p == nil {
			return fmt.Errorf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", pairs[i])
		}
		var err error
		switch {
		case seen[p]:
			err = errors.New("duplicate parameter")
		case p.set == nil && (p.fixed || p.get(s, draft) != string(pairs[i+1])):
			err = errImmutable
		case p.set == nil: // its value: nothing to change
		default:
			err = p.set(s, draft, string(pairs[i+1]))
		}
		if err != nil {
			return fmt.Errorf("ERR CONFIG SET failed (possibly related to argument '%s') - %v", p.name, err)
		}
		seen[p] = true
	}
	return nil
}

// applyAOF applies appendonly and the log's settings of CONFIG SET, after the rest:
// turning the log on writes its first base and may fail (an unwritable directory).
func (s *Server) applyAOF(old, draft *tunables) error {
	if draft.aof != old.aof {
		if err := s.core.SetAOFConfig(func(c *aof.Config) error { *c = draft.aof; return nil }); err != nil {
			return fmt.Errorf("ERR CONFIG SET failed (possibly related to argument 'appendfsync') - %v", err)
		}
	}
	if draft.aofOn != old.aofOn {
		if err := s.core.SetAppendOnly(draft.aofOn); err != nil {
			return fmt.Errorf("ERR CONFIG SET failed (possibly related to argument 'appendonly') - %v", err)
		}
	}
	return nil
}

// dbFilename is CONFIG GET dbfilename: the snapshot file's name, Redis's default
// without one.
func dbFilename(path string) string {
	if path == "" {
		return "dump.rdb"
	}
	return filepath.Base(path)
}

// configBool parses yes or no, as Redis's CONFIG SET.
func configBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, errors.New("argument must be 'yes' or 'no'")
}

// errNoConfigFile answers CONFIG REWRITE on a server started without a config file.
const errNoConfigFile = "ERR The server is running without a config file"

// rewriteConfig writes the CONFIG SET parameters and the replication role into
// Config.ConfigFile, keeping its comments and its other directives.
func (s *Server) rewriteConfig() error {
	s.tunMu.Lock()
	defer s.tunMu.Unlock()
	t := s.config()
	var set []conffile.Setting
	for _, p := range params {
		if p.set == nil || p.alias || p.name == "loglevel" && s.cfg.LogLevel == nil {
			continue
		}
		v := p.get(s, t)
		if p.name == "maxmemory-policy" {
			v = t.core.MaxMemoryPolicy.String() // what was set, in effect or not
		}
		set = append(set, conffile.Setting{Name: p.name, Args: []string{v}, Default: v == p.def})
	}
	set = append(set, conffile.Setting{Name: "replicaof", Args: s.replicaOfArgs()})
	if s.cfg.ACLFile == "" { // with an aclfile the users are its, as Redis's rewriteConfigUserOption
		set = append(set, s.userLines())
	}
	return conffile.Rewrite(s.cfg.ConfigFile, set)
}

// replicaOfArgs are a replica's primary host and port, nil on a primary.
func (s *Server) replicaOfArgs() []string {
	host, port := s.repl.Primary()
	if host == "" {
		return nil
	}
	return []string{host, strconv.Itoa(port)}
}

// configInt parses an integer parameter as Redis's CONFIG SET does: string2ll's
// syntax (parseInt64), then the bounds, each refused in Redis's words.
func configInt(v string, lo, hi int64) (int64, error) {
	n, ok := rlcmd.ParseInt([]byte(v))
	if !ok {
		return 0, errors.New("argument couldn't be parsed into an integer")
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
	}
	return n, nil
}

func getMinReplicas(_ *Server, t *tunables) string { return strconv.Itoa(t.minReplicas) }

func setMinReplicas(_ *Server, t *tunables, v string) error {
	n, err := configInt(v, 0, math.MaxInt32)
	t.minReplicas = int(n)
	return err
}

func getMinReplicasLag(_ *Server, t *tunables) string { return strconv.Itoa(t.minReplicasLag) }

func setMinReplicasLag(_ *Server, t *tunables, v string) error {
	n, err := configInt(v, 0, math.MaxInt32)
	t.minReplicasLag = int(n)
	return err
}
