#!/usr/bin/env bash
# Throughput of rlserver vs redis-server running the reference Lua scripts, measured by
# redis-benchmark in the same run on the same machine (loopback only, bounded by -n).
# Usage: scripts/bench-server.sh [requests]   (make bench-server builds bin/rlserver first)
#        BENCH_ALGOS="all3 acquire" scripts/bench-server.sh   (only those rows)
# The percore rows pin each server to CPU 0 and redis-benchmark to CPU 1 (taskset):
# RL.TOKEN against Redis's INCR, SET PX and PING on one core each, and the share of
# rlserver's CPU spent in expiry, from a CPU profile of a build with -tags
# rlserver_pprof (cmd/rlserver/pprof.go; the default build serves no profile).
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
# Rows: an algorithm (RL.<ALGO>), all3 (RL.ALL of three rules), acquire (RL.ACQUIRE), acl
# (RL.TOKEN at -P 16 as an ACL user of 10 key patterns against the default user), or
# reserve (RL.TOKEN at -P 16 with RESERVE 20 against without).
ALGOS=${BENCH_ALGOS:-"token fixed slide log all3 acquire acl reserve percore"}
PERCORE_PORT=${PERCORE_PORT:-16381}
PPROF_PORT=${PPROF_PORT:-16382}
# The acl row's user: ten key patterns, the keys matching the last, so that each call
# checks all ten; CONFIG GET for redis-benchmark's look at the server's settings.
ACL_USER="bench on >benchpass ~t0:* ~t1:* ~t2:* ~t3:* ~t4:* ~t5:* ~t6:* ~t7:* ~t8:* ~user:* +@ratelimit +config|get"

for tool in redis-server redis-cli redis-benchmark; do
  command -v "$tool" >/dev/null || { echo "$tool not found: apt-get install redis-server redis-tools" >&2; exit 1; }
done
[ -x bin/rlserver ] || go build -o bin/rlserver ./cmd/rlserver

tmp=$(mktemp -d)
# rlbench prints each command's reference script (lua.Named), as package lua builds it.
go build -C cmd/rlbench -o "$tmp/rlbench" . || { rm -rf "$tmp"; exit 1; }
pc_pid=
cleanup() {
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  kill "$rl_pid" $pc_pid 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

bin/rlserver -addr "127.0.0.1:$RL_PORT" -loglevel warn -user "$ACL_USER" &
rl_pid=$!
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
  --dir "$tmp" >/dev/null &
redis_pid=$!
for port in "$RL_PORT" "$REDIS_PORT"; do
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
done

# bench PORT PIPELINE ARGS... prints "rps p50_ms p99_ms" from redis-benchmark's CSV line;
# $CLIENT_CPU (the percore rows' taskset) pins it.
CLIENT_CPU=
bench() {
  local port=$1 pipeline=$2; shift 2
  $CLIENT_CPU redis-benchmark -p "$port" --threads "$THREADS" -c "$CLIENTS" -r "$KEYSPACE" -n "$N" -P "$pipeline" --csv "$@" |
    awk -F'","' 'NR==2 { print $2, $5, $7 }'
}

# check PORT ARGS... sends the call once (a fixed key for __rand_int__) and stops the run
# if it answers an error: redis-benchmark counts error replies as served requests.
check() {
  local port=$1 reply; shift
  reply=$(redis-cli --no-raw -p "$port" "${@//__rand_int__/check}")
  if [[ $reply == "(error)"* ]]; then echo "port $port: $*: $reply" >&2; exit 1; fi
}

printf '%-10s %3s %12s %12s %7s %9s %9s\n' algo P rlserver_rps redis_lua_rps ratio rl_p99 lua_p99
for algo in $ALGOS; do
  [ "$algo" = acl ] || [ "$algo" = reserve ] || [ "$algo" = percore ] && continue # after the loop: their columns differ
  # rl_cmd is the call on rlserver; script, lua_keys and lua_args the same call as EVALSHA
  # of the reference script on Redis (its ARGV layout: lua/lua.go's package comment).
  case $algo in
    all3)
      rl_cmd=(RL.ALL FIXED "user:__rand_int__" 100 1000 TOKEN "ip:__rand_int__" 100 1000
        GCRA "route:__rand_int__" 100 1000)
      script=rl.all
      lua_keys=("user:__rand_int__" "ip:__rand_int__" "route:__rand_int__")
      # The call's PEEK flag, then each rule's script name and ARGV (lua.ArgsAll).
      lua_args=(0 rl.fixed 100 1000 1 0 rl.token 100 1000 1 0 0 rl.gcra 100 1000 1 0 0) ;;
    acquire)
      rl_cmd=(RL.ACQUIRE "lease:__rand_int__" 100 1000)
      script=rl.acquire
      lua_keys=("lease:__rand_int__")
      lua_args=(100 1000 '') ;; # limit lease_ms id ('' = draw one, as RL.ACQUIRE without ID)
    *)
      rl_cmd=("RL.$(echo "$algo" | tr '[:lower:]' '[:upper:]')" "user:__rand_int__" 100 1000)
      script=rl.$algo
      lua_keys=("user:__rand_int__")
      # The scripts take cost and the PEEK flag positionally, then TOKEN its rate (0 =
      # capacity), GCRA its burst (0 = limit), LEAKY its queue (default 0).
      lua_args=(100 1000 1 0)
      case $algo in token | gcra | leaky) lua_args+=(0) ;; esac ;;
  esac
  # -x sends the source whole (its last newline too): the SHA1 is lua.Named's one. With
  # pipefail an unknown name stops the run, rlbench saying which names it knows.
  sha=$("$tmp/rlbench" script "$script" | redis-cli -p "$REDIS_PORT" -x script load)
  check "$RL_PORT" "${rl_cmd[@]}"
  check "$REDIS_PORT" EVALSHA "$sha" "${#lua_keys[@]}" "${lua_keys[@]}" "${lua_args[@]}"
  for pipeline in 1 16; do
    read -r rl_rps _ rl_p99 < <(bench "$RL_PORT" "$pipeline" "${rl_cmd[@]}")
    read -r lua_rps _ lua_p99 < <(bench "$REDIS_PORT" "$pipeline" EVALSHA "$sha" "${#lua_keys[@]}" "${lua_keys[@]}" "${lua_args[@]}")
    ratio=$(awk -v a="$rl_rps" -v b="$lua_rps" 'BEGIN { printf "%.2f", a / b }')
    printf '%-10s %3s %12s %12s %6sx %9s %9s\n' "$algo" "$pipeline" "$rl_rps" "$lua_rps" "$ratio" "$rl_p99" "$lua_p99"
  done
