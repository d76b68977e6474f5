-- RL.GCRA reference script: the generic cell rate algorithm, decided as COMMANDS.md and
-- algo/gcra.go say, float64 operations in the same order.
--
-- KEYS[1] = key
-- ARGV    = limit, window_ms, cost, peek (1 = PEEK, 0 = not), burst (0 = limit), [now_us]
-- Returns   {allowed, burst, remaining, retry_after_ms, reset_after_ms}
-- State     hash {gt = tat, the theoretical arrival time in µs (a double, written with
--           %.17g so that it reads back exactly: Redis would print a Lua number with 14
--           digits)}
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
local burst = tonumber(ARGV[5])
if burst <= 0 then burst = limit end
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

-- Ours is a hash with field gt; an absent key is fresh (tat 0); anything else is another kind.
local st = redis.pcall('HMGET', key, 'gt')
if st.err or (not st[1] and redis.call('EXISTS', key) == 1) then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local tat = tonumber(st[1]) or 0

local T = W / limit
local tolerance = T * burst
local new_tat = math.max(tat, now) + T * cost
local allow_at = new_tat - tolerance
-- Two exact shortcuts around the float test, as algo.GCRA: a cost above the burst never
-- passes, and one within it always does when tat <= now.
local allowed = cost == 0 or (cost <= burst and (tat <= now or now >= allow_at))
local after = tat -- COST 0 changes nothing
if allowed and cost > 0 then after = new_tat end

local retry = 0
if allowed then
elseif cost > burst then retry = -1
else retry = ms(allow_at - now) end

-- With tat' <= now, exactly b: an old tat answers as a fresh key.
local remaining = burst
if after > now then
  remaining = math.min(math.max(math.floor((now - (after - tolerance)) / T), 0), burst)
end

if allowed and cost > 0 and not peek then
  redis.call('HSET', key, 'gt', string.format('%.17g', new_tat))
  keep(fresh_in(new_tat))
end
return {allowed and 1 or 0, burst, remaining, retry, ms(after - now)}
