-- CL.THROTTLE reference script: redis-cell's GCRA, decided as COMMANDS.md and
-- algo/throttle.go say, float64 operations in the same order. Seconds, not ms.
--
-- KEYS[1] = key
-- ARGV    = max_burst, count_per_period, period_s, quantity, [now_us]
-- Returns   {limited (0 = allowed), max_burst+1, remaining, retry_after_s (-1 when
--           allowed), reset_after_s}
-- State     hash {ct = tat in µs (a double, written with %.17g so that it reads back
--           exactly: Redis would print a Lua number with 14 digits)}
--
-- now_us (tests only) replaces Redis TIME. Redis's own expiry cannot follow an injected
-- clock, so the key's expire time then holds its fresh-at moment in µs (set by PEXPIREAT,
-- and read as ms it lies some 50,000 years ahead, so Redis never fires it) and the key is
-- dropped here once now_us reaches it: the rule rlserver applies, to the µs.
local key = KEYS[1]
local max_burst = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local period = tonumber(ARGV[3]) * 1000000
local quantity = tonumber(ARGV[4])
local now = tonumber(ARGV[5])
local injected = now ~= nil
if injected then
  local at = redis.call('PEXPIRETIME', key)
  if at > 0 and at <= now then redis.call('DEL', key) end
else
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end

-- ms is the contract's ms(x): a duration in µs as whole ms rounded up, 0 if none,
-- capped at 2^53 µs (algo.msCeil).
local function ms(x)
  if not (x > 0) then return 0 end
  return math.ceil(math.min(x, 2^53) / 1000)
end

-- sec is a duration in µs as whole seconds rounded up, 0 if none, capped at 2^53 µs
-- (algo.secCeil).
local function sec(x)
  if not (x > 0) then return 0 end
  return math.ceil(math.min(x, 2^53) / 1000000)
end

-- fresh_in is the time from now to the first whole µs at or after t: 0 if t is past,
-- capped at 2^53 (algo.freshAt, less now).
local function fresh_in(t)
  local x = t - now
  if x <= 0 then return 0 end
  if x > 2^53 then return 2^53 end
  return math.ceil(t) - now
end

-- keep makes the key, just written, live exactly as long as its state: d µs from now.
-- Under now_us the moment is written as exact decimal text: now + d may pass 2^53,
-- where doubles skip odd integers.
local function keep(d)
  if d <= 0 then redis.call('DEL', key)
  elseif injected then
    local hi = math.floor(now / 1000000) + math.floor(d / 1000000)
    local lo = now % 1000000 + d % 1000000
    if lo >= 1000000 then hi, lo = hi + 1, lo - 1000000 end
    if hi == 0 then redis.call('PEXPIREAT', key, string.format('%d', lo))
    else redis.call('PEXPIREAT', key, string.format('%d%06d', hi, lo)) end
  else redis.call('PEXPIRE', key, ms(d)) end
end

-- Ours is a hash with field ct; an absent key is fresh (tat 0); anything else is another kind.
local st = redis.pcall('HMGET', key, 'ct')
if st.err or (not st[1] and redis.call('EXISTS', key) == 1) then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
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
