-- RL.SLIDE reference script: a sliding window counter, decided as COMMANDS.md and
-- algo/slide.go say, float64 operations in the same order.
--
-- KEYS[1] = key
-- ARGV    = limit, window_ms, cost (-n: REFUND n), peek (1 = PEEK, 0 = not), [now_us]
-- Returns   {allowed, limit, remaining, retry_after_ms, reset_after_ms}
-- State     hash {sw = window index w, sc = cost admitted in w, sp = cost admitted in w-1}
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua before this body: key, now, ms, keep, ... are its locals.
local limit = tonumber(ARGV[1])
local W = tonumber(ARGV[2]) * 1000
local cost = tonumber(ARGV[3])
local peek = ARGV[4] == '1'
read_now(ARGV[5])

-- Ours is a hash with field sw; an absent key is fresh; anything else is another kind.
local st = read_hash('sw', 'sc', 'sp')
if not st then return redis.error_reply(WRONGTYPE) end

-- view rolls the stored state forward to the moment t: stored w = current w keeps both
-- counts, stored w = current w-1 makes prev := cur, cur := 0, anything else is fresh.
-- It returns w, elapsed = t - w*W, cur, prev, and part = prev * ((W - elapsed) / W).
local stored, stored_cur, stored_prev = tonumber(st[1]), tonumber(st[2]), tonumber(st[3])
local function view(t)
  local w = math.floor(t / W)
  local cur, prev = 0, 0
  if stored == w then cur, prev = stored_cur, stored_prev
  elseif stored == w - 1 then prev = stored_cur end
  local elapsed = t - w * W
  return w, elapsed, cur, prev, prev * ((W - elapsed) / W)
end

-- passes is the contract's test est + c <= L at the moment t, est = cur + part.
local function passes(t)
  local _, _, cur, _, part = view(t)
  return cur + part + cost <= limit
end

-- REFUND n (cost -n) takes n off the current window's count, then what is left of n off
-- the previous one's (algo/refund.go); the rest of the script answers a PEEK of cost 0 on
-- what is left, and writes it.
local refunded = false
if cost < 0 then
  local rw, _, rcur, rprev = view(now)
  if rcur > 0 or rprev > 0 then
    local from_cur = math.min(rcur, -cost)
    stored, stored_cur, stored_prev = rw, rcur - from_cur, math.max(0, rprev - (-cost - from_cur))
    refunded = not peek
  end
  cost, peek = 0, true
end

local w, elapsed, cur, prev, part = view(now)
local allowed = cost == 0 or passes(now)
local after = cur
if allowed then after = cur + cost end

local retry = 0
if allowed then
elseif cost > limit then retry = -1
else
  -- The contract's t, taken relative to now, as algo.Slide does: (w+1)*W - now is
  -- W - elapsed, exact, where absolute µs in a double keep only quarters of a µs.
  local x
  if cur + cost <= limit then
    -- passes in this window once prev's weight has fallen far enough (prev > 0 here)
    x = (W - elapsed) - (W * (limit - cur - cost)) / prev
  else
    -- passes in the next window, where prev := cur and cur := 0 (cur > 0 here)
    x = (2 * W - elapsed) - (W * (limit - cost)) / cur
  end
  retry = settle(ms(x), passes)
end

local fresh_at = now
if after > 0 then fresh_at = (w + 2) * W
elseif prev > 0 then fresh_at = (w + 1) * W end

if allowed and cost > 0 and not peek or refunded then
  redis.call('HSET', key, 'sw', string.format('%d', w), 'sc', string.format('%d', after),
    'sp', string.format('%d', prev))
  keep(fresh_at - now)
end
return {allowed and 1 or 0, limit, math.max(0, math.floor(limit - (after + part))), retry,
  ms(fresh_at - now)}
