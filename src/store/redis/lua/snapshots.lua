-- KEYS: task 1, round 1, task 2, round 2, ... ARGV: has_owner, owner.
-- Replies one element per task, in order: its snapshot when the owner may
-- see it, else false (the task expired, or is gone, since it was listed).
-- With has_owner '*' (the operator's listing) every existing task is seen,
-- its snapshot preceded by its owner flag, owner, tool and run
-- (`admin_head`).
local out = {}
for i = 1, #KEYS, 2 do
  if reachable(KEYS[i], ARGV[1], ARGV[2]) then
    local head = {}
    if ARGV[1] == '*' then
      head = admin_head(KEYS[i])
    end
    out[#out + 1] = snapshot(KEYS[i], KEYS[i + 1], head)
  else
    out[#out + 1] = false
  end
end
return out
