-- GCRA reference script: Redis 8.8's native GCRA command, decided as Redis's gcra.c does
-- (algo.RedisGCRA): on the command's time in whole ms, the tat in integer µs, the key
-- expiring at the tat rounded up to the ms. Every value below 2^53, so doubles are
-- exact; Redis's overflow checks of int64 µs (rlserver's NativeGCRA and RedisGCRA) are
-- left to the caller. Seconds, not ms, in the reply.
--
-- KEYS[1] = key
-- ARGV    = max_burst, tokens_per_period, period (seconds, a float in decimal), tokens, [now_us]
-- Returns   {limited (0 = allowed), max_burst+1, remaining, retry_after_s (-1 when
--           allowed, and when tokens can never fit), reset_after_s}
-- State     hash {gn = tat, the theoretical arrival time in integer µs}
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua before this body: key, now, ms, keep, ... are its locals.
local burst = tonumber(ARGV[1]) + 1
local tokens_per_period = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
read_now(ARGV[5])
now = now - now % 1000 -- Redis's command time is whole ms

-- Ours is a hash with field gn; an absent key is fresh (tat now); anything else is another kind.
local st = read_hash('gn')
if not st then return redis.error_reply(WRONGTYPE) end
local tat = read_tat(st[1])
if tat == 0 then tat = now end

-- T as Redis's gcra.c computes it, in doubles: (long long)(period * 1000000. /
-- tokens_per_period + 0.5), at least 1 (algo.NativeGCRA).
local T = math.max(1, math.floor(period * 1000000 / tokens_per_period + 0.5))
local variance = T * burst
local increment = T * cost
local new_tat = math.max(now, tat) + increment
local diff = now - (new_tat - variance)
local retry, ttl = -1, 0
local limited = diff < 0
if limited then
  if increment <= variance then retry = math.ceil(-diff / 1000000) end
  ttl = tat - now
else
  ttl = new_tat - now
  redis.call('HSET', key, 'gn', string.format('%d', new_tat))
  keep(math.ceil(new_tat / 1000) * 1000 - now) -- Redis's expire: the tat's ms, rounded up
end
-- Redis: next / T when next > -T, C's division truncating toward zero; so 0 below 0.
local remaining = 0
local next_us = variance - ttl
if next_us >= 0 then remaining = math.floor(next_us / T) end
return {limited and 1 or 0, burst, remaining, retry, math.ceil(ttl / 1000000)}
