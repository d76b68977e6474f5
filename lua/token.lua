-- RL.TOKEN reference script: a token bucket, decided as COMMANDS.md and algo/token.go
-- say, float64 operations in the same order.
--
-- KEYS[1] = key
-- ARGV    = capacity, window_ms, cost, peek (1 = PEEK, 0 = not), rate (0 = capacity), [now_us]
-- Returns   {allowed, capacity, remaining, retry_after_ms, reset_after_ms}
-- State     hash {tk = tokens left at ts (a double, written with %.17g so that it reads
--           back exactly: Redis would print a Lua number with 14 digits), ts = µs}
--
-- now_us (tests only) replaces Redis TIME. Redis's own expiry cannot follow an injected
-- clock, so the key's expire time then holds its fresh-at moment in µs (set by PEXPIREAT,
-- and read as ms it lies some 50,000 years ahead, so Redis never fires it) and the key is
-- dropped here once now_us reaches it: the rule rlserver applies, to the µs.
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local W = tonumber(ARGV[2]) * 1000
local cost = tonumber(ARGV[3])
local peek = ARGV[4] == '1'
local rate = tonumber(ARGV[5])
if rate <= 0 then rate = capacity end
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

-- settle moves a wait of r ms, computed by a contract formula, by one ms where the
-- algorithm's own test, passes(t) at a moment t in µs, disagrees: formula and test round
-- differently (algo.settleRetry).
local function settle(r, passes)
  if not passes(now + r * 1000) then return r + 1 end
  if r > 1 and passes(now + (r - 1) * 1000) then return r - 1 end
  return r
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

-- Ours is a hash with field tk; an absent key is fresh (a full bucket); anything else is
-- another kind.
local st = redis.pcall('HMGET', key, 'tk', 'ts')
if st.err or (not st[1] and redis.call('EXISTS', key) == 1) then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end

-- refill is the bucket's content at the moment t, from tokens left at ts:
-- min(capacity, tokens + (t - ts) * r / W), t - ts clamped to >= 0.
local function refill(tokens, ts, t)
  return math.min(capacity, tokens + math.max(0, t - ts) * rate / W)
end
local stored_tokens, stored_ts = tonumber(st[1]), tonumber(st[2])
local function stored_at(t)
  if not stored_ts then return capacity end
  return refill(stored_tokens, stored_ts, t)
end

local tokens = stored_at(now)
local allowed = cost == 0 or tokens >= cost
local after = tokens
if allowed then after = tokens - cost end

local retry = 0
if allowed then
elseif cost > capacity then retry = -1
else
  retry = settle(ms((cost - tokens) * W / rate), function(t) return stored_at(t) >= cost end)
end

-- The time to fill up, rounded up to a whole µs; one µs more if the refill from the
-- state written still falls short of capacity there (algo.Token): it must then read
-- exactly capacity, as a fresh key does.
local d = fresh_in(now + math.ceil((capacity - after) * W / rate))
if d < 2^53 and refill(after, now, now + d) < capacity then d = d + 1 end

if allowed and cost > 0 and not peek then
  redis.call('HSET', key, 'tk', string.format('%.17g', after), 'ts', string.format('%d', now))
  keep(d)
end
return {allowed and 1 or 0, capacity, math.floor(after), retry, ms(d)}
