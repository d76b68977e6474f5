// Command quickstart limits an HTTP handler with rlserver: 20 requests a second per
// client address (bursts of 40), 500 a second per user, and answers 429 with
// Retry-After past either.
package main

import (
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/middleware"
)

func main() {
	rl, err := client.Open("redis://127.0.0.1:6380/") // rediss://user:pass@host:6380/ for TLS and ACL
	if err != nil {
		log.Fatal(err)
	}
	lim, err := middleware.New(middleware.Config{
		Client: rl,
		User:   func(r *http.Request) string { return r.Header.Get("X-User-ID") },
		Dimensions: []middleware.Dimension{
			{Name: "ip", By: middleware.ByIP, Limit: client.GCRA(20, time.Second, 40)},
			{Name: "user", By: middleware.ByUser, Limit: client.Token(500, time.Second)},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:8000", lim.Handler(hello)))
}
