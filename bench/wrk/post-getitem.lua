-- POST /dao/Demo/getItem with a random primary key of the 1,000 seeded rows.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
math.randomseed(42)
request = function()
  return wrk.format(nil, "/dao/Demo/getItem", nil, "[" .. math.random(1, 1000) .. "]")
end
