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
finish(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])
return 1
