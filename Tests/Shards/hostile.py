#!/usr/bin/env python3
"""What a hostile caller, a hostile or broken peer, or a careless operator can do to shards behind HAProxy, each
on real servers: two daogate shards, HAProxy from `daogate haproxy-config`, and one fake shard (a Python HTTP
server the map names, playing a source or a target that misbehaves).

- `/changes` is admitted like every route (421 on a shard that does not own the user), `space=common` goes
  to the common shard, and a stream whose bucket moves away ends with `closing` `bucket_moved`; the client's
  reconnection through HAProxy reaches the new owner.
- `POST /shard/import` fetches only from the bucket's owner in the map (an address outside it gets no
  connection, so no admin token); a file beyond the size cap, an endless answer, a trigger, a view or an unknown
  table is refused (422 `import_refused`) and nothing is installed; a clean file is.
- `daogate move-bucket`: each precondition's failure changes nothing; an import that fails is rolled back;
  a commit that fails is rolled back; each failure after the commit says so and the same command completes
  it; a relative, `..` or symlinked `--haproxy-map` works.

Run by Tests/Shards/run. Ports: SHARDS_PORT_BASE + 20 to + 25."""
import http.client, http.server, json, os, shutil, socket, sqlite3, subprocess, sys, tempfile, threading, time, zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402  (its Shard, request and wait_for)

ROOT, BINARY = cluster.ROOT, cluster.BINARY
BASE = int(os.environ.get("SHARDS_PORT_BASE", "30100")) + 20
BUCKETS = 16
CAP = 262144  # --max-database-size of the shards
failures = cluster.failures  # one list: cluster.wait_for reports there too


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message, flush=True)
    return condition


def bucket(user):
    return zlib.crc32(user.encode()) % BUCKETS


def user_in(buckets, prefix="u"):
    return next(f"{prefix}-{n}" for n in range(100000) if bucket(f"{prefix}-{n}") in buckets)


request = cluster.request


class Shard(cluster.Shard):
    def start(self):
        arguments = [BINARY, "serve", "--modules", os.path.join(ROOT, "modules"), "--data", self.data,
                     "--port", str(self.port), "--key-file", os.path.join(self.work, "key"),
                     "--admin-token-file", os.path.join(self.work, "token"), "--shard", self.name,
                     "--shard-map", os.path.join(self.work, "shards.json"), "--max-connections-per-address", "0",
                     "--max-database-size", str(CAP), "--changes-heartbeat", "1"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("DAOGATE_")}
        self.process = subprocess.Popen(arguments, stdout=self.log, stderr=self.log, cwd=ROOT, env=env)
        cluster.wait_for(lambda: request("127.0.0.1", self.port, "GET", "/healthz")[0] == 200, f"shard {self.name}")


class Fake:
    """A shard in the map that misbehaves as told: `behaviour` maps a path to a function (handler, body) that answers."""

    def __init__(self, port):
        self.behaviour = {}
        self.seen = []  # (path, authorization)
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *arguments):
                pass

            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                fake.seen.append((self.path, self.headers.get("Authorization")))
                action = fake.behaviour.get(self.path)
                if action is None:
                    self.reply(404, {"code": "not_found"})
                else:
                    action(self, body)

            def reply(self, status, value, raw=None):
                data = raw if raw is not None else json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = answer

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.handle_error = lambda request, address: None  # a client gone mid-answer is part of the play
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


