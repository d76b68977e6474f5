-- RL.LEAKY reference script: a leaky bucket as a queue, decided as COMMANDS.md and
-- algo/leaky.go say, float64 operations in the same order.
--
-- KEYS[1] = key
-- ARGV    = limit, window_ms, cost, peek (1 = PEEK, 0 = not), queue, [now_us]
-- Returns   {allowed, limit, remaining, delay_or_retry_after_ms, reset_after_ms}: field 4
--           is, when allowed, the wait before proceeding; when limited, the wait for room.
-- State     hash {lt = tat, the time the queue drains in µs (a double, written with %.17g
--           so that it reads back exactly: Redis would print a Lua number with 14 digits)}
--
-- now_us (tests only) replaces Redis TIME. Redis's own expiry cannot follow an injected
-- clock, so the key's expire time then holds its fresh-at moment in µs (set by PEXPIREAT,
-- and read as ms it lies some 50,000 years ahead, so Redis never fires it) and the key is
-- dropped here once now_us reaches it: the rule rlserver applies, to the µs.
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local W = tonumber(ARGV[2]) * 1000
local cost = tonumber(ARGV[3])
local peek = ARGV[4] == '1'
local queue = tonumber(ARGV[5])
local now = tonumber(ARGV[6])
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

-- Ours is a hash with field lt; an absent key is fresh (tat 0); anything else is another kind.
local st = redis.pcall('HMGET', key, 'lt')
if st.err or (not st[1] and redis.call('EXISTS', key) == 1) then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local tat = tonumber(st[1]) or 0

local T = W / limit
local room = T * queue
local start = math.max(tat, now)
local delay = start - now
local allowed = cost == 0 or delay <= room
local after = tat -- COST 0 changes nothing
if allowed and cost > 0 then after = start + T * cost end

local retry = ms(delay)
if not allowed then retry = ms(delay - room) end

local queued = math.max(0, after - now)
local remaining = math.max(0, math.floor((room - queued) / T) + 1)

if allowed and cost > 0 and not peek then
  redis.call('HSET', key, 'lt', string.format('%.17g', after))
  keep(fresh_in(after))
end
return {allowed and 1 or 0, limit, remaining, retry, ms(after - now)}
