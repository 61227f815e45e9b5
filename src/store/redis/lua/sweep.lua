-- KEYS: lease, driving set of the instance to sweep, instance registry.
-- ARGV: instance id, batch size, task key head, round key head, key tail,
--       now ms, channel, error object, status message.
-- Replies {state, failed}: state -1 when the instance's lease is alive (it
-- is left alone), 1 when tasks remain to sweep (call again), 0 when done and
-- the instance is forgotten; failed counts the tasks failed by this call.
-- Two sweepers racing pop disjoint tasks, and a task is failed only while
-- it is `working` and still driven by this instance, so racing is harmless.
local lease, driving, instances, iid = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
if redis.call('EXISTS', lease) == 1 then
  return {-1, 0}
end
local failed = 0
for _, id in ipairs(redis.call('SPOP', driving, ARGV[2])) do
  local task = ARGV[3] .. id .. ARGV[5]
  local f = redis.call('HMGET', task, 's', 'd')
  if f[1] == 'working' and f[2] == iid then
    redis.call('HSET', task, 's', 'failed', 'r', ARGV[8], 'm', ARGV[9], 'u', ARGV[6])
    redis.call('HDEL', task, 'd')
    redis.call('DEL', ARGV[4] .. id .. ARGV[5])
    redis.call('PUBLISH', ARGV[7], id)
    failed = failed + 1
  end
end
if redis.call('EXISTS', driving) == 1 then
  return {1, failed}
end
redis.call('SREM', instances, iid)
return {0, failed}