done
# acl: the same RL.TOKEN on rlserver as the ACL user and as the default user, twice in
# turn, so that a drift of the machine shows as rows that disagree.
if [[ " $ALGOS " == *" acl "* ]]; then
  acl_cmd=(RL.TOKEN "user:__rand_int__" 100 1000)
  check "$RL_PORT" --user bench --pass benchpass --no-auth-warning "${acl_cmd[@]}"
  printf '%-10s %3s %12s %12s %7s %9s %9s\n' acl P acl_user_rps default_rps ratio acl_p99 def_p99
  for _ in 1 2; do
    read -r acl_rps _ acl_p99 < <(bench "$RL_PORT" 16 --user bench -a benchpass "${acl_cmd[@]}")
    read -r def_rps _ def_p99 < <(bench "$RL_PORT" 16 "${acl_cmd[@]}")
    ratio=$(awk -v a="$acl_rps" -v b="$def_rps" 'BEGIN { printf "%.2f", a / b }')
    printf '%-10s %3s %12s %12s %6sx %9s %9s\n' acl 16 "$acl_rps" "$def_rps" "$ratio" "$acl_p99" "$def_p99"
  done
fi
# reserve: RL.TOKEN with RESERVE 20 (a sheddable class's call) and without, twice in
# turn, as the acl rows are.
if [[ " $ALGOS " == *" reserve "* ]]; then
  res_cmd=(RL.TOKEN "user:__rand_int__" 100 1000)
  check "$RL_PORT" "${res_cmd[@]}" RESERVE 20
  printf '%-10s %3s %12s %12s %7s %9s %9s
' reserve P reserve_rps plain_rps ratio res_p99 plain_p99
  for _ in 1 2; do
    read -r res_rps _ res_p99 < <(bench "$RL_PORT" 16 "${res_cmd[@]}" RESERVE 20)
    read -r plain_rps _ plain_p99 < <(bench "$RL_PORT" 16 "${res_cmd[@]}")
    ratio=$(awk -v a="$res_rps" -v b="$plain_rps" 'BEGIN { printf "%.2f", a / b }')
    printf '%-10s %3s %12s %12s %6sx %9s %9s
