-- KEYS: task, round. ARGV: terminal status, payload, now ms, channel, id,
-- driving key head.
-- Replies 1 when recorded, false when there is no such task, the status
-- when the task is terminal already (a late outcome never overwrites one).
local status = redis.call('HGET', KEYS[1], 's')
if not status then
  return false
end
if terminal(status) then
  return status
end
redis.call('HSET', KEYS[1], 's', ARGV[1], 'r', ARGV[2], 'u', ARGV[3])
-- A failed task reports its error's message, in the same step.
if ARGV[1] == 'failed' then
  local ok, error = pcall(cjson.decode, ARGV[2])
  if ok and type(error) == 'table' and type(error.message) == 'string' then
    redis.call('HSET', KEYS[1], 'm', error.message)
  end
end
redis.call('HDEL', KEYS[1], 'q')
redis.call('DEL', KEYS[2])
undrive(KEYS[1], ARGV[5], ARGV[6])
announce(ARGV[4], ARGV[5])
return 1
