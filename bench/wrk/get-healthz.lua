-- GET /healthz: the cheapest route (no database, no body), the floor of what the transport, the router and the
-- access log cost; sent the same to the constant server, which answers any path.
wrk.method = "GET"
wrk.path = "/healthz"
