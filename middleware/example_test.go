package middleware_test

import (
	"log"
	"net/http"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/middleware"
)

// A Go service limited by the policy its gateway asks /check about
// (/check?domain=edge&descriptor=remote_address): the snippet of docs/gateway.md.
func ExampleConfig_policy() {
	rl, err := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380"}))
	if err != nil {
		log.Fatal(err)
	}
	lim, err := middleware.New(middleware.Config{
		Client:         rl,
		TrustedProxies: []string{"10.0.0.0/8"},
		Policy:         &middleware.Policy{Domain: "edge", Descriptors: []string{"remote_address"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	log.Fatal(http.ListenAndServe(":8000", lim.Handler(app)))
}
