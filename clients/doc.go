// Package clients holds no code: its tests drive listening rlserver processes (one
// server, a cluster of three nodes, a primary with replicas behind three Redis
// Sentinels) with the client libraries users have — redis-py, ioredis, node-redis and
// redis-cli — and hold the replies to Redis's and to the algorithms' known answers.
//
// The scripts they run are in testdata/ (so that Go ignores their node_modules):
// package.json and package-lock.json pin ioredis and node-redis (`npm ci --prefix
// clients/testdata` installs them), redis-py is Debian's python3-redis. Without a
// library the tests skip, saying how to install it; under CI=true or
// RLSERVER_REQUIRE_REDIS=1 they fail instead.
//
//	go test -count=1 -v ./clients/
package clients
