#!/usr/bin/env python3
"""What Litestream costs beside one daogate: N users (one WAL file each) written once, then writes spread
over them for SECONDS, with and without `litestream replicate -exec` (file replica, the configuration of
`daogate litestream-config`); then, idle, the RSS and open descriptors of daogate and of Litestream.

    .venv/bin/python Tests/Replication/cost.py [USERS ...]     (default 1000; not part of `make test`)

Port 31050. Prints one line per run."""
import http.client, json, os, shutil, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.abspath(os.environ.get("DAOGATE_BINARY", os.path.join(ROOT, ".build/debug/daogate")))
LITESTREAM = os.path.join(ROOT, ".venv/bin/litestream")
PORT = 31050
SECONDS = float(os.environ.get("COST_SECONDS", "10"))
THREADS = 4


def process_figures(pid):
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
    return rss // 1024, len(os.listdir(f"/proc/{pid}/fd"))


def children(pid):
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            found += [int(p) for p in f.read().split()]
    return found


def run(users, replicated):
    work = tempfile.mkdtemp(prefix="daogate-cost-")
    try:
        with open(os.path.join(work, "key"), "wb") as f:
            f.write(os.urandom(32))
        data = os.path.join(work, "data")
        serve = [BINARY, "serve", "--modules", os.path.join(ROOT, "modules"), "--data", data, "--port", str(PORT),
                 "--key-file", os.path.join(work, "key"), "--user-journal", "wal", "--threads", "4",
                 "--max-connections-per-address", "0", "--log-level", "warning"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("DAOGATE_")}
        if replicated:
            config = os.path.join(work, "litestream.yml")
            subprocess.run([BINARY, "litestream-config", "--data", data, "--replica", "file://" + os.path.join(work, "replica"),
                            "--out", config], check=True)
            command = [LITESTREAM, "replicate", "-config", config, "-exec", " ".join(serve)]
        else:
            command = serve
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        for _ in range(300):
            try:
                c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=5)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        names = [f"c-{n:05d}" for n in range(users)]
        counts = [0] * THREADS

        def writer(index, deadline, subset):
            c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
            n = 0
            while True:
                user = subset[n % len(subset)]
                c.request("PUT", f"/kv/user/cost/k{n % 7}", body=json.dumps({"value": n}),
                          headers={"X-User-Id": user, "Content-Type": "application/json"})
                c.getresponse().read()
                n += 1
                counts[index] = n
                if (deadline and time.time() > deadline) or (not deadline and n >= len(subset)):
                    return

        # Every user's file made once.
        threads = [threading.Thread(target=writer, args=(i, None, names[i::THREADS])) for i in range(THREADS)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        time.sleep(3)
        counts = [0] * THREADS
        started = time.time()
        threads = [threading.Thread(target=writer, args=(i, started + SECONDS, names[i::THREADS])) for i in range(THREADS)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        rate = sum(counts) / (time.time() - started)
        time.sleep(5)  # idle
        daogate_pid = children(process.pid)[0] if replicated else process.pid
        d_rss, d_fds = process_figures(daogate_pid)
        line = f"users={users} litestream={'yes' if replicated else 'no'} writes/s={rate:.0f} daogate: {d_rss} MiB RSS, {d_fds} fds"
        if replicated:
            l_rss, l_fds = process_figures(process.pid)
            t0 = sum(int(x) for x in open(f"/proc/{process.pid}/stat").read().split()[13:15])
            time.sleep(5)
            t1 = sum(int(x) for x in open(f"/proc/{process.pid}/stat").read().split()[13:15])
            line += f"; litestream: {l_rss} MiB RSS, {l_fds} fds, {(t1 - t0) / os.sysconf('SC_CLK_TCK') / 5 * 100:.0f} % of a core idle"
        print(line, flush=True)
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            # Litestream's shutdown syncs every database; at 10,000 it takes longer than a measurement should.
            for pid in (children(process.pid) if replicated else []) + [process.pid]:
                os.kill(pid, 9)
            process.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    for users in [int(a) for a in sys.argv[1:]] or [1000]:
        run(users, False)
        run(users, True)
