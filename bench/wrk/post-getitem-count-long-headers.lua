-- post-getitem-count.lua's requests with the long fields real clients send: a 907-byte Authorization (a bearer
-- token's size; the default trusted-header mode reads no token, but the transport checks every field's bytes) and
-- a browser's 111-byte User-Agent. Run from the repository's root, as bench/callgrind runs it.
dofile("bench/wrk/post-getitem-count.lua")
wrk.headers["Authorization"] = "Bearer " .. string.rep("abcdefghij", 90)
wrk.headers["User-Agent"] = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
