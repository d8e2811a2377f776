-- POST /dao/Demo/insertItem: one row per request (a write transaction each), for the change feed's cost.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  return wrk.format(nil, "/dao/Demo/insertItem", nil, '["a row written by wrk"]')
end
