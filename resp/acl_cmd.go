package resp

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/internal/conffile"
	"github.com/rlserver/rlserver/internal/rlcmd"
)

// Replies of ACL, as Redis 7.0 words them.
const (
	errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users " +
		"via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration " +
		"file set) in order to store users in the Redis configuration."
	errACLSave = "ERR There was an error trying to save the ACLs. Please check the server logs for more information"
)

// DefaultACLLogMaxLen is how many entries ACL LOG keeps, Redis's acllog-max-len.
const DefaultACLLogMaxLen = 128

// initACL builds the users: the default user with requirepass, then the config
// file's `user` directives or the aclfile's users, as Redis loads them at start.
func (s *Server) initACL() error {
	s.acl = acl.NewRegistry(aclTable)
	s.acl.SetDefaultPassword(s.cfg.RequirePass)
	s.aclLog = acl.NewLog(s.tun.Load().aclLogLen)
	if len(s.cfg.Users) > 0 && s.cfg.ACLFile != "" {
		return errors.New("resp: Configuring Redis with users defined in redis.conf and at the same setting an ACL " +
			"file path is invalid: define either an aclfile or users in the config file, not both")
	}
	if len(s.cfg.Users) > 0 {
		conf := acl.NewConfig(aclTable)
		for _, d := range s.cfg.Users {
			if err := conf.Add(d.Args); err != nil {
				return fmt.Errorf("%s: %v", d.Where, err)
			}
		}
		users := conf.Users()
		if users["default"] == nil {
			users["default"] = s.acl.Default().Perms()
		}
		s.acl.Replace(users)
	}
	if s.cfg.ACLFile != "" {
		users, err := s.readACLFile()
		if err != nil {
			return fmt.Errorf("resp: Aborting Redis startup because of ACL errors: %v", err)
		}
		s.acl.Replace(users)
	}
	return nil
}

// userLines are CONFIG REWRITE's user directives, one per user as ACL LIST
// shows it, as Redis's rewriteConfigUserOption.
func (s *Server) userLines() conffile.Setting {
	var lines [][]string
	for _, l := range s.acl.List() {
		lines = append(lines, strings.Fields(l)[1:])
	}
	return conffile.Setting{Name: "user", Lines: lines, Keyed: true, Default: s.acl.Pristine()}
}

// readACLFile parses the aclfile, all of it or nothing.
func (s *Server) readACLFile() (map[string]*acl.Perms, error) {
	data, err := os.ReadFile(s.cfg.ACLFile)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("Error loading ACLs, opening file '%s': %v", s.cfg.ACLFile, err)
	}
	return acl.ParseFile(aclTable, s.cfg.ACLFile, data)
}

// cmdACLSetUser changes a user; its connections subscribed where the new rules do
// not allow close, the caller's own after its reply, as Redis's.
func cmdACLSetUser(s *Server, c *client, args [][]byte, _ int64) {
	rules := make([]string, len(args)-3)
	for i, a := range args[3:] {
		rules[i] = string(a)
	}
	if err := s.acl.SetUser(string(args[2]), rules); err != nil {
		c.writeError("ERR " + err.Error())
		return
	}
	self := s.dropSubscribers(c, s.acl.User(string(args[2])))
	c.w.WriteString("OK")
	closeAfterReply(c, self)
}

// cmdACLDelUser deletes users; their connections close, the caller's own after
// its reply, as Redis's.
func cmdACLDelUser(s *Server, c *client, args [][]byte, _ int64) {
	names := make([]string, len(args)-2)
	for i, a := range args[2:] {
		names[i] = string(a)
	}
	gone, err := s.acl.DelUser(names)
	if err != nil {
		c.writeError("ERR " + err.Error())
		return
	}
	c.w.WriteInt64(int64(len(gone)))
	closeAfterReply(c, s.dropUsers(c, gone))
}

