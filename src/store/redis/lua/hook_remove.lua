-- KEYS: as hook_put.lua. ARGV: now ms, id, owner key.
-- Replies 1 when the owner's live subscription was removed, else 0.
local records, cursors, owners, expiry = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id = ARGV[2]
local until_ms = redis.call('ZSCORE', expiry, id)
if redis.call('HGET', owners, id) ~= ARGV[3] or not until_ms
  or tonumber(until_ms) <= tonumber(ARGV[1]) then
  return 0
end
redis.call('HDEL', records, id)
redis.call('HDEL', cursors, id)
redis.call('HDEL', owners, id)
redis.call('ZREM', expiry, id)
return 1