class SSE:
    """A Server-Sent Events reader on a raw socket (the body chunked, as daogate and HAProxy send it)."""

    def __init__(self, port, headers, path="/changes"):
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=10)
        lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.socket.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n{lines}\r\n".encode())
        self.buffer, self.closed = b"", False
        while b"\r\n\r\n" not in self.buffer:
            self.receive(time.time() + 10)
            if self.closed:
                break
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        self.status = int(head.split(b" ")[1]) if head else 0
        self.text = ""

    def receive(self, deadline):
        self.socket.settimeout(max(0.01, deadline - time.time()))
        try:
            data = self.socket.recv(65536)
        except socket.timeout:
            return
        except OSError:
            data = b""
        if data:
            self.buffer += data
        else:
            self.closed = True

    def decode(self):
        while True:
            line, separator, rest = self.buffer.partition(b"\r\n")
            if not separator:
                return
            size = int(line.split(b";")[0], 16)
            if len(rest) < size + 2:
                return
            self.text += rest[:size].decode()
            self.buffer = rest[size + 2:]
            if size == 0:
                self.closed = True
                return

    def next(self, timeout=10):
        """The next event as (name, data), comments skipped; None when none comes or the stream ended."""
        deadline = time.time() + timeout
        while True:
            self.decode()
            while "\n\n" in self.text:
                block, _, self.text = self.text.partition("\n\n")
                name, data = "message", ""
                for line in block.split("\n"):
                    if line.startswith("event:"):
                        name = line[6:].strip()
                    elif line.startswith("data:"):
                        data += line[5:].strip()
                if any(line.startswith(("event:", "data:", "id:")) for line in block.split("\n")):
                    return name, json.loads(data) if data else None
            if self.closed or time.time() >= deadline:
                return None
            self.receive(deadline)

    def close(self):
        self.socket.close()


def message(n):
    return {"model": {"time": n, "content": f"m{n}", "uin": n, "read": False}}


def database(path, statements):
    if os.path.exists(path):
        os.remove(path)
    connection = sqlite3.connect(path)
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.close()
    with open(path, "rb") as f:
        return f.read()


def main():
    if not os.path.exists(BINARY):
        raise SystemExit(f"no {BINARY}: build first")
    work = tempfile.mkdtemp(prefix="daogate-hostile-")
    shards, haproxy, fake = {}, None, None
    try:
        with open(os.path.join(work, "key"), "wb") as f:
            f.write(os.urandom(32))
        token = "shard-admin-token-" + os.urandom(8).hex()
        with open(os.path.join(work, "token"), "w") as f:
            f.write(token)
        admin = {"Authorization": "Bearer " + token}
        names = {"a": BASE + 1, "b": BASE + 2, "evil": BASE + 3}
        shard_map = {"epoch": 1, "buckets": BUCKETS, "common": "a",
                     "shards": {n: f"127.0.0.1:{p}" for n, p in names.items()},
                     "ranges": [[0, 6, "a"], [7, 13, "b"], [14, 15, "evil"]]}
        map_path = os.path.join(work, "shards.json")
        with open(map_path, "w") as f:
            json.dump(shard_map, f)
        config = os.path.join(work, "haproxy")
        subprocess.run([BINARY, "haproxy-config", "--modules", os.path.join(ROOT, "modules"), "--shard-map", map_path,
                        "--out", config, "--listen", f"127.0.0.1:{BASE}"], check=True, cwd=ROOT)
        fake = Fake(names["evil"])
        fake.behaviour["/shard"] = lambda handler, body: handler.reply(200, {"shard": "evil", "frozen": []})
        fake.behaviour["/healthz"] = lambda handler, body: handler.reply(200, {"status": "ok"})
        fake.behaviour["/shard/reload"] = lambda handler, body: handler.reply(200, {"shard": "evil", "frozen": []})
        for name in ("a", "b"):
            shards[name] = Shard(work, name, names[name])
            shards[name].start()
        haproxy = subprocess.Popen(["haproxy", "-f", os.path.join(config, "haproxy.cfg")],
                                   stdout=open(os.path.join(work, "haproxy.log"), "ab"), stderr=subprocess.STDOUT)
        cluster.wait_for(lambda: request("127.0.0.1", BASE, "GET", "/healthz")[0] == 200, "haproxy")
        sock = os.path.join(config, "haproxy.sock")
        cluster.wait_for(lambda: os.path.exists(sock), "haproxy's runtime socket")

        def move(bucket_number, to, haproxy_map=None, cwd=work, token_file="token", socket_path=sock):
            moved = subprocess.run([BINARY, "move-bucket", str(bucket_number), "--to", to, "--shard-map", map_path,
                                    "--admin-token-file", os.path.join(work, token_file),
                                    "--haproxy-socket", socket_path,
                                    "--haproxy-map", haproxy_map or os.path.join(config, "buckets.map")],
                                   capture_output=True, text=True, cwd=cwd)
            print("move", bucket_number, "->", to, moved.returncode, moved.stdout.strip(), moved.stderr.strip(), flush=True)
            return moved

        def current_map():
            with open(map_path) as f:
                return json.load(f)

        def haproxy_entry(bucket_number):
            connection = socket.socket(socket.AF_UNIX)
            connection.connect(sock)
            connection.sendall(f"show map {os.path.join(config, 'buckets.map')}\n".encode())
            answer = connection.makefile().read()
            connection.close()
            for line in answer.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] == str(bucket_number):
                    return parts[2]
            return None

        def frozen(name):
            return request("127.0.0.1", names[name], "GET", "/shard", None, admin)[1].get("frozen")

        changes(shards, names, admin, move, current_map)
        imports(shards, names, admin, fake, work)
        move_bucket(shards, admin, fake, work, config, sock, move, current_map, haproxy_entry, frozen)
    finally:
        if haproxy:
            haproxy.terminate()
            haproxy.wait()
        for shard in shards.values():
            shard.stop()
        if fake:
            fake.stop()
        if failures:
            print("work folder kept:", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)
    print("hostile shards: ok")


