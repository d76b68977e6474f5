-- The part every reference script shares: lua.go puts this file before each script's
-- body, so that the one script EVALSHA runs holds it. Only local names: the body reads
-- its ARGV, calls read_now first, then reads its state with read_hash (rl.log: its
-- sorted set) and writes it back with keep.
local key = KEYS[1]

-- WRONGTYPE is Redis's error for a key holding another kind of value, which rlserver
-- answers too.
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'

-- now is the moment of the call in µs; injected says it came from now_us.
local now, injected

-- read_now sets now from now_us (tests only), or from Redis TIME when it is nil. Redis's
-- own expiry cannot follow an injected clock, so the key's expire time then holds its
-- fresh-at moment in µs (set by keep with PEXPIREAT, and read as ms it lies some 50,000
-- years ahead, so Redis never fires it) and the key is dropped here once now_us reaches
-- it: the rule rlserver applies, to the µs.
local function read_now(now_us)
  now = tonumber(now_us)
  injected = now ~= nil
  if injected then
    local at = redis.call('PEXPIRETIME', key)
    if at > 0 and at <= now then redis.call('DEL', key) end
  else
    local t = redis.call('TIME')
    now = t[1] * 1000000 + t[2]
  end
end

-- ms is the contract's ms(x): a duration in µs as whole ms rounded up, 0 if none,
-- capped at 2^53 µs (algo.msCeil).
local function ms(x)
  if not (x > 0) then return 0 end
  return math.ceil(math.min(x, 2^53) / 1000)
end

-- sec is a duration in µs as whole seconds rounded up, 0 if none (resp.replyTimes): the
-- replies of cl.throttle and gcra.
local function sec(x)
  if not (x > 0) then return 0 end
  return math.ceil(x / 1000000)
end

-- interval is the emission interval T = max(1, round(w / n)) in whole µs, rounding half
-- up (algo.emissionInterval). 2w + n stays below 2^53, where doubles are exact and
-- flooring their quotient is integer division.
local function interval(w, n)
  return math.max(1, math.floor((2 * w + n) / (2 * n)))
end

-- read_tat reads a tat field: integer µs, 0 when absent. One written as a float by an
-- older script reads rounded up to the next µs, as rlserver loads an old snapshot.
local function read_tat(v)
  return math.ceil(tonumber(v) or 0)
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

-- read_hash reads the fields of a hash state, the first of them one that every state of
-- the script's kind holds. An absent key reads as all nil: fresh. It returns nil when the
-- key holds anything else, another type or another kind's hash.
local function read_hash(...)
  local st = redis.pcall('HMGET', key, ...)
  if st.err or (not st[1] and redis.call('EXISTS', key) == 1) then return nil end
  return st
end

-- keep makes the key, just written, live exactly as long as its state: d µs from now.
-- Under now_us the moment is written as exact decimal text: now + d may pass 2^53,
-- where doubles skip odd integers (rl.token's refill can last centuries; the other
-- kinds' states end within 2^53).
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