func cmdACLGetUser(s *Server, c *client, args [][]byte, _ int64) {
	u := s.acl.User(string(args[2]))
	if u == nil {
		c.writeNull()
		return
	}
	p := u.Perms()
	c.writeMap(6)
	c.w.WriteBulkString("flags")
	flags := p.Flags()
	c.writeSet(len(flags))
	for _, f := range flags {
		c.w.WriteBulkString(f)
	}
	c.w.WriteBulkString("passwords")
	c.w.WriteArray(len(p.Passwords()))
	for _, h := range p.Passwords() {
		c.w.WriteBulkString(h)
	}
	c.w.WriteBulkString("commands")
	c.w.WriteBulkString(p.CommandRules())
	c.w.WriteBulkString("keys")
	c.w.WriteBulkString(p.Keys())
	c.w.WriteBulkString("channels")
	c.w.WriteBulkString(p.Channels())
	c.w.WriteBulkString("selectors")
	c.w.WriteArray(0)
}

func cmdACLList(s *Server, c *client, _ [][]byte, _ int64) {
	lines := s.acl.List()
	c.w.WriteArray(len(lines))
	for _, l := range lines {
		c.w.WriteBulkString(l)
	}
}

func cmdACLUsers(s *Server, c *client, _ [][]byte, _ int64) {
	names := s.acl.Names()
	c.w.WriteArray(len(names))
	for _, n := range names {
		c.w.WriteBulkString(n)
	}
}

func cmdACLWhoAmI(_ *Server, c *client, _ [][]byte, _ int64) {
	c.w.WriteBulkString(c.user.Load().Name())
}

func cmdACLCat(_ *Server, c *client, args [][]byte, _ int64) {
	if len(args) > 3 {
		c.writeError(aclSyntaxError(args))
		return
	}
	if len(args) == 2 {
		c.w.WriteArray(len(acl.Categories))
		for _, cat := range acl.Categories {
			c.w.WriteBulkString(cat)
		}
		return
	}
	names, ok := aclTable.InCategory(string(args[2]))
	if !ok {
		c.writeError(fmt.Sprintf("ERR Unknown category '%.128s'", args[2]))
		return
	}
	c.w.WriteArray(len(names))
	for _, n := range names {
		c.w.WriteBulkString(n)
	}
}

// aclSyntaxError is Redis's refusal of an ACL subcommand's extra arguments, the
// subcommand as the client typed it.
func aclSyntaxError(args [][]byte) string {
	return fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try ACL HELP.", args[1])
}

// genPassMaxBits is the largest ACL GENPASS takes, Redis's.
const genPassMaxBits = 4096

func cmdACLGenPass(_ *Server, c *client, args [][]byte, _ int64) {
	if len(args) > 3 {
		c.writeError(aclSyntaxError(args))
		return
	}
	bits := int64(256)
	if len(args) == 3 {
		n, ok := rlcmd.ParseInt(args[2])
		if !ok {
			c.writeError(errNotInteger)
			return
		}
		bits = n
	}
	if bits <= 0 || bits > genPassMaxBits {
		c.writeError(fmt.Sprintf("ERR ACL GENPASS argument must be the number of bits for the output password, "+
			"a positive number up to %d", genPassMaxBits))
		return
	}
	chars := (bits + 3) / 4
	buf := make([]byte, (chars+1)/2)
	_, _ = rand.Read(buf) // crypto/rand does not fail on Linux
	c.w.WriteBulkString(hex.EncodeToString(buf)[:chars])
}

