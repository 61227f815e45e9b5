-- wrk script of scripts/http-bench.sh: POSTs one prepared MCP request and
-- checks every answer.
--
-- Arguments (after `--` on wrk's command line):
--   1. the body file (NAME.body written by the http_server bench)
--   2. the headers file (NAME.headers: one `Name: value` per line)
--   3. the content type the answers must start with
--      (`application/json` or `text/event-stream`)
--
-- An answer is wrong when its status is not 200, its content type is not
-- the expected one, or its body holds no `"result"` (a JSON-RPC error, a
-- 404 of the router). At the end it prints, for the script to parse:
--   checked N      answers seen
--   wrong N        answers that failed a check
--   first_wrong …  the first wrong answer (status, type, body start)
--   p50_us N       median latency in microseconds
--   p99_us N       99th percentile latency in microseconds

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

local function read_file(path)
  local file = assert(io.open(path, "rb"))
  local text = file:read("*a")
  file:close()
  return text
end

function init(args)
  checked = 0
  wrong = 0
  first_wrong = ""
  expected_type = args[3]
  wrk.method = "POST"
  wrk.body = read_file(args[1])
  for line in read_file(args[2]):gmatch("[^\r\n]+") do
    local name, value = line:match("^([^:]+):%s*(.*)$")
    if name then
      wrk.headers[name] = value
    end
  end
end

local function content_type(headers)
  for name, value in pairs(headers) do
    if name:lower() == "content-type" then
      return value
    end
  end
  return ""
end

function response(status, headers, body)
  checked = checked + 1
  local kind = content_type(headers)
  local ok = status == 200
    and kind:sub(1, #expected_type) == expected_type
    and body:find('"result"', 1, true) ~= nil
  if not ok then
    wrong = wrong + 1
    if first_wrong == "" then
      first_wrong = string.format("HTTP %d, %s: %s", status, kind, body:sub(1, 200))
    end
  end
end

function done(summary, latency, requests)
  local checked_all, wrong_all, first = 0, 0, ""
  for _, thread in ipairs(threads) do
    checked_all = checked_all + thread:get("checked")
    wrong_all = wrong_all + thread:get("wrong")
    if first == "" then
      first = thread:get("first_wrong")
    end
  end
  io.write(string.format("checked %d\n", checked_all))
  io.write(string.format("wrong %d\n", wrong_all))
  if first ~= "" then
    io.write("first_wrong " .. first:gsub("\n", " ") .. "\n")
  end
  io.write(string.format("p50_us %d\n", latency:percentile(50)))
  io.write(string.format("p99_us %d\n", latency:percentile(99)))
end
