-- RL.TOKEN reference script: a token bucket, decided as COMMANDS.md and algo/token.go
-- say, float64 operations in the same order.
--
-- KEYS[1] = key
-- ARGV    = capacity, window_ms, cost (-n: REFUND n), peek (1 = PEEK, 0 = not), rate (0 = capacity), [now_us]
-- Returns   {allowed, capacity, remaining, retry_after_ms, reset_after_ms}
-- State     hash {tk = tokens left at ts (a double, written with %.17g so that it reads
--           back exactly: Redis would print a Lua number with 14 digits), ts = µs}
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua before this body: key, now, ms, keep, ... are its locals.
local capacity = tonumber(ARGV[1])
local W = tonumber(ARGV[2]) * 1000
local cost = tonumber(ARGV[3])
local peek = ARGV[4] == '1'
local rate = tonumber(ARGV[5])
if rate <= 0 then rate = capacity end
read_now(ARGV[6])

-- Ours is a hash with field tk; an absent key is fresh (a full bucket); anything else is
-- another kind.
local st = read_hash('tk', 'ts')
if not st then return redis.error_reply(WRONGTYPE) end

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

-- REFUND n (cost -n) puts n tokens back, up to the capacity, as of now (algo/refund.go);
-- the rest of the script answers a PEEK of cost 0 on the bucket it leaves, and writes it.
local refunded = false
if cost < 0 then
  local left = stored_at(now)
  if left < capacity then
    stored_tokens, stored_ts = math.min(capacity, left - cost), now
    refunded = not peek
  end
  cost, peek = 0, true
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

if allowed and cost > 0 and not peek or refunded then
  redis.call('HSET', key, 'tk', string.format('%.17g', after), 'ts', string.format('%d', now))
  keep(d)
end
return {allowed and 1 or 0, capacity, math.floor(after), retry, ms(d)}
