-- KEYS: a subscription's delivery claim. ARGV: this instance's id, lease ms.
-- Replies 1 when this instance holds the claim (taken, or renewed), else 0.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
