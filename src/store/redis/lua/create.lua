-- KEYS: task, owner index, driving set, lease and registry of this instance.
-- ARGV: has_owner, owner, created ms, deadline ms or '', ttl ns or '',
--       poll ns or '', has_message, message, id, task key head, task key tail,
--       instance id, lease ms.
local task, index = KEYS[1], KEYS[2]
if redis.call('EXISTS', task) == 1 then
  return 0
end
redis.call('HSET', task, 's', 'working', 'c', ARGV[3], 'u', ARGV[3])
if ARGV[1] == '1' then
  redis.call('HSET', task, 'w', ARGV[2])
end
if ARGV[5] ~= '' then
  redis.call('HSET', task, 't', ARGV[5])
end
if ARGV[6] ~= '' then
  redis.call('HSET', task, 'p', ARGV[6])
end
if ARGV[7] == '1' then
  redis.call('HSET', task, 'm', ARGV[8])
end
-- This instance drives the task (before the expiry, which may be past).
drive(task, ARGV[9], ARGV[12], KEYS[3], KEYS[5], KEYS[4], ARGV[13])
local deadline = ARGV[4]
if deadline ~= '' then
  redis.call('HSET', task, 'e', deadline)
  redis.call('PEXPIREAT', task, deadline)
end

-- The owner index lives as long as its longest-lived task.
local existed = redis.call('EXISTS', index) == 1
redis.call('ZADD', index, ARGV[3], ARGV[9])
if deadline == '' then
  redis.call('PERSIST', index)
elseif existed then
  redis.call('PEXPIREAT', index, deadline, 'GT')
else
  redis.call('PEXPIREAT', index, deadline)
end
-- Amortized trimming: the oldest entries are the first to expire.
for _, id in ipairs(redis.call('ZRANGE', index, 0, 1)) do
  if redis.call('EXISTS', ARGV[10] .. id .. ARGV[11]) == 0 then
    redis.call('ZREM', index, id)
  end
end

-- Entries of tasks that expired while working leave the driving set the
-- same way: two random ones are checked at each create.
for _, id in ipairs(redis.call('SRANDMEMBER', KEYS[3], 2)) do
  if redis.call('HGET', ARGV[10] .. id .. ARGV[11], 'd') ~= ARGV[12] then
    redis.call('SREM', KEYS[3], id)
  end
end
return 1
