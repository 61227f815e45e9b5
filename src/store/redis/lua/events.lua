-- KEYS: an owner's stream of status changes, the shard's dropped-ids hash.
-- ARGV: the cursor's entry id ('' for none: from now), how many at most.
-- Replies {last entry id ('0-0': none yet), last dropped id ('0-0': none),
-- then, with a cursor, the entries after it as XRANGE gives them}.
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local reply = {'0-0', redis.call('HGET', KEYS[2], KEYS[1]) or '0-0'}
if last[1] then
  reply[1] = last[1][1]
end
if ARGV[1] ~= '' then
  reply[3] = redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])
end
return reply
