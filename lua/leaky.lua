-- RL.LEAKY reference script: a leaky bucket as a queue, decided as docs/commands.md and
-- algo/leaky.go say, on integer µs (every value below 2^53, so doubles are exact).
--
-- KEYS[1] = key
-- ARGV    = limit, window_ms, cost (-n: REFUND n), peek (1 = PEEK, 0 = not), queue, [now_us]
-- Returns   {allowed, limit, remaining, delay_or_retry_after_ms, reset_after_ms}: field 4
--           is, when allowed, the wait before proceeding; when limited, the wait for room.
-- State     hash {lt = tat, the time the queue drains in integer µs}
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua before this body: key, now, ms, keep, ... are its locals.
local limit = tonumber(ARGV[1])
local W = tonumber(ARGV[2]) * 1000
local cost = tonumber(ARGV[3])
local peek = ARGV[4] == '1'
local queue = tonumber(ARGV[5])
read_now(ARGV[6])

-- Ours is a hash with field lt; an absent key is fresh (tat 0); anything else is another kind.
local st = read_hash('lt')
if not st then return redis.error_reply(WRONGTYPE) end
local tat = read_tat(st[1])

local T = interval(W, limit)

-- REFUND n (cost -n) moves the schedule back by n intervals, never before now
-- (algo/refund.go); the rest of the script answers a PEEK of cost 0 on it, and writes it.
local refunded = false
if cost < 0 then
  if tat > now then
    tat = math.max(now, tat + cost * T)
    refunded = not peek
  end
  cost, peek = 0, true
end
local room = T * queue
local start = math.max(tat, now)
local delay = start - now
local allowed = cost == 0 or delay <= room
local after = tat -- COST 0 changes nothing
if allowed and cost > 0 then after = start + T * cost end
local ahead = math.max(0, after - now)

local retry = ms(delay)
if not allowed then retry = ms(delay - room) end

if allowed and cost > 0 and not peek or refunded then
  redis.call('HSET', key, 'lt', string.format('%d', after))
  keep(fresh_in(after))
end
return {allowed and 1 or 0, limit, math.max(0, math.floor((room - ahead) / T) + 1), retry, ms(ahead)}
