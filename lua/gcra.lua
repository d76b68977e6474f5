-- RL.GCRA reference script: the generic cell rate algorithm, decided as COMMANDS.md and
-- algo/gcra.go say, float64 operations in the same order.
--
-- KEYS[1] = key
-- ARGV    = limit, window_ms, cost, peek (1 = PEEK, 0 = not), burst (0 = limit), [now_us]
-- Returns   {allowed, burst, remaining, retry_after_ms, reset_after_ms}
-- State     hash {gt = tat, the theoretical arrival time in µs (a double, written with
--           %.17g so that it reads back exactly: Redis would print a Lua number with 14
--           digits)}
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua before this body: key, now, ms, keep, ... are its locals.
local limit = tonumber(ARGV[1])
local W = tonumber(ARGV[2]) * 1000
local cost = tonumber(ARGV[3])
local peek = ARGV[4] == '1'
local burst = tonumber(ARGV[5])
if burst <= 0 then burst = limit end
read_now(ARGV[6])

-- Ours is a hash with field gt; an absent key is fresh (tat 0); anything else is another kind.
local st = read_hash('gt')
if not st then return redis.error_reply(WRONGTYPE) end
local tat = tonumber(st[1]) or 0

local T = W / limit
local tolerance = T * burst
local new_tat = math.max(tat, now) + T * cost
local allow_at = new_tat - tolerance
-- Two exact shortcuts around the float test, as algo.GCRA: a cost above the burst never
-- passes, and one within it always does when tat <= now.
local allowed = cost == 0 or (cost <= burst and (tat <= now or now >= allow_at))
local after = tat -- COST 0 changes nothing
if allowed and cost > 0 then after = new_tat end

local retry = 0
if allowed then
elseif cost > burst then retry = -1
else retry = ms(allow_at - now) end

-- With tat' <= now, exactly b: an old tat answers as a fresh key.
local remaining = burst
if after > now then
  remaining = math.min(math.max(math.floor((now - (after - tolerance)) / T), 0), burst)
end

if allowed and cost > 0 and not peek then
  redis.call('HSET', key, 'gt', string.format('%.17g', new_tat))
  keep(fresh_in(new_tat))
end
return {allowed and 1 or 0, burst, remaining, retry, ms(after - now)}
