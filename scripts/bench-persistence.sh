#!/usr/bin/env bash
# The append-only log's cost, measured by redis-benchmark in the same run on the same
# disk: RL.TOKEN at -P 16 and -P 1 with appendfsync everysec against no persistence;
# with appendfsync always against Redis's own INCR with appendfsync always, beside the
# ceilings of three server models that do nothing but log, sync and answer; then the
# start-up replay of a log of KEYS keys against loading a snapshot of the same keys.
# Servers on CPU 0, redis-benchmark on CPU 1 (taskset).
# Usage: scripts/bench-persistence.sh [requests]   (make bench-persistence)
set -euo pipefail
cd "$(dirname "$0")/.."

N=${1:-${BENCH_REQUESTS:-200000}}
KEYS=${BENCH_KEYS:-1000000}
CLIENTS=50
PORT=${RL_PORT:-16390}
for tool in redis-server redis-cli redis-benchmark taskset; do
  command -v "$tool" >/dev/null || { echo "$tool not found: apt-get install redis-server redis-tools util-linux" >&2; exit 1; }
done
[ -x bin/rlserver ] || go build -o bin/rlserver ./cmd/rlserver
tmp=$(mktemp -d "${BENCH_DIR:-/var/tmp}/bench-persistence.XXXXXX") # a real disk, not /tmp's tmpfs
go build -C cmd/rlbench -o "$tmp/rlbench" .
pid=""
stop() { [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; pid=""; }
trap 'stop; rm -rf "$tmp"' EXIT

# start NAME ARGS...: a server on PORT in a fresh directory, pinned to CPU 0; waits for PING,
# 15 s plus a second per 100,000 KEYS (a replay of KEYS keys answers only once loaded).
start() {
  local name=$1; shift
  rm -rf "$tmp/$name"; mkdir -p "$tmp/$name"
  taskset -c 0 "$@" >"$tmp/$name.log" 2>&1 &
  pid=$!
  local deadline=$((SECONDS + 15 + KEYS / 100000))
  while [ "$SECONDS" -lt "$deadline" ]; do redis-cli -p "$PORT" ping >/dev/null 2>&1 && return; sleep 0.05; done
  echo "$name did not start:"; cat "$tmp/$name.log"; exit 1
}
rl() { start "$1" bin/rlserver -addr "127.0.0.1:$PORT" -loglevel warn --dir "$tmp/$1" "${@:2}"; }
redis() { start "$1" redis-server --port "$PORT" --bind 127.0.0.1 --save '' --dir "$tmp/$1" "${@:2}"; }

# bench PIPELINE ARGS... prints requests/s from redis-benchmark's CSV line.
bench() {
  local p=$1; shift
  taskset -c 1 redis-benchmark -p "$PORT" -c "$CLIENTS" -r 1000000 -n "$N" -P "$p" --csv "$@" |
    awk -F'","' 'NR==2 { print int($2) }'
}
token=(RL.TOKEN "user:__rand_int__" 100 1000)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

printf '%-44s %3s %10s %10s %7s\n' case P rps anchor_rps ratio
for p in 16 1; do
  rl none; base=$(bench "$p" "${token[@]}"); stop
  rl everysec --appendonly yes --appendfsync everysec; got=$(bench "$p" "${token[@]}"); stop
  printf '%-44s %3s %10s %10s %7s\n' "RL.TOKEN everysec vs no persistence" "$p" "$got" "$base" "$(ratio "$got" "$base")"
done
for p in 16 1; do
  redis redis-always --appendonly yes --appendfsync always; base=$(bench "$p" INCR "c:__rand_int__"); stop
  rl always --appendonly yes --appendfsync always; got=$(bench "$p" "${token[@]}"); stop
  printf '%-44s %3s %10s %10s %7s\n' "RL.TOKEN always vs Redis INCR always" "$p" "$got" "$base" "$(ratio "$got" "$base")"
  # The ceiling of each server model under always: rlbench groupcommit logs a record a
  # command, syncs and answers, doing no command's work, with a goroutine a connection
  # (conns: rlserver's model), with the syncer writing the answers (writer), and in
  # Redis's one-thread event loop (loop).
  for model in conns writer loop; do
    start "groupcommit-$model" "$tmp/rlbench" groupcommit -model "$model" -addr "127.0.0.1:$PORT" -file "$tmp/groupcommit-$model/log"
    got=$(bench "$p" INCR "c:__rand_int__" 2>/dev/null); stop # it answers no CONFIG GET: redis-benchmark warns
    printf '%-44s %3s %10s %10s %7s\n' "groupcommit $model vs Redis INCR always" "$p" "$got" "$base" "$(ratio "$got" "$base")"
  done
done

# Replay: the time from the start of the process to its first PONG, for a log against
# a snapshot of the same keys, in two shapes. "once": KEYS keys written once each (a
# log of KEYS records, no rewrite). "3x, rewrites": KEYS*3 calls on random keys of
# KEYS with the default auto-rewrite, so the log is a base and the increment since its
# last rewrite, as a server left at its defaults keeps it.
since() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }
# once: RL.FIXED on k:0 to k:KEYS-1, one call each, through redis-cli --pipe.
once() {
  awk -v n="$KEYS" 'BEGIN { for (i = 0; i < n; i++) { k = "k:" i
    printf "*4\r\n$8\r\nRL.FIXED\r\n$%d\r\n%s\r\n$4\r\n1000\r\n$7\r\n3600000\r\n", length(k), k } }' |
    taskset -c 1 redis-cli -p "$PORT" --pipe >/dev/null
}
thrice() {
  taskset -c 1 redis-benchmark -p "$PORT" -c "$CLIENTS" -r "$KEYS" -n "$((KEYS * 3))" -P 64 -q \
    RL.FIXED "k:__rand_int__" 1000 3600000 >/dev/null
}
# replay NAME LOAD CALLS REWRITE-ARGS...: LOAD into a logging server, then the restart
# from its log against a start from a snapshot of the same keys.
replay() {
  local name=$1 load=$2 calls=$3; shift 3
  rl "$name" --appendonly yes "$@" --snapshot "$tmp/$name.snap"
  "$load"
  redis-cli -p "$PORT" save >/dev/null
  local keys logbytes snapbytes aof_s snap_s
  keys=$(redis-cli -p "$PORT" dbsize)
  logbytes=$(du -cb "$tmp/$name/appendonlydir" | tail -1 | cut -f1)
  snapbytes=$(stat -c %s "$tmp/$name.snap")
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; wait "$pid" 2>/dev/null || true; pid=""
  mv "$tmp/$name" "$tmp/$name-log"
  t0=$(date +%s.%N); rl "$name-replay" --dir "$tmp/$name-log" --appendonly yes "$@"; aof_s=$(since "$t0")
  [ "$(redis-cli -p "$PORT" dbsize)" = "$keys" ] || { echo "the log replayed $(redis-cli -p "$PORT" dbsize) keys, not $keys"; exit 1; }
  stop
  mv "$tmp/$name.snap" "$tmp/$name-load.snap"
  t0=$(date +%s.%N); rl "$name-load" --snapshot "$tmp/$name-load.snap"; snap_s=$(since "$t0")
  [ "$(redis-cli -p "$PORT" dbsize)" = "$keys" ] || { echo "the snapshot loaded $(redis-cli -p "$PORT" dbsize) keys, not $keys"; exit 1; }
  stop
  rm -rf "$tmp/$name-log" "$tmp/$name-load.snap"
  printf 'replay of %s keys (%s): log %s bytes (%s calls) in %ss, snapshot %s bytes in %ss: %s\n' "$keys" "$name" \
    "$logbytes" "$calls" "$aof_s" "$snapbytes" "$snap_s" "$(ratio "$aof_s" "$snap_s")"
}
echo
replay once once "$KEYS" --auto-aof-rewrite-percentage 0
replay 3x-rewrites thrice "$((KEYS * 3))"