// cmdACLLog serves ACL LOG [count|RESET] with Redis 7.2's fields.
func cmdACLLog(s *Server, c *client, args [][]byte, _ int64) {
	if len(args) > 3 {
		c.writeError(aclSyntaxError(args))
		return
	}
	count := int64(10)
	if len(args) == 3 {
		if strings.EqualFold(string(args[2]), "reset") {
			s.aclLog.Reset()
			c.w.WriteString("OK")
			return
		}
		n, ok := rlcmd.ParseInt(args[2])
		if !ok {
			c.writeError(errNotInteger)
			return
		}
		count = max(n, 0)
	}
	entries := s.aclLog.Entries(int(min(count, 1<<30)))
	now := time.Now()
	c.w.WriteArray(len(entries))
	for _, e := range entries {
		c.writeMap(10)
		c.w.WriteBulkString("count")
		c.w.WriteInt64(e.Count)
		for _, kv := range [][2]string{{"reason", e.Reason}, {"context", e.Context}, {"object", e.Object}, {"username", e.Username}} {
			c.w.WriteBulkString(kv[0])
			c.w.WriteBulkString(kv[1])
		}
		c.w.WriteBulkString("age-seconds")
		c.writeDouble(float64(now.Sub(e.Updated).Milliseconds()) / 1000)
		c.w.WriteBulkString("client-info")
		c.w.WriteBulkString(e.ClientInfo)
		c.w.WriteBulkString("entry-id")
		c.w.WriteInt64(e.ID)
		c.w.WriteBulkString("timestamp-created")
		c.w.WriteInt64(e.Created.UnixMilli())
		c.w.WriteBulkString("timestamp-last-updated")
		c.w.WriteInt64(e.Updated.UnixMilli())
	}
}

// writeDouble writes a double: RESP3's, or in RESP2 a bulk string, as Redis does.
func (c *client) writeDouble(f float64) {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if c.resp3() {
		c.w.WriteRaw([]byte("," + s + "\r\n"))
		return
	}
	c.w.WriteBulkString(s)
}

// cmdACLDryRun serves ACL DRYRUN user command [arg ...] with Redis's replies: OK,
// or a bulk string saying what the user may not do.
func cmdACLDryRun(s *Server, c *client, args [][]byte, _ int64) {
	u := s.acl.User(string(args[2]))
	if u == nil {
		c.writeError(fmt.Sprintf("ERR User '%s' not found", args[2]))
		return
	}
	call := args[3:]
	cm := lookup(commandIndex, call[0])
	if cm != nil && cm.subs != nil && len(call) > 1 {
		cm = lookup(cm.subIndex, call[1])
	}
	if cm == nil {
		c.writeError(fmt.Sprintf("ERR Command '%s' not found", call[0]))
		return
	}
	if cm.arity > 0 && len(call) != cm.arity || len(call) < -cm.arity {
		c.writeError(fmt.Sprintf("ERR wrong number of arguments for '%s' command", cm.full))
		return
	}
	reason, object := aclCheck(u.Perms(), cm, call)
	switch reason {
	case "":
		c.w.WriteString("OK")
	case acl.ReasonCommand:
		c.w.WriteBulkString(fmt.Sprintf("This user has no permissions to run the '%s' command", object))
	default:
		c.w.WriteBulkString(fmt.Sprintf("This user has no permissions to access the '%s' %s", object, reason))
	}
}

// cmdACLLoad replaces the users with the aclfile's, all or none; the connections
// of the users replaced close, as Redis's.
func cmdACLLoad(s *Server, c *client, _ [][]byte, _ int64) {
	if s.cfg.ACLFile == "" {
		c.writeError(errNoACLFile)
		return
	}
	s.aclMu.Lock()
	defer s.aclMu.Unlock()
	users, err := s.readACLFile()
	if err != nil {
		c.writeError("ERR " + err.Error())
		return
	}
	gone := s.acl.Replace(users)
	c.w.WriteString("OK")
	closeAfterReply(c, s.dropUsers(c, gone))
}

// cmdACLSave writes the users to the aclfile: a temporary file renamed over it, so
// that a crash leaves the old file or the new one; 0644 as Redis's.
func cmdACLSave(s *Server, c *client, _ [][]byte, _ int64) {
	if s.cfg.ACLFile == "" {
		c.writeError(errNoACLFile)
		return
	}
	s.aclMu.Lock()
	defer s.aclMu.Unlock()
	if err := conffile.WriteAtomic(s.cfg.ACLFile, []byte(s.acl.Save()), 0o644); err != nil {
		s.log.Warn("ACL SAVE", "path", s.cfg.ACLFile, "err", err)
		c.writeError(errACLSave)
		return
	}
	c.w.WriteString("OK")
}
