-- KEYS: task. ARGV: now ms, why, changes channel, id.
-- Counts one more run of a `working` task whose call broke off, when its
-- re-run record has runs left: replies {run to come, runs in all}, the
-- status message saying so; false when it may not run again.
local f = redis.call('HMGET', KEYS[1], 's', 'rr', 'at', 'am')
if f[1] ~= 'working' or not f[2] or tonumber(f[3]) >= tonumber(f[4]) then
  return false
end
local at = redis.call('HINCRBY', KEYS[1], 'at', 1)
local message = ARGV[2] .. '; running its call again (attempt ' .. at .. ' of ' .. f[4] .. ')'
redis.call('HSET', KEYS[1], 'm', message, 'u', ARGV[1])
announce(ARGV[3], ARGV[4])
return {at, tonumber(f[4])}
