-- GET /lru/memory/user/bench/entries/k<n>: one of 1,000 entries of a user's memory cache.
wrk.method = "GET"
wrk.headers["X-User-Id"] = "bench-user"
math.randomseed(42)
request = function()
  return wrk.format(nil, "/lru/memory/user/bench/entries/k" .. math.random(1, 1000))
end
