-- GCRA reference script: Redis 8.8's native GCRA command, decided as docs/commands.md
-- and algo/gcra.go say, on integer µs (every value below 2^53, so doubles are exact).
-- Seconds, not ms. It shares RL.GCRA's state, so one key serves both commands.
--
-- KEYS[1] = key
-- ARGV    = max_burst, tokens_per_period, period (seconds, a float in decimal), tokens, [now_us]
-- Returns   {limited (0 = allowed), max_burst+1, remaining, retry_after_s (-1 when
--           allowed, and when tokens can never fit), reset_after_s}
-- State     hash {gt = tat, the theoretical arrival time in integer µs}: RL.GCRA's
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua before this body: key, now, ms, keep, ... are its locals.
local burst = tonumber(ARGV[1]) + 1
local tokens_per_period = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
read_now(ARGV[5])

-- Ours is a hash with field gt; an absent key is fresh (tat 0); anything else is another kind.
local st = read_hash('gt')
if not st then return redis.error_reply(WRONGTYPE) end
local tat = read_tat(st[1])

-- T as Redis's gcra.c computes it, in doubles: (long long)(period * 1000000. /
-- tokens_per_period + 0.5), at least 1 (algo.ParseGCRA).
local T = math.max(1, math.floor(period * 1000000 / tokens_per_period + 0.5))
local tolerance = T * burst
local start = math.max(tat, now)
-- A cost above the burst never passes (and T * cost could pass 2^53).
local allowed = cost <= burst and start + T * cost - tolerance <= now
local after = tat -- what is stored after the call
if allowed then after = start + T * cost end
local ahead = math.max(0, after - now)

local retry = -1
if not allowed and cost <= burst then retry = sec(start + T * cost - tolerance - now) end

if allowed then
  redis.call('HSET', key, 'gt', string.format('%d', after))
  keep(fresh_in(after))
end
return {allowed and 0 or 1, burst, math.max(0, math.floor((tolerance - ahead) / T)), retry, sec(ahead)}
