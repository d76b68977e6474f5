-- RL.FIXED reference script: a fixed window, decided as COMMANDS.md and algo/fixed.go say.
--
-- KEYS[1] = key
-- ARGV    = limit, window_ms, cost (-n: REFUND n), peek (1 = PEEK, 0 = not), [now_us]
-- Returns   {allowed, limit, remaining, retry_after_ms, reset_after_ms}
-- State     hash {fw = window index, fc = cost admitted in that window}
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua before this body: key, now, ms, keep, ... are its locals.
local limit = tonumber(ARGV[1])
local W = tonumber(ARGV[2]) * 1000
local cost = tonumber(ARGV[3])
local peek = ARGV[4] == '1'
read_now(ARGV[5])

-- Ours is a hash with field fw; an absent key is fresh; anything else is another kind.
local st = read_hash('fw', 'fc')
if not st then return redis.error_reply(WRONGTYPE) end

-- Doubles hold every integer here exactly, and floor(now / W) is the integer division
-- while now < 2^53 (algo's package comment).
local w = math.floor(now / W)
local window_end = (w + 1) * W
local count = 0
if tonumber(st[1]) == w then count = tonumber(st[2]) end

-- REFUND n (cost -n) gives back n of this window's count, not below 0 (algo/refund.go);
-- the rest of the script answers a PEEK of cost 0 on what is left, and writes it.
local refunded = false
if cost < 0 then
  refunded = count > 0 and not peek
  count = math.max(0, count + cost)
  cost, peek = 0, true
end

local allowed = cost == 0 or count + cost <= limit
local after = count
if allowed then after = count + cost end

local retry = 0
if allowed then
elseif cost > limit then retry = -1
else retry = ms(window_end - now) end

local reset, fresh_at = 0, now
if after > 0 then reset, fresh_at = ms(window_end - now), window_end end

if allowed and cost > 0 and not peek or refunded then
  redis.call('HSET', key, 'fw', string.format('%d', w), 'fc', string.format('%d', after))
  keep(fresh_at - now)
end
return {allowed and 1 or 0, limit, math.max(0, limit - after), retry, reset}
