#!/usr/bin/env python3
"""A shard lost with its disk, and its users back on a spare from Litestream's replica.

1. File replica: one daogate under `litestream replicate -exec` and a second Litestream beside it (configurations
   from `daogate litestream-config --groups 2`, replica file://, each process the files of its group); users' writes; `daogate restore` of some users, of a bucket, of everything, each file
   checked; an existing file is not overwritten without --force; `daogate serve` warns when the data folder
   is replicated and users' files are not WAL; `_litestream_` tables are nobody's to name.
2. S3: `rclone serve s3` (real S3 software, with credentials) over a local folder; HAProxy; shards a and b, each
   under Litestream replicating to it; a spare, under Litestream too. 1,000 users with mixed calls through
   HAProxy, and writes to the common space, which shard a holds. Shard a and its Litestream are killed (SIGKILL)
   and a's data folder is deleted; `daogate failover a --to spare` restores a's buckets and the common files from
   the replica; HAProxy's configuration is written again and HAProxy reloaded (the common space is routed by it);
   traffic goes on. Then: no acknowledged write is lost that the replica held at the kill (each database's newest
   LTX file, read from the replica's folder), every write acknowledged more than REPLICATION_WINDOW before the
   kill reads back through HAProxy, and how many were lost of those acknowledged in the last seconds is reported
   (the recovery point); the failover's time, databases and bytes (the
   recovery time); no user's file on two serving shards; no 5xx but HAProxy's documented 503
   `shard_unavailable` for a's users and the common space while a was down; shard a, back with an empty data
   folder, answers 421 for the buckets and the common space it lost; a second failover run completes; a bucket then moves from b to the spare (an
   import of files holding Litestream's tables).

Run by Tests/Replication/run (part of `make test`). Ports: REPLICATION_PORT_BASE (default 31000,
below Linux's ephemeral range 32768-60999, where a client connection of Litestream could hold one for a while) and the
next 3, and +90 (the S3 server). Loopback only."""
import http.client, json, os, random, shutil, signal, sqlite3, subprocess, sys, tempfile, threading, time, zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.abspath(os.environ.get("DAOGATE_BINARY", os.path.join(ROOT, ".build/debug/daogate")))
VENV = os.path.join(ROOT, ".venv/bin")
LITESTREAM = os.path.join(VENV, "litestream")
RCLONE = os.path.join(VENV, "rclone")
BASE = int(os.environ.get("REPLICATION_PORT_BASE", "31000"))
BUCKETS = 64
USERS = [f"r-{n:04d}" for n in range(int(os.environ.get("REPLICATION_USERS", "1000")))]
LOAD_SECONDS = float(os.environ.get("REPLICATION_LOAD_SECONDS", "25"))
# Two checks of what the kill lost. The exact one: no write is lost that the replica held, read from the replica
# itself (each database's newest LTX file is stamped by Litestream just after it read the WAL; STAMP_MARGIN covers
# that gap). The coarse one: writes acknowledged longer ago than WINDOW before the kill must survive it, whatever
# Litestream's lag. Its intervals are 1 s (monitor) + 1 s (sync), the defaults of `daogate litestream-config`: a
# write waits up to one of each, plus the upload, and the upload waits for a CPU. On this shared 2-core machine the
# oldest write lost was 1.1 to 3.4 s old (a CI run: 3.4), and an overloaded run (load 50) lost writes 10 s old:
# the window is a guard against a database Litestream stopped replicating, not the recovery point, which is
# measured and printed (losses in the last 1 s and in the last 3 s, the oldest write lost).
WINDOW = float(os.environ.get("REPLICATION_WINDOW", "10.0"))
RECENT = 3.0  # the recovery point's report: writes lost of those acknowledged in the last RECENT seconds
STAMP_MARGIN = 0.5
NEW_FILE = 3.0  # a file made this little before the kill may be missing from the replica (Litestream's watcher)
STOP_GRACE = 15.0  # docker/compose.yaml's stop_grace_period for a shard
MONITOR_INTERVAL = os.environ.get("REPLICATION_MONITOR_INTERVAL", "1s")
SYNC_INTERVAL = os.environ.get("REPLICATION_SYNC_INTERVAL", "1s")
COMMON = ""  # the user of a call to the common space
KEY, SECRET = "daogate-test-key", "daogate-test-secret-" + os.urandom(6).hex()
failures = []