# Log bytes per decision: N RL.TOKEN decisions over 1M users into rlserver's log, and
# the same decisions by the reference Lua script (lua/common.lua + lua/token.lua) into
# Redis's AOF (no rewrite on either side, so every write is in the log).
rl bytes --appendonly yes --auto-aof-rewrite-percentage 0
taskset -c 1 redis-benchmark -p "$PORT" -c "$CLIENTS" -r 1000000 -n "$N" -P 16 -q "${token[@]}" >/dev/null
rlbytes=$(du -cb "$tmp/bytes/appendonlydir" | tail -1 | cut -f1)
stop
redis redis-bytes --appendonly yes --auto-aof-rewrite-percentage 0
cat lua/common.lua lua/token.lua >"$tmp/token.lua"
sha=$(redis-cli -p "$PORT" script load "$(cat "$tmp/token.lua")")
taskset -c 1 redis-benchmark -p "$PORT" -c "$CLIENTS" -r 1000000 -n "$N" -P 16 -q \
  EVALSHA "$sha" 1 "user:__rand_int__" 100 1000 1 0 0 >/dev/null
redisbytes=$(du -cb "$tmp/redis-bytes/appendonlydir" | tail -1 | cut -f1)
stop
awk -v n="$N" -v a="$rlbytes" -v b="$redisbytes" 'BEGIN {
  printf "log bytes per decision, %d RL.TOKEN: rlserver %.1f, Redis + Lua AOF %.1f: %.2fx\n", n, a / n, b / n, a / b }'