def changes(shards, names, admin, move, current_map):
    """/changes is admitted like every route, and a stream whose bucket moves away ends so that it reconnects."""
    ann = user_in(range(0, 7))  # a's
    refused = SSE(names["b"], {"X-User-Id": ann})  # read as a stream: where it is one, it never ends
    if b"misdirected_request" not in refused.buffer:
        refused.receive(time.time() + 2)
    check(refused.status == 421 and b"misdirected_request" in refused.buffer,
          f"/changes on a shard not owning the user answered {refused.status}")
    refused.close()
    if os.path.exists(os.path.join(shards["b"].data, "users", f"p-{ann}.db")):
        check(False, "the misdirected /changes created the user's file")
    # space=common with a user of b's goes to the common shard (a) through HAProxy.
    bob = user_in(range(7, 14))
    common = SSE(BASE, {"X-User-Id": bob}, "/changes?space=common")
    check(common.status == 200 and (common.next() or ("", None))[0] == "ready", f"/changes?space=common through HAProxy: {common.status}")
    common.close()

    stream = SSE(BASE, {"X-User-Id": ann})
    check(stream.status == 200 and (stream.next() or ("", None))[0] == "ready", f"ann's stream through HAProxy: {stream.status}")
    status, _, _ = request("127.0.0.1", BASE, "POST", "/dao/Messages/insertMessage", message(1), {"X-User-Id": ann})
    event = stream.next()
    check(status == 200 and event and event[0] == "change", f"ann's write reached her stream: {status} {event}")
    moved = move(bucket(ann), "b")
    check(moved.returncode == 0, f"moving ann's bucket failed: {moved.stderr}")
    event = stream.next(timeout=10)
    check(event is not None and event[0] == "closing" and event[1].get("reason") == "bucket_moved"
          and event[1].get("shard") == "b", f"the moved bucket's stream got {event}, not closing bucket_moved")
    check(stream.next(timeout=5) is None and stream.closed, "the moved bucket's stream was not closed")
    stream.close()
    again = SSE(BASE, {"X-User-Id": ann})
    check(again.status == 200 and (again.next() or ("", None))[0] == "ready", f"ann's reconnection: {again.status}")
    status, _, _ = request("127.0.0.1", BASE, "POST", "/dao/Messages/insertMessage", message(2), {"X-User-Id": ann})
    event = again.next()
    check(status == 200 and event and event[0] == "change", f"after the move, ann's write reached her new stream: {status} {event}")
    again.close()
    print("changes: admitted as every route, ended when the bucket moved", flush=True)


