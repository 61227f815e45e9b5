-- KEYS: task, round. ARGV: has_owner, owner.
if not visible(KEYS[1], ARGV[1], ARGV[2]) then
  return false
end
return snapshot(KEYS[1], KEYS[2], {})
