-- RL.RENEW reference script: extends a live concurrency lease, as COMMANDS.md and
-- algo.Renew say.
--
-- KEYS[1] = key
-- ARGV    = lease_id, lease_ms, [now_us]
-- Returns   1 if a live lease with that id now ends lease_ms from now, else 0 (an
--           ended lease is not revived)
-- State     the lease set (leases.lua)
-- now_us    tests only: replaces Redis TIME (read_now in common.lua)
--
-- lua.go puts common.lua and leases.lua before this body: key, now, ms, keep,
-- open_leases, ... are their locals.
local id = ARGV[1]
local duration = tonumber(ARGV[2]) * 1000
read_now(ARGV[3])
if not open_leases() then return redis.error_reply(WRONGTYPE) end

if not redis.call('ZSCORE', key, 'l:' .. id) then return 0 end
-- The new deadline may be earlier than the old one: the key's end follows either way.
redis.call('ZADD', key, 'XX', string.format('%d', math.min(now + duration, 2^53)), 'l:' .. id)
keep_leases()
return 1