def fail(message):
    failures.append(message)
    if len(failures) <= 40:
        print("FAIL:", message, flush=True)


def bucket(user):
    return zlib.crc32(user.encode()) % BUCKETS


def environment(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAOGATE_") and k != "AWS_CA_BUNDLE"}
    env.update({"LITESTREAM_ACCESS_KEY_ID": KEY, "LITESTREAM_SECRET_ACCESS_KEY": SECRET, "DAOGATE_LITESTREAM": LITESTREAM})
    env.update(extra)
    return env


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Shards"))
import cluster as shard_cluster  # noqa: E402  (its request)


def request(port, method, path, body=None, headers=None, connection=None):
    """Tests/Shards/cluster.py's request on 127.0.0.1, without its Retry-After: (status, parsed JSON or bytes), status 0 if none came."""
    status, parsed, _ = shard_cluster.request("127.0.0.1", port, method, path, body, headers, connection)
    return status, parsed


def wait_for(condition, what, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.1)
    fail(f"timed out waiting for {what}")
    raise SystemExit(1)


def daogate(*arguments, env=None, check=True):
    done = subprocess.run([BINARY, *arguments], capture_output=True, text=True, cwd=ROOT, env=env or environment(), timeout=240)
    if check and done.returncode != 0:
        fail(f"daogate {' '.join(arguments[:2])} exited {done.returncode}: {done.stderr.strip()[:500]}")
    return done


class Server:
    """daogate serve, under `litestream replicate -exec` when given a configuration."""

    def __init__(self, work, name, port, config=None, shard=True, others=()):
        self.work, self.name, self.port, self.config, self.shard = work, name, port, config, shard
        self.others = list(others)  # the configurations of Litestream's other groups, each its own process beside
        self.data = os.path.join(work, name)
        self.log_path = os.path.join(work, name + ".log")
        self.process = None
        self.beside = []

    def serve_arguments(self, journal="wal"):
        arguments = [BINARY, "serve", "--modules", os.path.join(ROOT, "modules"), "--data", self.data,
                     "--port", str(self.port), "--key-file", os.path.join(self.work, "key"),
                     "--user-journal", journal, "--max-connections-per-address", "0", "--threads", "4"]
        if self.shard:
            arguments += ["--admin-token-file", os.path.join(self.work, "token"), "--shard", self.name,
                          "--shard-map", os.path.join(self.work, "shards.json")]
        return arguments

    def start(self, under_litestream=True):
        log = open(self.log_path, "ab")
        if self.config and under_litestream:
            command = [LITESTREAM, "replicate", "-config", self.config, "-exec", " ".join(self.serve_arguments())]
            self.beside = [subprocess.Popen([LITESTREAM, "replicate", "-config", other], stdout=log, stderr=log, cwd=ROOT,
                                            env=environment()) for other in self.others]
        else:
            command = self.serve_arguments()
        for attempt in range(5):
            # A loopback port of the range may be some client's ephemeral port for a moment: try again.
            self.process = subprocess.Popen(command, stdout=log, stderr=log, cwd=ROOT, env=environment())
            deadline = time.time() + 30
            while self.process.poll() is None and time.time() < deadline:
                if request(self.port, "GET", "/healthz")[0] == 200:
                    return
                time.sleep(0.1)
            self.stop()
            time.sleep(1)
        with open(self.log_path, "rb") as f:
            tail = f.read()[-3000:].decode(errors="replace")
        fail(f"server {self.name} did not start on port {self.port}; the end of {self.log_path}:\n{tail}")
        raise SystemExit(1)

    def pids(self):
        """The process started, and its children (daogate under Litestream)."""
        pids = [self.process.pid]
        tasks = f"/proc/{self.process.pid}/task"
        for task in os.listdir(tasks) if os.path.isdir(tasks) else []:
            try:
                with open(f"{tasks}/{task}/children") as f:
                    pids += [int(p) for p in f.read().split()]
            except OSError:
                pass
        return pids

    def kill(self):
        pids = self.pids()
        if len(pids) < 2 and self.config:
            fail(f"{self.name}: no daogate found under Litestream ({pids})")
        for pid in pids + [p.pid for p in self.beside]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        for process in self.beside:
            process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()  # Litestream passes it to daogate, then syncs and exits
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        for process in self.beside:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def file_replica(work):
    """Restore from a file:// replica: users, a bucket, everything; --force; the serve warning; reserved names."""
    print("== file replica", flush=True)
    replica = "file://" + os.path.join(work, "file-replica")
    # Two Litestream processes (--groups 2), each replicating the files whose name ends with its characters; both
    # write the one replica, which the restores below read back whole.
    server = Server(work, "single", BASE + 1, config=os.path.join(work, "single-1.yml"), shard=False,
                    others=[os.path.join(work, "single-2.yml")])
    daogate("litestream-config", "--data", server.data, "--replica", replica, "--out", os.path.join(work, "single.yml"), "--groups", "2")
    for path, pattern in ((server.config, 'pattern: "*[^'), (server.others[0], 'pattern: "*[1')):
        text = open(path).read()
        for expected in ("watch: true", "sync-interval: 1s", pattern, replica + "/users", replica + "/storages"):
            if expected not in text:
                fail(f"litestream-config --groups 2 wrote no {expected!r} in {path}: {text}")
    server.start()
    users = [f"f-{n}" for n in range(20)]
    for user in users:
        for step in range(3):
            status, answer = request(server.port, "PUT", f"/kv/user/b/k{step}", {"value": step}, {"X-User-Id": user})
            if status != 200:
                fail(f"file replica: write answered {status} {answer}")
    request(server.port, "PUT", "/kv/common/b/shared", {"value": "common"})
    status, answer = request(server.port, "POST", "/dao/ChatMessages/send", {"sender": "a", "body": "b"},
                             {"X-User-Id": users[0], "X-Table-Name": "_litestream_seq"})
    if status != 400:
        fail(f"X-Table-Name _litestream_seq answered {status} {answer}, not 400")
    time.sleep(2.5)
    server.stop()
    if any(p.returncode != 0 for p in server.beside):
        fail(f"Litestream's second group exited {[p.returncode for p in server.beside]}")
    # Each replicated database holds Litestream's tables; the description and the tables lists show none.
    restored = os.path.join(work, "restored-all")
    done = daogate("restore", "--replica", replica, "--data", restored)
    summary = json.loads(done.stdout or "{}")
    if summary.get("databases") != len(users) + 1 or "common.db" not in summary.get("files", []):
        fail(f"restore of everything: {summary}")
    for user in users:
        path = os.path.join(restored, database_of(user))
        with sqlite3.connect(path) as db:
            if db.execute("pragma integrity_check").fetchone()[0] != "ok":
                fail(f"{path} fails integrity_check")
            rows = db.execute("select count(*) from daogate_kv where business = 'b'").fetchone()[0]
            if rows != 3:
                fail(f"{user}: {rows} of 3 rows restored")
            tables = {row[0] for row in db.execute("select name from sqlite_master")}
            if "_litestream_seq" not in tables:
                print("note: no _litestream_seq in a restored file", flush=True)
    again = daogate("restore", "--replica", replica, "--data", restored, check=False)
    if again.returncode == 0 or "--force" not in again.stderr:
        fail(f"restore over existing files: {again.returncode} {again.stderr}")
    forced = daogate("restore", "--replica", replica, "--data", restored, "--user", users[1], "--force")
    if json.loads(forced.stdout or "{}").get("files") != [database_of(users[1])]:
        fail(f"restore --user --force: {forced.stdout}")
    # A bucket: exactly its users (the map gives the number of buckets).
    with open(os.path.join(work, "single-map.json"), "w") as f:
        json.dump({"epoch": 1, "buckets": BUCKETS, "common": "s", "shards": {"s": "127.0.0.1:1"}, "ranges": [[0, BUCKETS - 1, "s"]]}, f)
    chosen = bucket(users[2])
    some = daogate("restore", "--replica", replica, "--data", os.path.join(work, "restored-bucket"), "--bucket", str(chosen),
                   "--shard-map", os.path.join(work, "single-map.json"))
    expected = sorted(database_of(u) for u in users if bucket(u) == chosen)
    if sorted(json.loads(some.stdout or "{}").get("files", [])) != expected:
        fail(f"restore --bucket {chosen}: {some.stdout}, expected {expected}")
    # A data folder replicated by Litestream, served with a rollback journal: a warning.
    warned = subprocess.Popen(server.serve_arguments(journal="rollback"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              cwd=ROOT, env=environment())
    wait_for(lambda: request(server.port, "GET", "/healthz")[0] == 200, "the rollback server")
    warned.terminate()
    output, errors = warned.communicate(timeout=30)
    logged = output + errors  # the log is on standard output
    if b"warning" not in logged or b"Litestream" not in logged or b"--user-journal wal" not in logged:
        fail(f"serve with a rollback journal on a replicated data folder did not warn: {logged[-600:]!r}")


class Load:
    """Worker threads through HAProxy; every acknowledged write with the moment it was acknowledged."""

    def __init__(self, port, owner):
        self.port, self.owner = port, owner
        self.lock = threading.Lock()
        self.acknowledged = {}  # (user, key) -> (value, acknowledged at)
        self.created = {}  # user -> when their first write was acknowledged (their file made)
        self.statuses = {}
        self.stop = threading.Event()
        self.pending = list(USERS)
        random.shuffle(self.pending)
        self.sequence = 0
        self.down = None  # the lost shard's users (as the map had them at the kill) while it is gone
        self.common_down = False  # the common space (the lost shard's) until HAProxy routes it to the spare
        self.unavailable = 0
        self.reloading = False  # HAProxy's reload: the old process closes its idle keep-alive connections
        self.reload_drops = 0

    def record(self, status, body, method, path, user):
        code = body.get("code") if isinstance(body, dict) else None
        with self.lock:
            self.statuses[(status, code)] = self.statuses.get((status, code), 0) + 1
        # Its users as the kill found them: the failover rewrites the map before HAProxy's routes follow it.
        lost_shard = (self.down is not None and user in self.down) or (user == COMMON and self.common_down)
        if lost_shard and (status == 0 or (status == 503 and code == "shard_unavailable") or status == 502):
            # The shard is gone: HAProxy's documented 503, or (for a request in flight at the kill) no answer / 502.
            with self.lock:
                self.unavailable += 1
            return
        if status == 0 and self.reloading:
            # A keep-alive connection the old HAProxy closed as the request went out (RFC 9112 §9.3.1): retried.
            with self.lock:
                self.reload_drops += 1
            return
        if status == 421:
            fail(f"421 through HAProxy: {method} {path}: {body}")
        elif status >= 500 and not (status == 503 and code == "bucket_moving"):
            fail(f"{status} {code}: {method} {path}: {body}")
        elif status == 0:
            fail(f"no answer: {method} {path}: {body}")

    def worker(self, seed):
        rng = random.Random(seed)
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stop.is_set():
            with self.lock:
                first = self.pending.pop() if self.pending else None
                user = first or rng.choice(USERS)
                self.sequence += 1
                sequence = self.sequence
            choice = 0 if first else rng.random()
            if 0.5 <= choice < 0.55:
                user = COMMON  # the common space: the lost shard's too
            headers = {"X-User-Id": user} if user != COMMON else {}
            if user == COMMON:
                method, path, body = "PUT", f"/kv/common/load/k{sequence}", {"value": sequence}
            elif choice < 0.55:
                method, path, body = "PUT", f"/kv/user/load/k{sequence}", {"value": sequence}
            elif choice < 0.7:
                method, path, body = "POST", "/dao/Messages/insertMessage", {
                    "model": {"time": sequence, "content": f"m{sequence}", "uin": sequence, "read": False}}
            elif choice < 0.85:
                method, path, body = "POST", "/dao/Messages/unreadCount", None
            else:
                method, path, body = "GET", "/kv/user/load", None
            status, answer = request(self.port, method, path, body, headers, connection)
            if status == 0 or status >= 500:
                # HAProxy closes a connection after its error page: the next request goes on a new one.
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            self.record(status, answer, method, path, user)
            if status == 503:
                time.sleep(0.2)  # Retry-After, as a client would
            if status != 200:
                if first:
                    with self.lock:
                        self.pending.insert(0, first)
                continue
            if method == "PUT":
                with self.lock:
                    now = time.time()
                    self.acknowledged[(user, f"k{sequence}")] = (sequence, now)
                    self.created.setdefault(user, now)


def replicated_until(root):
    """What a Litestream replica folder holds, database by database: the newest of its level-0 LTX files' header
    timestamps (seconds). Litestream stamps an LTX file right after reading the WAL frames it holds, so a write
    committed before that moment is in the replica; the key is the database's path in the data folder."""
    newest = {}
    for folder, _, files in os.walk(root):
        if os.path.basename(folder) != "0000":  # <database's path>/0000/<min TXID>-<max TXID>.ltx: level 0
            continue
        database = os.path.relpath(os.path.dirname(folder), root)
        for name in files:
            if not name.endswith(".ltx"):
                continue
            with open(os.path.join(folder, name), "rb") as f:
                header = f.read(40)  # magic, flags, page size, commit, min and max TXID, timestamp (ms, big-endian)
            if len(header) == 40 and header[:4] == b"LTX1":
                newest[database] = max(newest.get(database, 0), int.from_bytes(header[32:40], "big") / 1000)
    return newest


def database_of(user):
    """A user's file (the common space's, for COMMON) in a data folder and in a replica: its plain name, as these
    ids take it."""
    return "common.db" if user == COMMON else f"users/p-{user}.db"


def read_path(user, key):
    """Where an acknowledged write reads back, and with which headers."""
    if user == COMMON:
        return f"/kv/common/load/{key}", {}
    return f"/kv/user/load/{key}", {"X-User-Id": user}


def cluster(work):
    print("== S3 replica, HAProxy, two shards, a spare; shard a (with the common space) lost", flush=True)
    s3_root = os.path.join(work, "s3")
    os.makedirs(os.path.join(s3_root, "replicas"))
    s3_port = BASE + 90
    endpoint = f"http://127.0.0.1:{s3_port}"
    rclone = subprocess.Popen([RCLONE, "serve", "s3", "--auth-key", f"{KEY},{SECRET}", "--addr", f"127.0.0.1:{s3_port}",
                               "--config", "/dev/null", s3_root],
                              stdout=open(os.path.join(work, "rclone.log"), "ab"), stderr=subprocess.STDOUT)
    servers, haproxy, load, retired = {}, None, None, []
    try:
        wait_for(lambda: request(s3_port, "GET", "/")[0] != 0, "rclone serve s3")
        token = "replication-admin-token-" + os.urandom(8).hex()
        with open(os.path.join(work, "token"), "w") as f:
            f.write(token)
        names = {"a": BASE + 1, "b": BASE + 2, "spare": BASE + 3}
        map_path = os.path.join(work, "shards.json")
        with open(map_path, "w") as f:
            json.dump({"epoch": 1, "buckets": BUCKETS, "common": "a",
                       "shards": {n: f"127.0.0.1:{p}" for n, p in names.items()},
                       "ranges": [[0, BUCKETS // 2 - 1, "a"], [BUCKETS // 2, BUCKETS - 1, "b"]]}, f)
        replicas = {n: f"s3://replicas/{n}?endpoint={endpoint}&region=us-east-1&force-path-style=true" for n in names}
        config = os.path.join(work, "haproxy")
        daogate("haproxy-config", "--modules", os.path.join(ROOT, "modules"), "--shard-map", map_path, "--out", config,
                "--listen", f"127.0.0.1:{BASE}")
        for name, port in names.items():
            servers[name] = Server(work, name, port, config=os.path.join(work, name + ".yml"))
            # A write reaches the replica within about monitor + sync intervals (plus an upload).
            daogate("litestream-config", "--data", servers[name].data, "--replica", replicas[name], "--out", servers[name].config,
                    "--monitor-interval", MONITOR_INTERVAL, "--sync-interval", SYNC_INTERVAL)
            servers[name].start()
        for attempt in range(5):
            # A loopback port of the range may be some client's ephemeral port for a moment: try again.
            haproxy = subprocess.Popen(["haproxy", "-f", os.path.join(config, "haproxy.cfg")],
                                       stdout=open(os.path.join(work, "haproxy.log"), "ab"), stderr=subprocess.STDOUT)
            time.sleep(0.5)
            if haproxy.poll() is None:
                break
            time.sleep(1)
        wait_for(lambda: request(BASE, "GET", "/healthz")[0] == 200, "haproxy")
        wait_for(lambda: os.path.exists(os.path.join(config, "haproxy.sock")), "haproxy's runtime socket")

        def owner(user):
            current = json.load(open(map_path))
            return next(name for first, last, name in current["ranges"] if first <= bucket(user) <= last)

        load = Load(BASE, owner)
        load.created[COMMON] = time.time() - 60  # the common file exists from the start
        threads = [threading.Thread(target=load.worker, args=(seed,)) for seed in range(6)]
        for thread in threads:
            thread.start()
        started = time.time()
        while load.pending and time.time() - started < 150:
            time.sleep(0.2)
        if load.pending:
            fail(f"{len(load.pending)} users never wrote within 150 s")
        # Every user's file is made; the kill comes after a while of writes to existing files.
        time.sleep(max(LOAD_SECONDS * 0.6 - (time.time() - started), NEW_FILE + 5))
        lost_users = {u for u in USERS if owner(u) == "a"}
        print(f"SIGKILL shard a and its Litestream, delete its data ({len(lost_users)} users)", flush=True)
        load.down = lost_users
        load.common_down = True
        killed_at = time.time()
        servers["a"].kill()
        shutil.rmtree(servers["a"].data)
        # What the replica holds of each of a's databases: nothing reaches it once a's Litestream is killed.
        held = replicated_until(os.path.join(s3_root, "replicas", "a"))
        time.sleep(2)  # HAProxy sees it down (check inter 1s fall 2)
        failover_started = time.time()
        done = daogate("failover", "a", "--to", "spare", "--shard-map", map_path, "--replica", replicas["a"],
                       "--spare-data", servers["spare"].data, "--parallel", "8", "--admin-token-file", os.path.join(work, "token"),
                       "--haproxy-socket", os.path.join(config, "haproxy.sock"), "--haproxy-map", os.path.join(config, "buckets.map"))
        failover_seconds = time.time() - failover_started
        result = json.loads(done.stdout or "{}")
        print("failover:", done.stdout.strip(), flush=True)
        # a's users answer again: the first success of one of them after the kill ends the outage.
        probe = sorted(lost_users)[0]
        wait_for(lambda: request(BASE, "GET", "/kv/user/load", None, {"X-User-Id": probe})[0] == 200, "a's users on the spare", 30)
        outage = time.time() - killed_at
        load.down = None
        # The common space moved with a: HAProxy routes it by its configuration, written again and reloaded
        # (failover says so); until then its calls get the documented 503.
        if "haproxy-config" not in done.stderr:
            fail(f"failover of the common shard did not say to write HAProxy's configuration again: {done.stderr}")
        if json.load(open(map_path))["common"] != "spare" or not os.path.exists(os.path.join(servers["spare"].data, "common.db")):
            fail("failover did not give the common space, and its file, to the spare")
        daogate("haproxy-config", "--modules", os.path.join(ROOT, "modules"), "--shard-map", map_path, "--out", config,
                "--listen", f"127.0.0.1:{BASE}")
        load.reloading = True
        retired.append(haproxy)
        haproxy = subprocess.Popen(["haproxy", "-f", os.path.join(config, "haproxy.cfg"), "-sf", str(haproxy.pid)],
                                   stdout=open(os.path.join(work, "haproxy.log"), "ab"), stderr=subprocess.STDOUT)
        wait_for(lambda: request(BASE, "GET", "/kv/common/load")[0] == 200, "the common space on the spare", 30)
        common_outage = time.time() - killed_at
        load.common_down = False
        try:
            retired[-1].wait(timeout=15)  # the old HAProxy ends once its connections are closed
        except subprocess.TimeoutExpired:
            pass
        load.reloading = False
        time.sleep(LOAD_SECONDS * 0.3)
        # Run again: it completes (nothing left to restore; HAProxy and shards told again).
        again = daogate("failover", "a", "--to", "spare", "--shard-map", map_path, "--replica", replicas["a"],
                        "--spare-data", servers["spare"].data, "--admin-token-file", os.path.join(work, "token"),
                        "--haproxy-socket", os.path.join(config, "haproxy.sock"), "--haproxy-map", os.path.join(config, "buckets.map"))
        if json.loads(again.stdout or "{}").get("epoch") != result.get("epoch"):
            fail(f"a second failover run changed the map: {again.stdout} {again.stderr}")
        # A bucket of b moves to the spare: its files, replicated by Litestream, hold Litestream's tables.
        moved_bucket = next(bucket(u) for u in USERS if owner(u) == "b")
        moved = daogate("move-bucket", str(moved_bucket), "--to", "spare", "--shard-map", map_path,
                        "--admin-token-file", os.path.join(work, "token"),
                        "--haproxy-socket", os.path.join(config, "haproxy.sock"), "--haproxy-map", os.path.join(config, "buckets.map"),
                        check=False)
        # Exit 2: done, but shard a (gone) could not be told to read the map; it reads it when it starts.
        if moved.returncode not in (0, 2) or json.loads(moved.stdout or "{}").get("pending") not in ([], ["a"]):
            fail(f"move-bucket {moved_bucket} to the spare: {moved.returncode} {moved.stdout} {moved.stderr}")
        print("move-bucket:", moved.stdout.strip(), flush=True)
        time.sleep(LOAD_SECONDS * 0.1)
        load.stop.set()
        for thread in threads:
            thread.join()
        print("statuses:", {f"{s} {c}": n for (s, c), n in sorted(load.statuses.items(), key=str)}, flush=True)

        # Shard b, which just gave a bucket away (its files removed under Litestream), stopped as a container
        # runtime stops it: Litestream passes SIGTERM to daogate, ships what is left and exits 0 well within a
        # grace period, not held by the removed files.
        b = servers["b"]
        logged = os.path.getsize(b.log_path)
        stopping = time.time()
        b.process.terminate()
        try:
            code = b.process.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            code = None
            b.kill()
        stop_seconds = time.time() - stopping
        with open(b.log_path, "rb") as f:
            f.seek(logged)
            said = f.read().decode(errors="replace")
        retried = [line for line in said.splitlines() if "shutdown sync failed" in line]
        if code != 0 or stop_seconds >= STOP_GRACE / 2:
            fail(f"shard b (Litestream and daogate) after giving bucket {moved_bucket} away: exit {code} after "
                 f"{stop_seconds:.1f} s; {len(retried)} shutdown sync retries, the first: {retried[:1]}; the end of its log:\n{said[-2000:]}")
        print(f"shard b stopped after the move in {stop_seconds:.2f} s, exit {code} ({len(retried)} shutdown sync retries)", flush=True)
        b.start()
        # HAProxy marked b down while it was stopped: its health check (every second) sends b's users to it again.
        on_b = next(user for user in USERS if owner(user) == "b")
        wait_for(lambda: request(BASE, "GET", "/kv/user/load/none?default=0", None, {"X-User-Id": on_b})[0] == 200,
                 "HAProxy sending shard b's users to b again after its restart")

        # Shard a comes back with an empty disk (under the new map): it answers 421 for its old users.
        servers["a"].config = None
        servers["a"].start()
        status, answer = request(names["a"], "GET", "/kv/user/load", None, {"X-User-Id": probe})
        if status != 421 or (answer or {}).get("epoch") != json.load(open(map_path))["epoch"]:
            fail(f"shard a, back, answered {status} {answer} for a user it lost, not 421 with the map's epoch")
        status, answer = request(names["a"], "GET", "/kv/common/load")
        if status != 421 or (answer or {}).get("shard") != "spare":
            fail(f"shard a, back, answered {status} {answer} for the common space it lost, not 421 naming the spare")
        if os.path.exists(os.path.join(servers["a"].data, "users")) and os.listdir(os.path.join(servers["a"].data, "users")):
            fail("shard a, back, made users' files")

        # Every write acknowledged more than WINDOW before the kill reads back through HAProxy.
        connection = http.client.HTTPConnection("127.0.0.1", BASE, timeout=30)
        missing, recent, lost_recent, lost_though_held = 0, 0, 0, 0
        new_files_writes = [0, 0]  # writes to files made in the last NEW_FILE seconds, and how many were lost
        ages = {}  # lost writes of a's users by tenths of a second before the kill
        for (user, key), (value, at) in sorted(load.acknowledged.items()):
            path, headers = read_path(user, key)
            status, answer = request(BASE, "GET", path, None, headers, connection)
            found = status == 200 and isinstance(answer, dict) and answer.get("value") == value
            on_a = (user in lost_users or user == COMMON) and at < failover_started
            if on_a and load.created[user] > killed_at - NEW_FILE:
                # A file made moments before the kill: Litestream's watcher may not have picked it up yet.
                new_files_writes[0] += 1
                new_files_writes[1] += 0 if found else 1
                continue
            if on_a and not found:
                tenth = max(0, int((killed_at - at) * 10)) / 10
                ages[tenth] = ages.get(tenth, 0) + 1
                replicated = held.get(database_of(user), 0)
                if at < replicated - STAMP_MARGIN:
                    # The replica held the database as it was after this write: the failover lost it.
                    lost_though_held += 1
                    if lost_though_held <= 5:
                        fail(f"acknowledged write {user or 'common'}/{key} ({killed_at - at:.2f} s before the kill) reads "
                             f"{status} {answer}, though the replica held {database_of(user)} as Litestream read it "
                             f"{replicated - at:.2f} s after the write")
            if on_a and at > killed_at - RECENT:
                recent += 1
                lost_recent += 0 if found else 1
            # Acknowledged in the last WINDOW, or answered while the kill happened (at > killed_at): Litestream's lag.
            if not found and not (on_a and at > killed_at - WINDOW):
                missing += 1
                if missing <= 5:
                    fail(f"acknowledged write {user or 'common'}/{key} ({killed_at - at:.2f} s before the kill, "
                         f"{'on' if user in lost_users or user == COMMON else 'not on'} shard a) reads {status} {answer}")
        if missing:
            fail(f"{missing} acknowledged writes older than {WINDOW} s before the kill (or not on shard a) were lost")
        if lost_though_held:
            fail(f"{lost_though_held} acknowledged writes lost that the replica held")
        if not held or database_of(COMMON) not in held:
            fail(f"the replica of shard a holds {len(held)} databases' LTX files, common.db {'among' if database_of(COMMON) in held else 'not among'} them")
        print("lost writes of shard a's users by seconds before the kill:", dict(sorted(ages.items())), flush=True)
        print(f"files made less than {NEW_FILE} s before the kill: {new_files_writes[1]} of their {new_files_writes[0]} writes lost", flush=True)
        # No user's files on two serving shards; each on the one the map names.
        final_map = json.load(open(map_path))
        for name in ("b", "spare"):
            folder = os.path.join(servers[name].data, "users")
            for file in os.listdir(folder) if os.path.isdir(folder) else []:
                if not file.endswith(".db"):
                    continue
                user = file[2:-3]
                if owner(user) != name:
                    fail(f"{name} holds {file}, whose bucket the map gives to {owner(user)}")
        bytes_restored = result.get("bytes", 0)
        last_second = sum(n for age, n in ages.items() if age < 1.0)
        oldest = max(ages) if ages else 0
        print(f"recovery point: {lost_recent} of {recent} writes acknowledged in the last {RECENT} s before the kill "
              f"were lost ({last_second} of them in the last 1 s), the oldest lost {oldest:.1f} s old; {lost_though_held} "
              f"lost that the replica held ({len(held)} of a's databases in it); "
              f"{len(load.acknowledged)} acknowledged writes checked", flush=True)
        print(f"recovery time: failover {failover_seconds:.2f} s ({result.get('restoreSeconds', 0):.2f} s restoring "
              f"{result.get('databases')} databases, {bytes_restored} bytes, {result.get('buckets')} buckets, "
              f"{len(lost_users)} users); a's users unanswered {outage:.2f} s from the kill "
              f"(2 s of it waiting for HAProxy's check), the common space {common_outage:.2f} s (with HAProxy's reload); "
              f"{load.unavailable} requests got 503 shard_unavailable or no answer; {load.reload_drops} connections closed by HAProxy's reload",
              flush=True)
        print("map epoch", final_map["epoch"], flush=True)
    finally:
        if load:
            load.stop.set()
        for process in retired + [haproxy]:
            if process and process.poll() is None:
                process.terminate()
            if process:
                process.wait()
        for server in servers.values():
            server.stop()
        rclone.terminate()
        rclone.wait()


def main():
    began = time.time()
    # Tests/Replication/run's timeout sends SIGTERM: stop the servers, Litestreams, HAProxy and rclone on the way out.
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(f"replication: stopped by signal {number}"))
    for program in (BINARY, LITESTREAM, RCLONE):
        if not os.path.exists(program):
            raise SystemExit(f"no {program}")
    work = tempfile.mkdtemp(prefix="daogate-replication-")
    try:
        with open(os.path.join(work, "key"), "wb") as f:
            f.write(os.urandom(32))
        file_replica(work)
        cluster(work)
    finally:
        if failures:
            print("work folder kept:", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)
    print(f"replication: ok ({time.time() - began:.0f} s)")


if __name__ == "__main__":
    main()
