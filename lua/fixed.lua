-- RL.FIXED reference script: a fixed window, decided as COMMANDS.md and algo/fixed.go say.
--
-- KEYS[1] = key
-- ARGV    = limit, window_ms, cost, peek (1 = PEEK, 0 = not), [now_us]
-- Returns   {allowed, limit, remaining, retry_after_ms, reset_after_ms}
-- State     hash {fw = window index, fc = cost admitted in that window}
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

-- keep makes the key, just written, live exactly as long as its state: d µs from now.
local function keep(d)
  if d <= 0 then redis.call('DEL', key)
  elseif injected then redis.call('PEXPIREAT', key, string.format('%d', now + d))
  else redis.call('PEXPIRE', key, ms(d)) end
end

-- Ours is a hash with field fw; an absent key is fresh; anything else is another kind.
local st = redis.pcall('HMGET', key, 'fw', 'fc')
if st.err or (not st[1] and redis.call('EXISTS', key) == 1) then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end

-- Doubles hold every integer here exactly, and floor(now / W) is the integer division
-- while now < 2^53 (algo's package comment).
local w = math.floor(now / W)
local window_end = (w + 1) * W
local count = 0
if tonumber(st[1]) == w then count = tonumber(st[2]) end

local allowed = cost == 0 or count + cost <= limit
local after = count
if allowed then after = count + cost end

local retry = 0
if allowed then
elseif cost > limit then retry = -1
else retry = ms(window_end - now) end

local reset, fresh_at = 0, now
if after > 0 then reset, fresh_at = ms(window_end - now), window_end end

if allowed and cost > 0 and not peek then
  redis.call('HSET', key, 'fw', string.format('%d', w), 'fc', string.format('%d', after))
  keep(fresh_at - now)
end
return {allowed and 1 or 0, limit, math.max(0, limit - after), retry, reset}
