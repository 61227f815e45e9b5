-- A task whose resume this instance could not confirm (see `doubts.rs`).
-- KEYS: task, round. ARGV: instance id, error object, now ms, end channel,
-- id, driving key head, the doubtful call's ticket.
-- Replies 'orphan' when that call resumed the task (it is `working` under
-- this instance with the call's ticket) and it is failed now,
-- 'input_required' while its round is open (the resume may still run),
-- 'gone' for no such task, else 'other'.
local f = redis.call('HMGET', KEYS[1], 's', 'd', 'rv')
if not f[1] then
  return 'gone'
end
if f[1] == 'input_required' then
  return 'input_required'
end
if f[1] ~= 'working' or f[2] ~= ARGV[1] or f[3] ~= ARGV[7] then
  return 'other'
end
finish(KEYS[1], KEYS[2], 'failed', ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])
return 'orphan'
