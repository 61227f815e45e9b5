-- KEYS: the subscriptions (id -> record), their cursors, their owners,
-- their expiry (a sorted set, ms; '+inf' never).
-- ARGV: now ms, id, record, owner key, expiry score, cursor, per-owner cap,
-- total cap.
-- Lapsed subscriptions go first. Replies {'kept', cursor} for a live one
-- refreshed (new record and expiry, cursor kept), {'new'} for one stored,
-- {'owner'} or {'total'} when a cap refuses it (nothing stored).
local records, cursors, owners, expiry = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
for _, id in ipairs(redis.call('ZRANGEBYSCORE', expiry, '-inf', ARGV[1])) do
  redis.call('HDEL', records, id)
  redis.call('HDEL', cursors, id)
  redis.call('HDEL', owners, id)
  redis.call('ZREM', expiry, id)
end
local id = ARGV[2]
if redis.call('HEXISTS', records, id) == 1 then
  redis.call('HSET', records, id, ARGV[3])
  redis.call('ZADD', expiry, ARGV[5], id)
  return {'kept', redis.call('HGET', cursors, id)}
end
if redis.call('HLEN', records) >= tonumber(ARGV[8]) then
  return {'total'}
end
local held = 0
for _, owner in ipairs(redis.call('HVALS', owners)) do
  if owner == ARGV[4] then
    held = held + 1
  end
end
if held >= tonumber(ARGV[7]) then
  return {'owner'}
end
redis.call('HSET', records, id, ARGV[3])
redis.call('HSET', cursors, id, ARGV[6])
redis.call('HSET', owners, id, ARGV[4])
redis.call('ZADD', expiry, ARGV[5], id)
return {'new'}