def imports(shards, names, admin, fake, work):
    """An import fetches only from the bucket's owner in the map, with a size cap, and installs only daogate's objects."""
    # An address outside the map gets no connection (so no admin token).
    listener = socket.socket()
    listener.bind(("127.0.0.1", BASE + 5))
    listener.listen(5)
    listener.settimeout(2)
    status, problem, _ = request("127.0.0.1", names["b"], "POST", "/shard/import",
                                 {"bucket": 15, "from": f"127.0.0.1:{BASE + 5}"}, admin)
    try:
        connection, _ = listener.accept()
        connection.settimeout(2)
        leaked = connection.recv(65536)
        connection.close()
    except socket.timeout:
        leaked = b""
    listener.close()
    check(status == 400 and problem.get("code") == "unknown_shard", f"an import from outside the map answered {status} {problem}")
    check(b"Authorization" not in leaked and not leaked, f"the shard connected outside the map and sent {leaked[:200]!r}")
    # A shard of the map that does not own the bucket is refused too (a's address for bucket 15, evil's).
    status, problem, _ = request("127.0.0.1", names["b"], "POST", "/shard/import", {"bucket": 15, "from": "a"}, admin)
    check(status == 400 and problem.get("code") == "unknown_shard", f"an import from a shard not owning the bucket answered {status} {problem}")

    eve = user_in([15], "e")
    file = f"users/p-{eve}.db"
    fake.behaviour["/shard/freeze"] = lambda handler, body: handler.reply(200, {"bucket": 15, "files": [file]})
    staged = os.path.join(work, "export.db")
    kv = "create table daogate_kv (business text not null, key text not null, type text not null, value, primary key (business, key))"
    cases = {
        "a trigger": [kv, "create trigger t after insert on daogate_kv begin delete from daogate_kv; end"],
        "a view": [kv, "create view v as select * from daogate_kv"],
        "an unknown table": [kv, "create table planted (x)"],
        "a file beyond the cap": [kv, "create table daogate_lru_big (key text primary key, value blob)"]
        + [f"insert into daogate_lru_big values ('{n}', zeroblob(65536))" for n in range(8)],
    }
    target_file = os.path.join(shards["b"].data, file)
    for what, statements in cases.items():
        content = database(staged, statements)
        fake.behaviour["/shard/export"] = lambda handler, body, content=content: handler.reply(200, None, raw=content)
        status, problem, _ = request("127.0.0.1", names["b"], "POST", "/shard/import", {"bucket": 15, "from": "evil"}, admin)
        check(status == 422 and problem.get("code") == "import_refused", f"an import with {what} answered {status} {problem}")
        check(not os.path.exists(target_file), f"an import with {what} installed the file")

    def endless(handler, body):
        handler.send_response(200)
        handler.send_header("Content-Length", str(1 << 40))
        handler.end_headers()
        chunk = b"\0" * 65536
        try:
            for _ in range(100000):
                handler.wfile.write(chunk)
        except OSError:
            pass
    fake.behaviour["/shard/export"] = endless
    started = time.time()
    status, problem, _ = request("127.0.0.1", names["b"], "POST", "/shard/import", {"bucket": 15, "from": "evil"}, admin)
    check(status == 422 and problem.get("code") == "import_refused" and time.time() - started < 20,
          f"an endless export answered {status} {problem} after {time.time() - started:.1f} s")
    check(not os.path.exists(target_file), "an endless export installed a file")
    incoming = os.path.join(shards["b"].data, "shard", "incoming")
    check(not os.path.exists(incoming) or not os.listdir(incoming), f"refused imports left staged files: {os.listdir(incoming)}")

    content = database(staged, [kv, "insert into daogate_kv values ('b', 'k', 'string', 'v')"])
    fake.behaviour["/shard/export"] = lambda handler, body: handler.reply(200, None, raw=content)
    status, answer, _ = request("127.0.0.1", names["b"], "POST", "/shard/import", {"bucket": 15, "from": "evil"}, admin)
    check(status == 200 and answer.get("files") == [file] and os.path.exists(target_file),
          f"a clean import by shard name answered {status} {answer}")
    tokens = {authorization for path, authorization in fake.seen if path.startswith("/shard")}
    check(tokens == {"Bearer " + open(os.path.join(work, "token")).read()}, "the imports sent the admin token to the map's shard only")
    print("imports: only from the map's owner, capped, only daogate's objects", flush=True)


