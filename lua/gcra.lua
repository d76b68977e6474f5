-- RL.GCRA reference script: the generic cell rate algorithm, decided as docs/commands.md
-- and algo/gcra.go say, on integer µs (every value below 2^53, so doubles are exact).
--
-- KEYS[1] = key
-- ARGV    = limit, window_ms, cost (-n: REFUND n), peek (1 = PEEK, 0 = not), burst (0 = limit), [now_us]
-- Returns   {allowed, burst, remaining, retry_after_ms, reset_after_ms}
-- State     hash {gt = tat, the theoretical arrival time in integer µs}
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua before this body: key, now, ms, keep, ... are its locals.
local limit = tonumber(ARGV[1])
local W = tonumber(ARGV[2]) * 1000
local cost = tonumber(ARGV[3])
local peek = ARGV[4] == '1'
local burst = tonumber(ARGV[5])
if burst <= 0 then burst = limit end
read_now(ARGV[6])

-- Ours is a hash with field gt; an absent key is fresh (tat 0); anything else is another kind.
local st = read_hash('gt')
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
local tolerance = T * burst
local start = math.max(tat, now)
-- A cost above the burst never passes (and T * cost could pass 2^53); COST 0 always does.
local allowed = cost <= burst and (cost == 0 or start + T * cost - tolerance <= now)
local after = tat -- what is stored after the call
if allowed and cost > 0 then after = start + T * cost end
local ahead = math.max(0, after - now)

local retry = 0
if allowed then
elseif cost > burst then retry = -1
else retry = ms(start + T * cost - tolerance - now) end

if allowed and cost > 0 and not peek or refunded then
  redis.call('HSET', key, 'gt', string.format('%d', after))
  keep(fresh_in(after))
end
return {allowed and 1 or 0, burst, math.max(0, math.floor((tolerance - ahead) / T)), retry, ms(ahead)}
