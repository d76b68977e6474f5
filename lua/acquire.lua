-- RL.ACQUIRE reference script: a concurrency lease, decided as COMMANDS.md and
-- algo.Acquire say.
--
-- KEYS[1] = key
-- ARGV    = limit, lease_ms, id ('' = draw one), [now_us]
-- Returns   {acquired, limit, remaining, retry_after_ms, lease_id}: lease_id is the
--           lease's id when acquired, else false (a nil bulk)
-- State     the lease set (leases.lua)
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua and leases.lua before this body: key, now, ms, keep,
-- open_leases, ... are their locals.
local limit = tonumber(ARGV[1])
local duration = tonumber(ARGV[2]) * 1000
local id = ARGV[3]
read_now(ARGV[4])
if not open_leases() then return redis.error_reply(WRONGTYPE) end

-- new_id draws an id no live lease of the key holds: 16 lower-case hex digits, four
-- groups of 16 bits (Lua 5.1's %x takes a C int), each math.random's plus 16 bits of
-- now, so that the ids differ from call to call even where Redis seeds math.random
-- alike for every script (before Redis 7).
local function new_id()
  while true do
    local drawn, t = '', now
    for _ = 1, 4 do
      drawn = drawn .. string.format('%04x', (math.random(0, 65535) + t) % 65536)
      t = math.floor(t / 65536)
    end
    if not redis.call('ZSCORE', key, 'l:' .. drawn) then return drawn end
  end
end

local live = redis.call('ZCARD', key)
local acquired = false
if id ~= '' and redis.call('ZSCORE', key, 'l:' .. id) then
  -- A retry of an acquire that got through: the same place, a new deadline.
  acquired = true
elseif live < limit then
  if id == '' then id = new_id() end
  live = live + 1
  acquired = true
end

if not acquired then
  -- Full: fewer than limit are live once the (live - limit + 1)-th to end has ended,
  -- the earliest unless the limit was lowered below the live count (algo.Acquire).
  local freeing = redis.call('ZRANGE', key, live - limit, live - limit, 'WITHSCORES')
  return {0, limit, 0, ms(tonumber(freeing[2]) - now), false}
end
redis.call('ZADD', key, string.format('%d', math.min(now + duration, 2^53)), 'l:' .. id)
keep_leases()
return {1, limit, math.max(0, limit - live), 0, id}
