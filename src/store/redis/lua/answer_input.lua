-- KEYS: task, round, then the driving set, lease and registry of this
-- instance, which drives the resumed call.
-- ARGV: has_owner, owner, now ms, id, instance id, lease ms, changes
-- channel, this call's ticket, then key, answer pairs.
-- Replies false when the owner sees no such task, {'not_waiting', status},
-- {'pending'}, or {'complete', deadline or false, resume, then the answers
-- as key, answer pairs in the order they were given}.
local task, round = KEYS[1], KEYS[2]
if not visible(task, ARGV[1], ARGV[2]) then
  return false
end
local status = redis.call('HGET', task, 's')
if status ~= 'input_required' then
  return {'not_waiting', status}
end
local outstanding = tonumber(redis.call('HGET', round, 'o') or '0')
local answered = tonumber(redis.call('HGET', round, 'a') or '0')
for i = 9, #ARGV - 1, 2 do
  local q = 'q:' .. ARGV[i]
  if redis.call('HDEL', round, q) == 1 then
    answered = answered + 1
    outstanding = outstanding - 1
    redis.call('HSET', round, 'ak' .. answered, ARGV[i], 'av' .. answered, ARGV[i + 1])
  end
end
redis.call('HSET', task, 'u', ARGV[3])
if outstanding > 0 then
  redis.call('HSET', round, 'o', outstanding, 'a', answered)
  redis.call('HSET', task, 'q', requests_object(round))
  return {'pending'}
end
local out = {'complete', redis.call('HGET', task, 'e'), redis.call('HGET', round, 'x')}
for j = 1, answered do
  out[#out + 1] = redis.call('HGET', round, 'ak' .. j)
  out[#out + 1] = redis.call('HGET', round, 'av' .. j)
end
redis.call('DEL', round)
-- Which call resumed it: a call that failed but ran is told by its ticket.
redis.call('HSET', task, 's', 'working', 'rv', ARGV[8])
redis.call('HDEL', task, 'q')
logged(task, ARGV[4])
drive(task, ARGV[4], ARGV[5], KEYS[3], KEYS[5], KEYS[4], ARGV[6])
announce(ARGV[7], ARGV[4])
return out
