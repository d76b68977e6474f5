-- CL.THROTTLE reference script: redis-cell's GCRA, decided as COMMANDS.md and
-- algo/throttle.go say, float64 operations in the same order. Seconds, not ms.
--
-- KEYS[1] = key
-- ARGV    = max_burst, count_per_period, period_s, quantity, [now_us]
-- Returns   {limited (0 = allowed), max_burst+1, remaining, retry_after_s (-1 when
--           allowed), reset_after_s}
-- State     hash {ct = tat in µs (a double, written with %.17g so that it reads back
--           exactly: Redis would print a Lua number with 14 digits)}
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua before this body: key, now, ms, keep, ... are its locals.
local max_burst = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local period = tonumber(ARGV[3]) * 1000000
local quantity = tonumber(ARGV[4])
read_now(ARGV[5])

-- sec is a duration in µs as whole seconds rounded up, 0 if none, capped at 2^53 µs
-- (algo.secCeil).
local function sec(x)
  if not (x > 0) then return 0 end
  return math.ceil(math.min(x, 2^53) / 1000000)
end

-- Ours is a hash with field ct; an absent key is fresh (tat 0); anything else is another kind.
local st = read_hash('ct')
if not st then return redis.error_reply(WRONGTYPE) end
local tat = tonumber(st[1]) or 0

local limit = max_burst + 1
local T = period / count
local tolerance = T * limit
local increment = T * quantity
local start = math.max(tat, now) -- tat, or now if older or absent
local new_tat = start + increment
local diff = now - (new_tat - tolerance)
-- The shortcuts of algo.Throttle: a quantity above the limit never passes, and one
-- within it always does when tat <= now, however the float sum rounds.
local limited = quantity > limit or (tat > now and diff < 0)

local retry, ttl = -1, new_tat - now
if limited then
  ttl = start - now
  if quantity <= limit then retry = sec(-diff) end
end

-- remaining = trunc((tolerance - ttl) / T) when tolerance - ttl > -T, else 0: the
-- quotient is then above -1, so it truncates to 0 unless positive.
local remaining = 0
local next_free = tolerance - ttl
if next_free > 0 then remaining = math.floor(next_free / T) end

if not limited and quantity > 0 then
  redis.call('HSET', key, 'ct', string.format('%.17g', new_tat))
  keep(fresh_in(new_tat))
end
return {limited and 1 or 0, limit, remaining, retry, sec(ttl)}
