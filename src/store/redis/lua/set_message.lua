-- KEYS: task. ARGV: message, now ms, changes channel, id.
-- Replies 1 when set, false when there is no such task, the status otherwise.
local status = redis.call('HGET', KEYS[1], 's')
if not status then
  return false
end
if terminal(status) then
  return status
end
redis.call('HSET', KEYS[1], 'm', ARGV[1], 'u', ARGV[2])
announce(ARGV[3], ARGV[4])
return 1
