//go:build rlserver_pprof

// Built with -tags rlserver_pprof (scripts/bench-server.sh does, for its per-core
// rows), rlserver serves net/http/pprof at the address in RLSERVER_PPROF, for
// `go tool pprof http://ADDR/debug/pprof/profile`. The default build has no such
// endpoint: a profiling port is not something to leave open by a flag's mistake.

package main

import (
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
)

func init() {
	if addr := os.Getenv("RLSERVER_PPROF"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
