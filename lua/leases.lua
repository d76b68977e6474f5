-- The part the lease scripts (rl.acquire, rl.release, rl.renew) share: lua.go puts it
-- after common.lua and before each one's body.
--
-- State     sorted set, one member 'l:' .. id per lease, scored by its deadline (µs).
--           The prefix tells a lease set from an RL.LOG set, whose members are 'ts:cost'.
--           A lease is live while now < deadline; an ended one counts for nothing.

-- open_leases checks that the key holds a lease set, or nothing, and drops the ended
-- leases, so that every member left is live. It returns false for any other value: a
-- hash, an RL.LOG set, another Redis type.
local function open_leases()
  local first = redis.pcall('ZRANGE', key, 0, 0)
  if first.err or (first[1] and string.sub(first[1], 1, 2) ~= 'l:') then return false end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now))
  return true
end

-- keep_leases makes the key live until its last lease ends. A key left without leases
-- is gone already: Redis drops an empty sorted set.
local function keep_leases()
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] then keep(tonumber(last[2]) - now) end
end
