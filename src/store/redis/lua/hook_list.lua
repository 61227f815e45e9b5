-- KEYS: as hook_put.lua. ARGV: now ms.
-- Replies the live subscriptions as id, record, cursor triples.
local reply = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. ARGV[1], '+inf')) do
  local record = redis.call('HGET', KEYS[1], id)
  if record then
    reply[#reply + 1] = id
    reply[#reply + 1] = record
    reply[#reply + 1] = redis.call('HGET', KEYS[2], id) or ''
  end
end
return reply
