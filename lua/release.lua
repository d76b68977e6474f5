-- RL.RELEASE reference script: ends a concurrency lease, as COMMANDS.md and
-- algo.Release say.
--
-- KEYS[1] = key
-- ARGV    = lease_id, [now_us]
-- Returns   1 if a live lease with that id was removed, else 0
-- State     the lease set (leases.lua)
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua and leases.lua before this body: key, now, ms, keep,
-- open_leases, ... are their locals.
local id = ARGV[1]
read_now(ARGV[2])
if not open_leases() then return redis.error_reply(WRONGTYPE) end

local released = redis.call('ZREM', key, 'l:' .. id)
-- The released lease may have been the last to end: the key now ends with the next one.
if released == 1 then keep_leases() end
return released
