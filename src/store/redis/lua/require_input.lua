-- KEYS: task, round. ARGV: now ms, resume, id, driving key head, changes
-- channel, then key, request pairs. Nothing runs while the task waits: it is no longer driven.
-- Replies like finish.lua: 1, false, or the status that refuses the round.
-- Round hash fields: n requests, k<i>/v<i> key and request, q:<key> = i
-- while outstanding, o outstanding count, a answer count, ak<j>/av<j> the
-- j-th answer, x resume context. The task's `q` holds the outstanding
-- requests rendered (prelude.lua, requests_object).
local task, round = KEYS[1], KEYS[2]
local status = redis.call('HGET', task, 's')
if not status then
  return false
end
if status ~= 'working' then
  return status
end
redis.call('DEL', round)
local n = 0
for i = 6, #ARGV - 1, 2 do
  local key = ARGV[i]
  -- A key listed twice in one round is one request (the first).
  if redis.call('HSETNX', round, 'q:' .. key, n + 1) == 1 then
    n = n + 1
    redis.call('HSET', round, 'k' .. n, key, 'v' .. n, ARGV[i + 1])
  end
end
redis.call('HSET', round, 'n', n, 'o', n, 'a', 0, 'x', ARGV[2])
local deadline = redis.call('HGET', task, 'e')
if deadline then
  redis.call('PEXPIREAT', round, deadline)
end
redis.call('HSET', task, 's', 'input_required', 'u', ARGV[1], 'q', requests_object(round))
undrive(task, ARGV[3], ARGV[4])
logged(task, ARGV[3])
announce(ARGV[5], ARGV[3])
return 1
