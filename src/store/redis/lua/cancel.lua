-- KEYS: task, round. ARGV: has_owner ('*': the operator's, any owner), owner, now ms, channel, id,
-- driving key head.
-- Replies false when the owner sees no such task, else a tag
-- ('cancelled' or 'terminal') followed by the snapshot.
if not reachable(KEYS[1], ARGV[1], ARGV[2]) then
  return false
end
if terminal(redis.call('HGET', KEYS[1], 's')) then
  return snapshot(KEYS[1], KEYS[2], {'terminal'})
end
redis.call('HSET', KEYS[1], 's', 'cancelled', 'u', ARGV[3])
redis.call('HDEL', KEYS[1], 'q')
redis.call('DEL', KEYS[2])
undrive(KEYS[1], ARGV[5], ARGV[6])
logged(KEYS[1], ARGV[5])
announce(ARGV[4], ARGV[5])
return snapshot(KEYS[1], KEYS[2], {'cancelled'})
