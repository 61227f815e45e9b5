-- KEYS: owner index (or the index of every task, with has_owner '*').
-- ARGV: task key head, has_owner ('*': any owner), owner, after score or '',
--       after id, limit, budget (most entries to inspect).
-- Replies {more '1'/'0', last score or '', last id or '', ids...}, oldest
-- first. Entries whose task is gone are removed on the way.
local index = KEYS[1]
local head = ARGV[1]
local limit, budget = tonumber(ARGV[6]), tonumber(ARGV[7])
local after_score, after_id = ARGV[4], ARGV[5]

-- Where to start: just after the cursor entry, found by rank when it is
-- still indexed, else by its (score, id) position.
local pos = 0
if after_score ~= '' then
  local rank = redis.call('ZRANK', index, after_id)
  if rank then
    pos = rank + 1
  else
    pos = redis.call('ZCOUNT', index, '-inf', '(' .. after_score)
    for _, id in ipairs(redis.call('ZRANGE', index, after_score, after_score, 'BYSCORE')) do
      if id <= after_id then
        pos = pos + 1
      end
    end
  end
end

local ids, gone = {}, {}
local last_score, last_id = after_score, after_id
local scanned = 0
local total = redis.call('ZCARD', index)
while #ids < limit and scanned < budget and pos < total do
  local want = math.min(limit - #ids, budget - scanned)
  local batch = redis.call('ZRANGE', index, pos, pos + want - 1, 'WITHSCORES')
  if #batch == 0 then
    break
  end
  for i = 1, #batch, 2 do
    local id = batch[i]
    pos, scanned = pos + 1, scanned + 1
    last_id, last_score = id, batch[i + 1]
    local task = head .. id
    if reachable(task, ARGV[2], ARGV[3]) then
      ids[#ids + 1] = id
    elseif redis.call('EXISTS', task) == 0 then
      gone[#gone + 1] = id
    end
  end
end
-- Ranks stay valid while scanning; removals wait until the end.
for _, id in ipairs(gone) do
  redis.call('ZREM', index, id)
end
local out = {pos < total and '1' or '0', last_score, last_id}
for _, id in ipairs(ids) do
  out[#out + 1] = id
end
return out
