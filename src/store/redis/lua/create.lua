-- KEYS: task, owner index, driving set, lease and registry of this instance,
--       the index of every task, then, only when the task is created under a quota, the owner's live
--       set and the store's live set.
-- ARGV: has_owner, owner, created ms, deadline ms or '', ttl ns or '',
--       poll ns or '', has_message, message, id, task key head,
--       instance id, lease ms, per-owner cap or '', total cap or '',
--       re-run record or '', attempts in all, has_tool, tool, changes channel.
-- Replies 1 when created (or created already by this same call), 0 on an id collision, -1 (per owner) or -2 (total)
-- when a quota refuses the task; nothing is stored then.
local task, index = KEYS[1], KEYS[2]
if redis.call('EXISTS', task) == 1 then
  -- This very create sent again (a cluster client retries a command whose
  -- connection broke): it took the first time.
  local f = redis.call('HMGET', task, 'd', 'c')
  if f[1] == ARGV[11] and f[2] == ARGV[3] then
    return 1
  end
  return 0
end

-- The live sets hold the ids of tasks created under a quota, scored by
-- deadline (+inf without TTL): what expired by now (the server's clock, as
-- for the task keys' own expiry) is dropped, what is left is live.
local counted = #KEYS > 6
local mine, all, held, total
if counted then
  mine, all = KEYS[7], KEYS[8]
  local time = redis.call('TIME')
  local now = time[1] .. string.format('%03d', math.floor(tonumber(time[2]) / 1000))
  redis.call('ZREMRANGEBYSCORE', mine, '-inf', now)
  redis.call('ZREMRANGEBYSCORE', all, '-inf', now)
  held, total = redis.call('ZCARD', mine), redis.call('ZCARD', all)
  if ARGV[13] ~= '' and held >= tonumber(ARGV[13]) then
    return -1
  end
  if ARGV[14] ~= '' and total >= tonumber(ARGV[14]) then
    return -2
  end
end

redis.call('HSET', task, 's', 'working', 'c', ARGV[3], 'u', ARGV[3])
if ARGV[1] == '1' then
  redis.call('HSET', task, 'w', ARGV[2])
end
if ARGV[5] ~= '' then
  redis.call('HSET', task, 't', ARGV[5])
end
if ARGV[6] ~= '' then
  redis.call('HSET', task, 'p', ARGV[6])
end
if ARGV[7] == '1' then
  redis.call('HSET', task, 'm', ARGV[8])
end
if ARGV[17] == '1' then
  redis.call('HSET', task, 'n', ARGV[18])
end
if ARGV[15] ~= '' then
  -- What it takes to run the call again if this instance is lost.
  redis.call('HSET', task, 'rr', ARGV[15], 'at', 1, 'am', ARGV[16])
end
-- Logged while the hash exists (the expiry below may be past already).
logged(task, ARGV[9])
-- This instance drives the task (before the expiry, which may be past).
drive(task, ARGV[9], ARGV[11], KEYS[3], KEYS[5], KEYS[4], ARGV[12])
local deadline = ARGV[4]
if deadline ~= '' then
  redis.call('HSET', task, 'e', deadline)
  redis.call('PEXPIREAT', task, deadline)
end

-- A sorted set of tasks lives as long as its longest-lived task.
local function add(set, score, existed)
  redis.call('ZADD', set, score, ARGV[9])
  if deadline == '' then
    redis.call('PERSIST', set)
  elseif existed then
    redis.call('PEXPIREAT', set, deadline, 'GT')
  else
    redis.call('PEXPIREAT', set, deadline)
  end
end
add(index, ARGV[3], redis.call('EXISTS', index) == 1)
add(KEYS[6], ARGV[3], redis.call('EXISTS', KEYS[6]) == 1)
if counted then
  -- An empty sorted set does not exist: the counts tell whether they did.
  local score = deadline ~= '' and deadline or '+inf'
  add(mine, score, held > 0)
  add(all, score, total > 0)
end
-- Amortized trimming: the oldest entries are the first to expire.
for _, set in ipairs({index, KEYS[6]}) do
  for _, id in ipairs(redis.call('ZRANGE', set, 0, 1)) do
    if redis.call('EXISTS', ARGV[10] .. id) == 0 then
      redis.call('ZREM', set, id)
    end
  end
end

-- Entries of tasks that expired while working leave the driving set the
-- same way: two random ones are checked at each create.
for _, id in ipairs(redis.call('SRANDMEMBER', KEYS[3], 2)) do
  if redis.call('HGET', ARGV[10] .. id, 'd') ~= ARGV[11] then
    redis.call('SREM', KEYS[3], id)
  end
end
-- A new task is a change: a console following every owner shows it.
announce(ARGV[19], ARGV[9])
return 1
