-- KEYS: lease, driving set of the instance to sweep, instance registry,
--       driving set of the sweeping instance.
-- ARGV: instance id, batch size, task key head, round key head, now ms,
--       end channel, error object, status message, sweeping instance id,
--       change channel.
-- Replies {state, failed, claimed...}: state -1 when the instance's lease is
-- alive (it is left alone), 1 when tasks remain to sweep (call again), 0 when
-- done and the instance is forgotten; failed counts the tasks failed by this
-- call; then, for each task the sweeper claims to run again, eight items:
-- id, has owner ('1'/'0'), owner, created ms, ttl ns or '', re-run record,
-- the attempt to come, attempts in all.
-- Two sweepers racing pop disjoint tasks, and a task is failed or claimed
-- only while it is `working` and still driven by this instance, so racing
-- is harmless and a task is claimed by one sweeper at most.
local lease, driving, instances, iid = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
-- A live lease holds '1'; one given up holds 'released'.
if redis.call('GET', lease) == '1' then
  return {-1, 0}
end
local reply = {0, 0}
local failed = 0
for _, id in ipairs(redis.call('SPOP', driving, ARGV[2])) do
  local task = ARGV[3] .. id
  local f = redis.call('HMGET', task, 's', 'd', 'rr', 'at', 'am', 'w', 'c', 't')
  if f[1] == 'working' and f[2] == iid then
    if f[3] and tonumber(f[4]) < tonumber(f[5]) then
      -- Run again by the sweeper: it drives the task from now on.
      local at = redis.call('HINCRBY', task, 'at', 1)
      local message = 'The server instance running this task was lost; running its call again (attempt '
        .. at .. ' of ' .. f[5] .. ')'
      redis.call('HSET', task, 'd', ARGV[9], 'm', message, 'u', ARGV[5])
      redis.call('SADD', KEYS[4], id)
      -- A change, not an end: the end channel would fire its stop signal.
      announce(ARGV[10], id)
      local owned = f[6] and '1' or '0'
      for _, item in ipairs({id, owned, f[6] or '', f[7], f[8] or '', f[3], tostring(at), f[5]}) do
        table.insert(reply, item)
      end
    else
      local error, message = ARGV[7], ARGV[8]
      if f[3] then
        message = 'The server instance running this task was lost, on the last of its '
          .. f[5] .. ' attempts; it is not run again'
        error = cjson.encode({code = -32603, message = message})
      end
      redis.call('HSET', task, 's', 'failed', 'r', error, 'm', message, 'u', ARGV[5])
      redis.call('HDEL', task, 'd')
      logged(task, id)
      redis.call('DEL', ARGV[4] .. id)
      announce(ARGV[6], id)
      failed = failed + 1
    end
  end
end
reply[2] = failed
if redis.call('EXISTS', driving) == 1 then
  reply[1] = 1
  return reply
end
redis.call('SREM', instances, iid)
return reply
