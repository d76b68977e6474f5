package resp

import (
	"net"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/store"
)

// configParams are the parameters CONFIG GET knows: what redis-benchmark, redis-cli
// and client libraries ask, answered as a Redis without RDB or AOF would (rlserver's
// snapshot is its own format, set by -snapshot), plus rlserver's own.
func (s *Server) configParams() [][2]string {
	host, port := "", ""
	if a := s.Addr(); a != nil {
		host, port, _ = net.SplitHostPort(a.String())
	}
	tlsPort := "0"
	if a := s.TLSAddr(); a != nil {
		_, tlsPort, _ = net.SplitHostPort(a.String())
	}
	yesNo := map[bool]string{true: "yes", false: "no"}
	return [][2]string{
		{"save", ""},
		{"appendonly", "no"},
		{"maxmemory", strconv.FormatInt(s.cfg.MaxMemory, 10)},
		{"maxmemory-policy", s.memoryPolicy()},
		{"databases", "1"},
		{"bind", host},
		{"port", port},
		{"timeout", strconv.FormatInt(int64(s.cfg.IdleTimeout/time.Second), 10)},
		{"requirepass", s.cfg.RequirePass}, // in clear, as Redis answers it
		{"maxclients", strconv.Itoa(s.cfg.MaxClients)},
		{"proto-max-bulk-len", strconv.FormatInt(s.cfg.ProtoMaxBulkLen, 10)},
		{"tls-port", tlsPort},
		{"tls-cert-file", s.cfg.TLSCertFile},
		{"tls-key-file", s.cfg.TLSKeyFile},
		{"protected-mode", "no"},
		{"cluster-enabled", yesNo[s.cfg.Cluster != nil]},
		{"enable-debug-command", yesNo[s.cfg.EnableDebugCommand]},
		{"shards", strconv.Itoa(s.cfg.Shards)},
		{"max-log-limit", strconv.FormatInt(s.cfg.MaxLogLimit, 10)},
	}
}

// cmdConfigGet serves CONFIG GET pattern [pattern ...]: a map (RESP3) or flat
// array (RESP2) of the matching parameters, each once.
func cmdConfigGet(s *Server, c *client, args [][]byte, _ int64) {
	var found [][2]string
	for _, p := range s.configParams() {
		for _, pat := range args[2:] {
			if store.Match(pat, []byte(p[0]), true) {
				found = append(found, p)
				break
			}
		}
	}
	c.writeMap(len(found))
	for _, p := range found {
		c.w.WriteBulkString(p[0])
		c.w.WriteBulkString(p[1])
	}
}

// cmdConfigRewrite serves CONFIG REWRITE: there is no config file to rewrite (flags
// only), which is an error when it runs, as Redis's without one: inside Sentinel's
// MULTI the other commands still run.
func cmdConfigRewrite(_ *Server, c *client, _ [][]byte, _ int64) {
	c.writeError("ERR The server is running without a config file")
}