' reserve 16 "$res_rps" "$plain_rps" "$ratio" "$res_p99" "$plain_p99"
  done
fi
# The ceiling for a RESP server on this machine: Redis's own INCR.
read -r incr_rps _ incr_p99 < <(bench "$REDIS_PORT" 16 INCR "counter:__rand_int__")
printf '%-10s %3s %12s %12s %7s %9s %9s\n' redis-incr 16 - "$incr_rps" - - "$incr_p99"

# percore: rlserver and Redis on one core each, in the same run, the targets of issue 41:
# RL.TOKEN at -P 16 against Redis's INCR (a keyed write without a TTL) and SET PX (the
# cheapest keyed write with one), at -P 1 against PING; then a CPU profile of rlserver
# over a second RL.TOKEN -P 16 run: the share under ttl.(*Wheel).Advance, which every
# expiry goes through (the wheels' walks and the removals), or under store.(*Store).Expire,
# the background pass that also takes each shard's lock and frees idle chunks. Needs
# taskset, curl, 2 CPUs.
if [[ " $ALGOS " == *" percore "* ]]; then
  if ! command -v taskset >/dev/null || ! command -v curl >/dev/null || [ "$(getconf _NPROCESSORS_ONLN)" -lt 2 ]; then
    echo "percore: needs taskset, curl and 2 CPUs (BENCH_ALGOS without percore runs the rest)" >&2
    exit 1
  fi
  go build -tags rlserver_pprof -o "$tmp/rlserver-pprof" ./cmd/rlserver
  RLSERVER_PPROF="127.0.0.1:$PPROF_PORT" taskset -c 0 "$tmp/rlserver-pprof" \
    -addr "127.0.0.1:$PERCORE_PORT" -loglevel warn &
  pc_pid=$!
  taskset -acp 0 "$redis_pid" >/dev/null
  for _ in $(seq 50); do redis-cli -p "$PERCORE_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  CLIENT_CPU="taskset -c 1"
  tok=(RL.TOKEN "user:__rand_int__" 100 1000)
  check "$PERCORE_PORT" "${tok[@]}"
  printf '%-10s %3s %12s %12s %7s %9s %9s\n' percore P rlserver_rps redis_rps ratio rl_p99 redis_p99
  # row LABEL PIPELINE REDIS_ARGS... : RL.TOKEN on rlserver, then REDIS_ARGS on Redis.
  row() {
    local label=$1 pipeline=$2; shift 2
    read -r rl_rps _ rl_p99 < <(bench "$PERCORE_PORT" "$pipeline" "${tok[@]}")
    read -r redis_rps _ redis_p99 < <(bench "$REDIS_PORT" "$pipeline" "$@")
    ratio=$(awk -v a="$rl_rps" -v b="$redis_rps" 'BEGIN { printf "%.2f", a / b }')
    printf '%-10s %3s %12s %12s %6sx %9s %9s\n' "$label" "$pipeline" "$rl_rps" "$redis_rps" "$ratio" "$rl_p99" "$redis_p99"
  }
  row vs-incr 16 INCR "counter:__rand_int__"
  row vs-setpx 16 SET "key:__rand_int__" 1 PX 2000
  row vs-ping 1 PING
  # The profile covers 3 s from the second second of a run of 6N calls (6 s at 300k/s).
  secs=3
  (sleep 1; curl -s -o "$tmp/cpu.pb.gz" "http://127.0.0.1:$PPROF_PORT/debug/pprof/profile?seconds=$secs") &
  prof_pid=$!
  N=$((6 * N)) bench "$PERCORE_PORT" 16 "${tok[@]}" >/dev/null
  wait "$prof_pid"
  # -focus keeps the samples under either; the header gives their share of all.
  go tool pprof -top -nodefraction=0 -nodecount=100000 -focus='ttl\.\(\*Wheel\)\.Advance$|store\.\(\*Store\)\.Expire$' "$tmp/rlserver-pprof" "$tmp/cpu.pb.gz" 2>/dev/null |
    awk -v s="$secs" '/^Showing nodes accounting for/ { gsub(",", ""); printf "expiry: %s of rlserver'"'"'s CPU (%s of %s, a %d s profile of RL.TOKEN -P 16)\n", $6, $5, $8, s; found = 1 }
      END { if (!found) print "expiry: no sample under ttl.(*Wheel).Advance or store.(*Store).Expire" }'
fi