def move_bucket(shards, admin, fake, work, config, sock, move, current_map, haproxy_entry, frozen):
    """Each step of move-bucket failing: before the commit nothing changed or it is rolled back; after it, the same command completes it."""
    def unchanged(moved, what, epoch, owner, bucket_number):
        m = current_map()
        check(moved.returncode == 1 and "nothing was changed" in moved.stderr, f"{what}: {moved.returncode} {moved.stderr}")
        check(m["epoch"] == epoch and owner_of(m, bucket_number) == owner, f"{what}: the map changed")
        check(haproxy_entry(bucket_number) == owner, f"{what}: HAProxy's map changed")
        check(frozen("a") == [] and frozen("b") == [], f"{what}: a bucket was frozen: {frozen('a')} {frozen('b')}")

    dan = user_in([b for b in range(BUCKETS) if owner_of(current_map(), b) == "a"], "d")
    b0 = bucket(dan)
    status, _, _ = request("127.0.0.1", BASE, "PUT", "/kv/user/m/k", {"value": 1}, {"X-User-Id": dan})
    check(status == 200, "dan's first write")
    epoch = current_map()["epoch"]
    with open(os.path.join(work, "wrong-token"), "w") as f:
        f.write("not-the-shards-admin-token")
    unchanged(move(b0, "b", token_file="wrong-token"), "a wrong admin token", epoch, "a", b0)
    shown = fake.behaviour.pop("/shard")
    fake.behaviour["/shard"] = lambda handler, body: setattr(handler, "close_connection", True)  # no answer at all
    unchanged(move(b0, "evil"), "a target that does not answer", epoch, "a", b0)
    fake.behaviour["/shard"] = lambda handler, body: handler.reply(200, {"shard": "b", "frozen": []})
    unchanged(move(b0, "evil"), "a target that is another shard", epoch, "a", b0)
    fake.behaviour["/shard"] = shown
    unchanged(move(b0, "b", socket_path=os.path.join(work, "nowhere.sock")), "no HAProxy socket", epoch, "a", b0)
    other = os.path.join(work, "other.map")
    shutil.copy(os.path.join(config, "buckets.map"), other)
    unchanged(move(b0, "b", haproxy_map=other), "a map HAProxy does not know", epoch, "a", b0)

    # The import fails (a trigger planted in dan's file on a): rolled back, a takes his writes again.
    connection = sqlite3.connect(os.path.join(shards["a"].data, "users", f"p-{dan}.db"))
    connection.execute("create trigger planted after insert on daogate_kv begin select 1; end")
    connection.commit()
    connection.close()
    moved = move(b0, "b")
    check(moved.returncode == 1 and "rolled back" in moved.stderr and "import_refused" in moved.stderr,
          f"a refused import: {moved.returncode} {moved.stderr}")
    check(current_map()["epoch"] == epoch and frozen("a") == [], f"a refused import left the map at {current_map()['epoch']}, a frozen {frozen('a')}")
    status, _, _ = request("127.0.0.1", BASE, "PUT", "/kv/user/m/k2", {"value": 2}, {"X-User-Id": dan})
    check(status == 200, f"after the rollback dan's write answered {status}")
    connection = sqlite3.connect(os.path.join(shards["a"].data, "users", f"p-{dan}.db"))
    connection.execute("drop trigger if exists planted")
    connection.commit()
    connection.close()

    # A relative --haproxy-map, with '..', through a symlink: HAProxy's own spelling is found.
    os.symlink(config, os.path.join(work, "link"))
    moved = move(b0, "b", haproxy_map="link/../haproxy/buckets.map", cwd=work)
    check(moved.returncode == 0 and owner_of(current_map(), b0) == "b" and haproxy_entry(b0) == "b",
          f"a relative map path: {moved.returncode} {moved.stderr}, HAProxy says {haproxy_entry(b0)}")
    moved = move(b0, "a", haproxy_map="link/buckets.map", cwd=work)
    check(moved.returncode == 0 and haproxy_entry(b0) == "a", f"a symlinked map path: {moved.returncode} {moved.stderr}")
    status, answer, _ = request("127.0.0.1", BASE, "GET", "/kv/user/m/k2", None, {"X-User-Id": dan})
    check(status == 200 and answer.get("value") == 2, f"dan's data after two moves: {status} {answer}")

    # The fake shard as a target failing at each step after the preconditions (bucket 13, b's, no users).
    b1 = 13
    epoch = current_map()["epoch"]
    def import_changing_map(handler, body):
        m = current_map()
        m["epoch"] += 100
        with open(os.path.join(work, "shards.json"), "w") as f:
            json.dump(m, f)
        handler.reply(200, {"bucket": b1, "files": [], "bytes": 0})
    fake.behaviour["/shard/import"] = import_changing_map
    moved = move(b1, "evil")
    check(moved.returncode == 1 and "rolled back" in moved.stderr and owner_of(current_map(), b1) == "b",
          f"a map changed during the move: {moved.returncode} {moved.stderr}")
    epoch = current_map()["epoch"]

    fake.behaviour["/shard/import"] = lambda handler, body: handler.reply(200, {"bucket": b1, "files": [], "bytes": 0})
    fake.behaviour["/shard/reload"] = lambda handler, body: handler.reply(500, {"code": "storage_failed"})
    moved = move(b1, "evil")
    check(moved.returncode == 1 and "committed" in moved.stderr and "run the same command again" in moved.stderr
          and owner_of(current_map(), b1) == "evil" and current_map()["epoch"] == epoch + 1,
          f"a target that does not reload: {moved.returncode} {moved.stderr}")

    hidden = sock + ".away"

    def reload_losing_haproxy(handler, body):
        os.rename(sock, hidden)  # HAProxy's socket gone between the precondition and set map
        handler.reply(200, {"shard": "evil", "epoch": epoch + 1, "frozen": []})
    fake.behaviour["/shard/reload"] = reload_losing_haproxy
    moved = move(b1, "evil")
    os.rename(hidden, sock)
    check(moved.returncode == 1 and "committed" in moved.stderr and "HAProxy" in moved.stderr and haproxy_entry(b1) == "b",
          f"HAProxy lost after the commit: {moved.returncode} {moved.stderr}")

    fake.behaviour["/shard/reload"] = lambda handler, body: handler.reply(200, {"shard": "evil", "epoch": epoch + 1, "frozen": []})
    moved = move(b1, "evil")
    check(moved.returncode == 0 and haproxy_entry(b1) == "evil" and current_map()["epoch"] == epoch + 1,
          f"the same command run again completes the move: {moved.returncode} {moved.stderr}, HAProxy says {haproxy_entry(b1)}")
    with open(os.path.join(config, "buckets.map")) as f:
        check(f"\n{b1} evil\n" in f.read(), "HAProxy's map file was not rewritten")
    # Another shard does not reload after the commit: named, exit status 2, `pending`; the same command completes it.
    fake.behaviour["/shard/reload"] = lambda handler, body: handler.reply(503, {"code": "busy"})
    moved = move(b0, "b")
    check(moved.returncode == 2 and "shard evil" in moved.stderr and "run the same command again" in moved.stderr
          and json.loads(moved.stdout or "{}").get("pending") == ["evil"] and owner_of(current_map(), b0) == "b",
          f"a shard that does not reload after the commit: {moved.returncode} {moved.stdout} {moved.stderr}")
    fake.behaviour["/shard/reload"] = lambda handler, body: handler.reply(200, {"shard": "evil", "frozen": []})
    moved = move(b0, "b")
    check(moved.returncode == 0 and json.loads(moved.stdout or "{}").get("pending") == [] and haproxy_entry(b0) == "b"
          and frozen("a") == [], f"the same command run again: {moved.returncode} {moved.stdout} {moved.stderr}")
    status, answer, _ = request("127.0.0.1", BASE, "GET", "/kv/user/m/k2", None, {"X-User-Id": dan})
    check(status == 200 and answer.get("value") == 2, f"dan's data after the completed move: {status} {answer}")
    print("move-bucket: every step's failure changes nothing, is rolled back, or is completed by the same command", flush=True)


def owner_of(m, bucket_number):
    return next(name for first, last, name in m["ranges"] if first <= bucket_number <= last)


if __name__ == "__main__":
    main()
