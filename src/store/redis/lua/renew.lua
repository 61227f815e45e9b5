-- KEYS: the instance's lease, the instance registry.
-- ARGV: instance id, lease ms.
-- Keeps an instance alive for one more lease in one shard, and listed
-- there. A script rather than MULTI/EXEC: on a Redis Cluster a script
-- follows its slot to a new primary as any command does, where a
-- transaction sent to the old one is aborted (MOVED) and not sent again.
redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
