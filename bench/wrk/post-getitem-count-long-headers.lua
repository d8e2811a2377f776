-- post-getitem-count.lua's requests with the long fields real clients send: a 907-byte Authorization (a bearer
-- token's size; the default trusted-header mode reads no token, but the transport checks every field's bytes) and
-- a browser's 111-byte User-Agent.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. string.rep("abcdefghij", 90)
wrk.headers["User-Agent"] = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
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
