-- RL.LOG reference script: a sliding window log, exact, decided as COMMANDS.md and
-- algo/log.go say.
--
-- KEYS[1] = key
-- ARGV    = limit, window_ms, cost (-n: REFUND n), peek (1 = PEEK, 0 = not), [now_us]
-- Returns   {allowed, limit, remaining, retry_after_ms, reset_after_ms}
-- State     sorted set, one member per admitted time: score ts (µs), member "ts:cost".
--           Times are unique, so members are: a call at or before the newest entry's
--           time adds its cost to that entry, as algo.Log does.
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua before this body: key, now, ms, keep, ... are its locals.
local limit = tonumber(ARGV[1])
local W = tonumber(ARGV[2]) * 1000
local cost = tonumber(ARGV[3])
local peek = ARGV[4] == '1'
read_now(ARGV[5])

-- Ours is a sorted set of 'ts:cost' members; an absent key is fresh; anything else is
-- another kind, a lease set too (members 'l:id'). An entry with ts <= now - W has left
-- the window: read only the live ones, oldest first. A set with none in the window
-- shows its kind by any member.
local oldest = string.format('(%d', now - W)
local members = redis.pcall('ZRANGEBYSCORE', key, oldest, '+inf')
if members.err then return redis.error_reply(WRONGTYPE) end
if #members == 0 then
  local any = redis.call('ZRANGE', key, 0, 0)[1]
  if any and not string.match(any, '^%d+:%d+$') then return redis.error_reply(WRONGTYPE) end
end
local ts, costs = {}, {}
local sum, newest = 0, -1
for i, m in ipairs(members) do
  local t, c = string.match(m, '^(%d+):(%d+)$')
  if not t then return redis.error_reply(WRONGTYPE) end
  ts[i], costs[i] = tonumber(t), tonumber(c)
  sum = sum + costs[i]
  newest = math.max(newest, ts[i])
end

-- REFUND n (cost -n) takes n off the costs of the newest entries in the window, newest
-- first, dropping those it empties, and writes what is left (algo/refund.go); the rest
-- of the script answers a PEEK of cost 0 on it.
if cost < 0 then
  local write = #ts > 0 and not peek
  if write then redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - W)) end
  local left = -cost
  while #ts > 0 and left > 0 do
    local n = #ts
    if write then redis.call('ZREM', key, members[n]) end
    if costs[n] <= left then
      left, sum = left - costs[n], sum - costs[n]
      ts[n], costs[n] = nil, nil
    else
      costs[n], sum, left = costs[n] - left, sum - left, 0
      if write then
        redis.call('ZADD', key, string.format('%d', ts[n]), string.format('%d:%d', ts[n], costs[n]))
      end
    end
  end
  newest = ts[#ts] or -1
  if write then
    if newest >= 0 then keep(newest + W - now) else keep(0) end
  end
  cost, peek = 0, true
end

local allowed = cost == 0 or sum + cost <= limit
local after = sum
if allowed and cost > 0 then
  after = sum + cost
  newest = math.max(newest, now)
end

local retry = 0
if allowed then
elseif cost > limit then retry = -1
else
  -- drop the oldest entries until sum + c <= L: the last one dropped leaves at ts + W
  local left = sum
  for i = 1, #ts do
    left = left - costs[i]
    if left + cost <= limit then
      retry = ms(ts[i] + W - now)
      break
    end
  end
end

local reset, fresh_at = 0, now
if newest >= 0 then reset, fresh_at = ms(newest + W - now), newest + W end

if allowed and cost > 0 and not peek then
  redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - W))
  local n = #ts
  if n > 0 and ts[n] >= now then
    redis.call('ZREM', key, members[n])
    redis.call('ZADD', key, string.format('%d', ts[n]), string.format('%d:%d', ts[n], costs[n] + cost))
  else
    redis.call('ZADD', key, string.format('%d', now), string.format('%d:%d', now, cost))
  end
  keep(fresh_at - now)
end
return {allowed and 1 or 0, limit, math.max(0, limit - after), retry, reset}
