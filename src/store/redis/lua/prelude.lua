-- Shared by every script of RedisTaskStore (src/store/redis/scripts.rs).
-- Task hash fields: s status, w owner (absent: no owner), c created ms,
-- u updated ms, e deadline ms (absent: no TTL), t ttl ns, p poll ns,
-- m status message, r result or error (terminal only), d the id of the
-- instance that drives the task (only while it is `working`), q the
-- outstanding requests as one JSON object (only while `input_required`),
-- n the name of the tool whose call made it (absent: unknown), at the run
-- of the call (absent: the first; kept with a re-run record).

-- How many status changes an owner's log keeps: trimmed by LOG_BATCH at a
-- time once it holds LOG_KEPT + LOG_BATCH (src/store/redis/events.rs).
local LOG_KEPT = 10000
local LOG_BATCH = 100
-- How long an owner's log outlives its last change (7 days, in ms): the
-- logs of owners gone quiet do not pile up. A cursor into a log that
-- expired reads as `truncated`, and its reader reads its tasks again.
local LOG_LIFE = 604800000

-- Logs the status the task now has, in the script that changed it (one
-- atomic step), to its owner's stream of status changes:
-- `<base>:events:owned:<owner>` or `<base>:events:unowned`, in the task's
-- own slot (`<base>` is the task key's hash tag). Entry fields: i id, then
-- the task's s, c, u, t, p, m as the task hash holds them (no payload).
-- When the oldest are trimmed, the id of the last one trimmed is kept in
-- `<base>:events:dropped` (field: the stream's key), so that a reader
-- behind it is told it missed changes.
local function logged(task, id)
  local base = string.match(task, '^(.*):task:[^:]*$')
  local f = redis.call('HMGET', task, 's', 'w', 'c', 'u', 't', 'p', 'm')
  local stream = base .. ':events:unowned'
  if f[2] then
    stream = base .. ':events:owned:' .. f[2]
  end
  local entry = {'i', id, 's', f[1], 'c', f[3], 'u', f[4]}
  for i, name in ipairs({'t', 'p', 'm'}) do
    if f[4 + i] then
      entry[#entry + 1] = name
      entry[#entry + 1] = f[4 + i]
    end
  end
  redis.call('XADD', stream, '*', unpack(entry))
  redis.call('PEXPIRE', stream, LOG_LIFE)
  if redis.call('XLEN', stream) > LOG_KEPT + LOG_BATCH then
    local old = redis.call('XRANGE', stream, '-', '+', 'COUNT', LOG_BATCH + 1)
    redis.call('XTRIM', stream, 'MINID', old[LOG_BATCH + 1][1])
    redis.call('HSET', base .. ':events:dropped', stream, old[LOG_BATCH][1])
    redis.call('PEXPIRE', base .. ':events:dropped', LOG_LIFE)
  end
end

-- Announces `message` on `channel`. A channel argument that starts with
-- '#' names a sharded channel (SPUBLISH: on a Redis Cluster the message
-- stays with the nodes of this slot); any other, a plain one (PUBLISH).
local function announce(channel, message)
  if string.byte(channel, 1) == 35 then
    redis.call('SPUBLISH', string.sub(channel, 2), message)
  else
    redis.call('PUBLISH', channel, message)
  end
end

-- Whether the task exists and belongs to exactly this owner:
-- plain equality on Option<&str>, as in MemoryTaskStore.
local function visible(task, has_owner, owner)
  local w = redis.call('HGET', task, 'w')
  if has_owner == '1' then
    return w == owner
  end
  return w == false and redis.call('EXISTS', task) == 1
end

-- `visible`, or, for the operator's methods (has_owner '*', which no
-- owner's call passes), whether the task exists at all, whoever owns it.
local function reachable(task, has_owner, owner)
  if has_owner == '*' then
    return redis.call('EXISTS', task) == 1
  end
  return visible(task, has_owner, owner)
end

-- The owner of a task as a flag and a name, as the scripts take it.
local function owner_of(task)
  local w = redis.call('HGET', task, 'w')
  if w then
    return {'1', w}
  end
  return {'0', ''}
end

-- What the operator's replies start with: the owner flag and owner, the
-- tool's name (false: unknown) and the run of the call (false: the first).
local function admin_head(task)
  local f = redis.call('HMGET', task, 'w', 'n', 'at')
  local head = {'0', '', f[2], f[3]}
  if f[1] then
    head[1], head[2] = '1', f[1]
  end
  return head
end

local function terminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end

-- The outstanding requests of an input round as one JSON object, each
-- `"key":request` in the order the round listed them, requests verbatim.
-- Keys are encoded as serde_json would (cjson also escapes '/').
local function requests_object(round)
  local n = tonumber(redis.call('HGET', round, 'n') or '0')
  local parts = {}
  for i = 1, n do
    local key = redis.call('HGET', round, 'k' .. i)
    if key and redis.call('HEXISTS', round, 'q:' .. key) == 1 then
      local encoded = string.gsub(cjson.encode(key), '\\/', '/')
      parts[#parts + 1] = encoded .. ':' .. redis.call('HGET', round, 'v' .. i)
    end
  end
  return '{' .. table.concat(parts, ',') .. '}'
end

-- Appends the snapshot to `out`: status, created, updated, ttl, poll,
-- message, payload, requests. The requests (`q`, an object) are present
-- only while the task waits for input: kept in the task hash by
-- require_input and answer_input, so that `get` is one HMGET; a round
-- written before `q` existed is rendered from the round instead.
local function snapshot(task, round, out)
  local f = redis.call('HMGET', task, 's', 'c', 'u', 't', 'p', 'm', 'r', 'q')
  if f[1] == 'input_required' and not f[8] then
    f[8] = requests_object(round)
  elseif f[1] ~= 'input_required' then
    f[8] = false
  end
  for i = 1, 8 do
    out[#out + 1] = f[i]
  end
  return out
end

-- The task stops being driven (it ended, or waits for input): it leaves its
-- driver's driving set, `head .. driver` (Keys::driving).
local function undrive(task, id, head)
  local driver = redis.call('HGET', task, 'd')
  if driver then
    redis.call('SREM', head .. driver, id)
    redis.call('HDEL', task, 'd')
  end
end

-- The task ends `status` (terminal) with `payload` (result or error object)
-- at `now`: a failed task reports its error's message, in the same step;
-- its round and driver go, and the end is announced on `channel`.
local function finish(task, round, status, payload, now, channel, id, head)
  redis.call('HSET', task, 's', status, 'r', payload, 'u', now)
  if status == 'failed' then
    local ok, error = pcall(cjson.decode, payload)
    if ok and type(error) == 'table' and type(error.message) == 'string' then
      redis.call('HSET', task, 'm', error.message)
    end
  end
  redis.call('HDEL', task, 'q')
  redis.call('DEL', round)
  undrive(task, id, head)
  logged(task, id)
  announce(channel, id)
end

-- The task is driven by instance `iid` from now on: recorded in the task,
-- in the instance's driving set, and the instance is registered, its lease
-- set if it had lapsed (the instance is evidently alive).
local function drive(task, id, iid, driving, instances, lease, lease_ms)
  redis.call('HSET', task, 'd', iid)
  redis.call('SADD', driving, id)
  redis.call('SADD', instances, iid)
  redis.call('SET', lease, '1', 'PX', lease_ms, 'NX')
end
