-- POST /dao/UserItems/getItem as every user in turn: with T threads (WRK_THREADS,
-- default 2, as wrk -t), thread k reads as users k+1, k+1+T, k+1+2T, … of USERS
-- (default 10000), so the threads together touch every user once before any
-- twice. MODE=write writes each user's row 1 instead (putItem [1, "row 1"]).
-- ONCE=1 ends wrk once every user has been answered (the -d duration is then an
-- upper bound): the thread answered last reports and exits, as wrk itself would
-- wait out -d after its threads stopped. At the end it prints "touched N of USERS users".
wrk.method = "POST"
local users = tonumber(os.getenv("USERS") or "10000")
local count = tonumber(os.getenv("WRK_THREADS") or "2")
local write = os.getenv("MODE") == "write"
local once = os.getenv("ONCE") == "1"
local headers = {["Content-Type"] = "application/json"}
local threads = {}
function setup(thread)
  -- With ONCE=1, the threads note their ends in files named after one temporary file, made here (the main
  -- script's state, which every thread's setup runs in): the file itself is the claim the last one takes.
  if once and not base then base = os.tmpname() end
  thread:set("index", #threads)
  thread:set("base", base)
  table.insert(threads, thread)
end
function init(args)
  sent = 0
  answered = 0
  mine = math.floor((users - index + count - 1) / count)
end
if once then
  response = function(status, headers, body)
    answered = answered + 1
    if answered >= mine then
      finished()
      wrk.thread:stop()
    end
  end
end
-- Notes this thread's end; once every thread's is noted, the one that renames the claim first (a rename is
-- atomic: one thread wins) removes the files, reports and exits.
function finished()
  local mark = io.open(base .. ".done-" .. index, "w")
  mark:close()
  for k = 0, count - 1 do
    local other = io.open(base .. ".done-" .. k, "r")
    if not other then return end
    other:close()
  end
  if os.rename(base, base .. ".claimed") then
    os.remove(base .. ".claimed")
    for k = 0, count - 1 do os.remove(base .. ".done-" .. k) end
    io.write(string.format("touched %d of %d users\n", users, users))
    io.flush()
    os.exit(0)
  end
end
request = function()
  headers["X-User-Id"] = "u" .. ((sent * count + index) % users + 1)
  sent = sent + 1
  if write then
    return wrk.format(nil, "/dao/UserItems/putItem", headers, '[1, "row 1"]')
  end
  return wrk.format(nil, "/dao/UserItems/getItem", headers, "[1]")
end
function done(summary, latency, requests)
  local touched = 0
  for k, thread in ipairs(threads) do
    local mine = math.floor((users - (k - 1) + count - 1) / count)
    touched = touched + math.min(thread:get("sent"), mine)
  end
  io.write(string.format("touched %d of %d users\n", touched, users))
end
