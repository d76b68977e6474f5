-- CL.THROTTLE reference script: redis-cell's GCRA, decided as docs/commands.md and
-- algo/gcra.go say, on integer µs (every value below 2^53, so doubles are exact).
-- Seconds, not ms.
--
-- KEYS[1] = key
-- ARGV    = max_burst, count_per_period, period_s, quantity (-n: REFUND n), [now_us]
-- Returns   {limited (0 = allowed), max_burst+1, remaining, retry_after_s (-1 when
--           allowed), reset_after_s}
-- State     hash {ct = tat in integer µs}
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua before this body: key, now, ms, keep, ... are its locals.
local max_burst = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local period = tonumber(ARGV[3]) * 1000000
local quantity = tonumber(ARGV[4])
read_now(ARGV[5])

-- Ours is a hash with field ct; an absent key is fresh (tat 0); anything else is another kind.
local st = read_hash('ct')
if not st then return redis.error_reply(WRONGTYPE) end
local tat = read_tat(st[1])

local limit = max_burst + 1
local T = interval(period, count)

-- REFUND n (quantity -n) moves the schedule back by n intervals, never before now
-- (algo/refund.go); the rest of the script answers quantity 0 on it, and writes it.
local refunded = false
if quantity < 0 then
  if tat > now then
    tat = math.max(now, tat + quantity * T)
    refunded = true
  end
  quantity = 0
end
local tolerance = T * limit
local start = math.max(tat, now)
-- A quantity above the limit never passes; quantity 0 is decided like any other.
local limited = quantity > limit or start + T * quantity - tolerance > now
local after = tat -- what is stored after the call
if not limited and quantity > 0 then after = start + T * quantity end
local ahead = math.max(0, after - now)

local retry = -1
if limited and quantity <= limit then retry = sec(start + T * quantity - tolerance - now) end

if not limited and quantity > 0 or refunded then
  redis.call('HSET', key, 'ct', string.format('%d', after))
  keep(fresh_in(after))
end
return {limited and 1 or 0, limit, math.max(0, math.floor((tolerance - ahead) / T)), retry, sec(ahead)}
