-- The operator's delete. KEYS: task, round, the index of every task.
-- ARGV: id, key base (`{<prefix>}`), channel, driving key head.
-- Replies false for no such task, else the owner flag, the owner, the
-- tool, the run (`admin_head`) and the snapshot of the task as it was. The task leaves every index and live set
-- (its quota place is free at once); a task that had not ended is
-- announced on the channel, so that the instance running it drops the call.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local out = snapshot(KEYS[1], KEYS[2], admin_head(KEYS[1]))
local id, base = ARGV[1], ARGV[2]
local index, live = base .. ':unowned', base .. ':live:unowned'
if out[1] == '1' then
  index, live = base .. ':owned:' .. out[2], base .. ':live:owned:' .. out[2]
end
local ended = terminal(redis.call('HGET', KEYS[1], 's'))
undrive(KEYS[1], id, ARGV[4])
for _, set in ipairs({index, live, base .. ':live:all', KEYS[3]}) do
  redis.call('ZREM', set, id)
end
redis.call('DEL', KEYS[1], KEYS[2])
if not ended then
  announce(ARGV[3], id)
end
return out
