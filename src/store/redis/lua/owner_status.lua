-- The operator's count. KEYS: tasks. Replies one element per task, in
-- order: false when it is gone, else its owner flag, owner and status.
local out = {}
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    local row = owner_of(KEYS[i])
    row[3] = redis.call('HGET', KEYS[i], 's')
    out[#out + 1] = row
  else
    out[#out + 1] = false
  end
end
return out
