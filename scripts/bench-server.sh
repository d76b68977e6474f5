#!/usr/bin/env bash
# Throughput of rlserver vs redis-server running the reference Lua scripts, measured by
# redis-benchmark in the same run on the same machine (loopback only, bounded by -n).
# Usage: scripts/bench-server.sh [requests]   (make bench-server builds bin/rlserver first)
set -euo pipefail
cd "$(dirname "$0")/.."

N=${1:-${BENCH_REQUESTS:-300000}}
CLIENTS=50
# Two client threads: one redis-benchmark thread saturates (~400k req/s at -P 16 here)
# before rlserver does, which would cap every ratio at the client's ceiling.
THREADS=${BENCH_THREADS:-2}
KEYSPACE=1000000
RL_PORT=${RL_PORT:-16380}
REDIS_PORT=${REDIS_PORT:-16379}
ALGOS=${BENCH_ALGOS:-"token fixed slide log"}

for tool in redis-server redis-cli redis-benchmark; do
  command -v "$tool" >/dev/null || { echo "$tool not found: apt-get install redis-server redis-tools" >&2; exit 1; }
done
[ -x bin/rlserver ] || go build -o bin/rlserver ./cmd/rlserver

tmp=$(mktemp -d)
cleanup() {
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  kill "$rl_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

bin/rlserver -addr "127.0.0.1:$RL_PORT" -loglevel warn &
rl_pid=$!
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
  --dir "$tmp" >/dev/null &
for port in "$RL_PORT" "$REDIS_PORT"; do
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
done

# bench PORT PIPELINE ARGS... prints "rps p50_ms p99_ms" from redis-benchmark's CSV line.
bench() {
  local port=$1 pipeline=$2; shift 2
  redis-benchmark -p "$port" --threads "$THREADS" -c "$CLIENTS" -r "$KEYSPACE" -n "$N" -P "$pipeline" --csv "$@" |
    awk -F'","' 'NR==2 { print $2, $5, $7 }'
}

printf '%-10s %3s %12s %12s %7s %9s %9s\n' algo P rlserver_rps redis_lua_rps ratio rl_p99 lua_p99
for algo in $ALGOS; do
  # A script is lua/common.lua followed by its body, as package lua builds it.
  sha=$(redis-cli -p "$REDIS_PORT" script load "$(cat lua/common.lua "lua/$algo.lua")")
  cmd=$(echo "RL.$algo" | tr '[:lower:]' '[:upper:]')
  # The scripts take cost and the PEEK flag positionally, and TOKEN its rate (0 = capacity).
  lua_args=(100 1000 1 0)
  [ "$algo" = token ] && lua_args+=(0)
  for pipeline in 1 16; do
    read -r rl_rps _ rl_p99 < <(bench "$RL_PORT" "$pipeline" "$cmd" "user:__rand_int__" 100 1000)
    read -r lua_rps _ lua_p99 < <(bench "$REDIS_PORT" "$pipeline" EVALSHA "$sha" 1 "user:__rand_int__" "${lua_args[@]}")
    ratio=$(awk -v a="$rl_rps" -v b="$lua_rps" 'BEGIN { printf "%.2f", a / b }')
    printf '%-10s %3s %12s %12s %6sx %9s %9s\n' "$algo" "$pipeline" "$rl_rps" "$lua_rps" "$ratio" "$rl_p99" "$lua_p99"
  done
done
# The ceiling for a RESP server on this machine: Redis's own INCR.
read -r incr_rps _ incr_p99 < <(bench "$REDIS_PORT" 16 INCR "counter:__rand_int__")
printf '%-10s %3s %12s %12s %7s %9s %9s\n' redis-incr 16 - "$incr_rps" - - "$incr_p99"
