-- The same lookup through Datasette's canned query get_item.
math.randomseed(42)
request = function()
  return wrk.format("GET", "/common/get_item.json?_shape=array&index=" .. math.random(1, 1000))
end
