-- GET /kv/user/bench/k<n>: one of 1,000 seeded string values in a user's own database.
wrk.method = "GET"
wrk.headers["X-User-Id"] = "bench-user"
math.randomseed(42)
request = function()
  return wrk.format(nil, "/kv/user/bench/k" .. math.random(1, 1000))
end
