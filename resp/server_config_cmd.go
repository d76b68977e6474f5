package resp

import (
	"github.com/rlserver/rlserver/store"
)

// cmdConfigGet serves CONFIG GET pattern [pattern ...]: a map (RESP3) or flat
// array (RESP2) of the matching parameters, each once.
func cmdConfigGet(s *Server, c *client, args [][]byte, _ int64) {
	t := s.config()
	var found [][2]string
	for _, p := range params {
		for _, pat := range args[2:] {
			if store.Match(pat, []byte(p.name), true) {
				found = append(found, [2]string{p.name, p.get(s, t)})
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

// cmdConfigSet serves CONFIG SET name value [name value ...]: all of them, or on
// any error none.
func cmdConfigSet(s *Server, c *client, args [][]byte, _ int64) {
	if len(args)%2 != 0 {
		c.writeError("ERR wrong number of arguments for 'config|set' command")
		return
	}
	if err := s.setConfig(args[2:]); err != nil {
		c.writeError(err.Error())
		return
	}
	c.w.WriteString("OK")
}

// cmdConfigRewrite serves CONFIG REWRITE: the running settings into the config file.
// Without one it is an error when it runs, as Redis's: inside Sentinel's MULTI the
// other commands still run.
func cmdConfigRewrite(s *Server, c *client, _ [][]byte, _ int64) {
	if s.cfg.ConfigFile == "" {
		c.writeError(errNoConfigFile)
		return
	}
	if err := s.rewriteConfig(); err != nil {
		s.log.Error("CONFIG REWRITE failed", "file", s.cfg.ConfigFile, "err", err)
		c.writeError("ERR Rewriting config file: " + err.Error())
		return
	}
	s.log.Info("CONFIG REWRITE executed with success", "file", s.cfg.ConfigFile)
	c.w.WriteString("OK")
}

// cmdConfigResetStat serves CONFIG RESETSTAT: INFO's counters start again from zero.
func cmdConfigResetStat(s *Server, c *client, _ [][]byte, _ int64) {
	s.resetStats()
	c.w.WriteString("OK")
}
