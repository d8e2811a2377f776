-- POST /dao/UserItems/{getItem|putItem} as a user chosen at random per request:
-- X-User-Id u<n> with n in 1…USERS (environment, default 10000). MODE=read
-- reads row 1 (seeded for every user), MODE=write replaces one of rows 1…10.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local users = tonumber(os.getenv("USERS") or "10000")
local write = os.getenv("MODE") == "write"
local headers = {["Content-Type"] = "application/json"}
function setup(thread)
  thread:set("seed", math.random(1, 1000000))
end
function init(args)
  math.randomseed(seed or 42)
end
request = function()
  headers["X-User-Id"] = "u" .. math.random(1, users)
  if write then
    return wrk.format(nil, "/dao/UserItems/putItem", headers,
                      '[' .. math.random(1, 10) .. ', "written at ' .. math.random(1, 1000000) .. '"]')
  end
  return wrk.format(nil, "/dao/UserItems/getItem", headers, "[1]")
end
