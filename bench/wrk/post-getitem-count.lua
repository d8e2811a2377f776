-- POST /dao/Demo/getItem as post-getitem.lua, wrk exiting (no report) after
-- REQUESTS_PER_THREAD responses (environment, default 1000): a fixed number of requests.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local limit = tonumber(os.getenv("REQUESTS_PER_THREAD") or "1000")
math.randomseed(42)
function init(args)
  answered = 0
end
request = function()
  return wrk.format(nil, "/dao/Demo/getItem", nil, "[" .. math.random(1, 1000) .. "]")
end
response = function(status, headers, body)
  answered = answered + 1
  if answered >= limit then os.exit(0) end
end
