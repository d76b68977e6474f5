-- RL.SLIDE reference script: a sliding window counter, decided as COMMANDS.md and
-- algo/slide.go say, float64 operations in the same order.
--
-- KEYS[1] = key
-- ARGV    = limit, window_ms, cost, peek (1 = PEEK, 0 = not), [now_us]
-- Returns   {allowed, limit, remaining, retry_after_ms, reset_after_ms}
-- State     hash {sw = window index w, sc = cost admitted in w, sp = cost admitted in w-1}
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

-- settle moves a wait of r ms, computed by a contract formula, by one ms where the
-- algorithm's own test, passes(t) at a moment t in µs, disagrees: formula and test round
-- differently (algo.settleRetry).
local function settle(r, passes)
  if not passes(now + r * 1000) then return r + 1 end
  if r > 1 and passes(now + (r - 1) * 1000) then return r - 1 end
  return r
end

-- keep makes the key, just written, live exactly as long as its state: d µs from now.
local function keep(d)
  if d <= 0 then redis.call('DEL', key)
  elseif injected then redis.call('PEXPIREAT', key, string.format('%d', now + d))
  else redis.call('PEXPIRE', key, ms(d)) end
end

-- Ours is a hash with field sw; an absent key is fresh; anything else is another kind.
local st = redis.pcall('HMGET', key, 'sw', 'sc', 'sp')
if st.err or (not st[1] and redis.call('EXISTS', key) == 1) then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end

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

if allowed and cost > 0 and not peek then
  redis.call('HSET', key, 'sw', string.format('%d', w), 'sc', string.format('%d', after),
    'sp', string.format('%d', prev))
  keep(fresh_at - now)
end
return {allowed and 1 or 0, limit, math.max(0, math.floor(limit - (after + part))), retry,
  ms(fresh_at - now)}
