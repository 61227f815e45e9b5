-- KEYS: the subscriptions' cursors. ARGV: id, the cursor expected, the new one.
-- Replies 1 when the cursor was where expected and moved, else 0.
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
