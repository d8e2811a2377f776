#!/usr/bin/env python3
"""The cost of result references in POST /transaction.

A transaction of one parent insert and ten child inserts, the children taking the parent's rowid by
reference ({"$result": "/0/lastInsertRowId"}), against the same eleven calls with the rowid written in
literally (the rowid the parent will get, known beforehand: one connection, nothing else writes). One
`daogate serve` (default: the release build) on its own data, one keep-alive connection; ROUNDS rounds of
COUNT pairs, the two kinds alternating transaction by transaction (so that the shared machine's drift hits
both alike); prints each kind's median time per transaction and their ratio.

usage: bench/transaction-references.py [BINARY] (env: ROUNDS=7, COUNT=300, PORT=40720)
"""
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

binary = sys.argv[1] if len(sys.argv) > 1 else ".build/release/daogate"
rounds = int(os.environ.get("ROUNDS", "7"))
count = int(os.environ.get("COUNT", "300"))
port = int(os.environ.get("PORT", "40720"))

module = """<module name="Blog" initializer="create" version="1.0">
  <update id="create">
    <step>create table if not exists posts (id integer primary key, title text not null)</step>
    <step>create table if not exists comments (id integer primary key, post integer not null, body text)</step>
  </update>
  <insert id="addPost" arguments="$title:string">insert into posts (title) values (#{title})</insert>
  <insert id="addComment" arguments="$post:long long, body:string">insert into comments (post, body) values (#{post}, #{body})</insert>
</module>
"""

folder = tempfile.mkdtemp(prefix="daogate-bench-txn-")
os.makedirs(f"{folder}/modules")
with open(f"{folder}/modules/Blog.xml", "w") as file:
    file.write(module)
with open(f"{folder}/key", "wb") as file:
    file.write(os.urandom(32))
server = subprocess.Popen([binary, "serve", "--modules", f"{folder}/modules", "--data", f"{folder}/data", "--port", str(port),
                           "--key-file", f"{folder}/key", "--access-log", "off", "--log-level", "warning"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(200):
        try:
            connection.request("GET", "/healthz")
            connection.getresponse().read()
            break
        except OSError:
            connection.close()
            time.sleep(0.05)
    headers = {"Content-Type": "application/json"}
    next_post = 1

    def body(referenced):
        post = {"$result": "/0/lastInsertRowId"} if referenced else next_post
        calls = [{"module": "Blog", "method": "addPost", "arguments": {"title": "parent"}}]
        calls += [{"module": "Blog", "method": "addComment", "arguments": {"post": post, "body": f"child {n}"}} for n in range(10)]
        return json.dumps({"calls": calls})

    def one(referenced):
        """One transaction: seconds."""
        global next_post
        payload = body(referenced)
        began = time.perf_counter()
        connection.request("POST", "/transaction", body=payload, headers=headers)
        response = connection.getresponse()
        answer = response.read()
        elapsed = time.perf_counter() - began
        results = json.loads(answer)["results"]
        assert response.status == 200 and results[0]["lastInsertRowId"] == next_post and len(results) == 11, answer
        next_post += 1
        return elapsed

    def round_(first):
        """COUNT pairs, the two kinds alternating (`first` leading): each kind's median seconds per transaction."""
        times = {True: [], False: []}
        for _ in range(count):
            for referenced in (first, not first):
                times[referenced].append(one(referenced))
        return statistics.median(times[True]), statistics.median(times[False])

    round_(True)  # warm-up
    rounds_ = [round_(index % 2 == 0) for index in range(rounds)]
    referenced = statistics.median(r for r, _ in rounds_)
    literal = statistics.median(l for _, l in rounds_)
    ratios = [r / l for r, l in rounds_]
    print(f"{rounds} rounds of {count} pairs of transactions (1 parent + 10 children), the two kinds alternating, one keep-alive connection")
    print(f"with references: {referenced * 1e6:.0f} µs per transaction (median of the rounds' medians: {', '.join(f'{r * 1e6:.0f}' for r, _ in rounds_)})")
    print(f"with literals:   {literal * 1e6:.0f} µs per transaction ({', '.join(f'{l * 1e6:.0f}' for _, l in rounds_)})")
    print(f"references / literals: {referenced / literal:.3f}; median of the rounds' ratios {statistics.median(ratios):.3f}")
finally:
    server.terminate()
    server.wait()
    shutil.rmtree(folder, ignore_errors=True)
