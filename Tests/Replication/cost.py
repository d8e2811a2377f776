#!/usr/bin/env python3
"""What Litestream costs beside one daogate, and how many users' files it replicates.

N users (one WAL file each) are written once, then writes spread over them for COST_SECONDS (10), through four
client threads; first without Litestream, then under `litestream replicate -exec` (file replica, the
configuration of `daogate litestream-config`), with --groups G processes (group 1 runs daogate, the others
beside it); then, idle, the RSS, descriptors and threads of daogate and of every Litestream together, their
CPU while idle, and how many of the N users' databases reached the replica (waiting for Litestream's first
snapshots until all are there or none arrives for 20 s).

    .venv/bin/python Tests/Replication/cost.py [--groups G ...] [--monitor-interval 1s] [--no-baseline] [USERS ...]

(default: 1000 users, 1 group; not part of `make test`). Port COST_PORT (23050). Prints one line per run."""
import argparse, http.client, json, os, shutil, signal, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.abspath(os.environ.get("DAOGATE_BINARY", os.path.join(ROOT, ".build/debug/daogate")))
LITESTREAM = os.path.join(ROOT, ".venv/bin/litestream")
PORT = int(os.environ.get("COST_PORT", "23050"))
SECONDS = float(os.environ.get("COST_SECONDS", "10"))
THREADS = 4


def process_figures(pid):
    """RSS (KiB), open descriptors and threads of a process; zeros if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = {line.split(":")[0]: line.split()[1] for line in f if ":" in line and len(line.split()) > 1}
        return int(status["VmRSS"]), len(os.listdir(f"/proc/{pid}/fd")), int(status["Threads"])
    except (OSError, KeyError):
        return 0, 0, 0


def cpu_ticks(pid):
    try:
        return sum(int(x) for x in open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[11:13])
    except OSError:
        return 0


def children(pid):
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return found


def replicated_databases(replica):
    """Users' databases that reached the file replica (each a folder users/NAME.db/ holding Litestream's LTX files)."""
    folder = os.path.join(replica, "users")
    if not os.path.isdir(folder):
        return 0
    return sum(1 for name in os.listdir(folder) if name.endswith(".db") and os.listdir(os.path.join(folder, name)))


def run(users, groups, monitor_interval):
    work = tempfile.mkdtemp(prefix="daogate-cost-")
    processes = []
    try:
        with open(os.path.join(work, "key"), "wb") as f:
            f.write(os.urandom(32))
        data = os.path.join(work, "data")
        replica = os.path.join(work, "replica")
        serve = [BINARY, "serve", "--modules", os.path.join(ROOT, "modules"), "--data", data, "--port", str(PORT),
                 "--key-file", os.path.join(work, "key"), "--user-journal", "wal", "--threads", "4",
                 "--max-connections-per-address", "0", "--log-level", "warning"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("DAOGATE_")}
        log = open(os.path.join(work, "litestream.log"), "ab")
        if groups:
            config = os.path.join(work, "litestream.yml")
            subprocess.run([BINARY, "litestream-config", "--data", data, "--replica", "file://" + replica, "--out", config,
                            "--groups", str(groups), "--monitor-interval", monitor_interval], check=True)
            configs = [config] if groups == 1 else [os.path.join(work, f"litestream-{n}.yml") for n in range(1, groups + 1)]
            processes.append(subprocess.Popen([LITESTREAM, "replicate", "-config", configs[0], "-exec", " ".join(serve)],
                                              stdout=log, stderr=log, env=env))
            for other in configs[1:]:
                processes.append(subprocess.Popen([LITESTREAM, "replicate", "-config", other], stdout=log, stderr=log, env=env))
        else:
            processes.append(subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
        for _ in range(600):
            try:
                c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=5)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        names = [f"c-{n:05d}" for n in range(users)]
        counts = [0] * THREADS
        errors = [0] * THREADS

        def writer(index, deadline, subset):
            c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
            n = 0
            while True:
                user = subset[n % len(subset)]
                c.request("PUT", f"/kv/user/cost/k{n % 7}", body=json.dumps({"value": n}),
                          headers={"X-User-Id": user, "Content-Type": "application/json"})
                response = c.getresponse()
                response.read()
                if response.status != 200:
                    errors[index] += 1
                n += 1
                counts[index] = n
                if (deadline and time.time() > deadline) or (not deadline and n >= len(subset)):
                    return

        # Every user's file made once.
        made = time.time()
        threads = [threading.Thread(target=writer, args=(i, None, names[i::THREADS])) for i in range(THREADS)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        made = time.time() - made
        time.sleep(3)
        counts = [0] * THREADS
        started = time.time()
        threads = [threading.Thread(target=writer, args=(i, started + SECONDS, names[i::THREADS])) for i in range(THREADS)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        rate = sum(counts) / (time.time() - started)
        time.sleep(5)  # idle
        daogate_pid = children(processes[0].pid)[0] if groups else processes[0].pid
        d_rss, d_fds, _ = process_figures(daogate_pid)
        line = (f"users={users} litestream={'%d process%s, monitor %s' % (groups, 'es' if groups > 1 else '', monitor_interval) if groups else 'no'}"
                f" files made {users / made:.0f}/s, writes/s={rate:.0f}{f' ({sum(errors)} not 200)' if sum(errors) else ''}"
                f"; daogate: {d_rss // 1024} MiB RSS, {d_fds} fds")
        if groups:
            figures = [process_figures(p.pid) for p in processes]
            alive = sum(1 for p in processes if p.poll() is None)
            t0 = sum(cpu_ticks(p.pid) for p in processes)
            time.sleep(5)
            t1 = sum(cpu_ticks(p.pid) for p in processes)
            l_rss, l_fds, l_threads = (sum(f[i] for f in figures) for i in range(3))
            # Litestream may still be taking its first snapshots: wait until every user is in the replica, or until
            # nothing more arrives for 20 s (a process at its descriptor limit never takes the rest).
            settled, last, count = time.time(), time.time(), replicated_databases(replica)
            while count < users and time.time() - last < 20:
                time.sleep(2)
                now = replicated_databases(replica)
                if now > count:
                    count, last = now, time.time()
            settled = time.time() - settled
            line += (f"; litestream ({alive} of {groups} running): {l_rss // 1024} MiB RSS, {l_fds} fds (at most {max(f[1] for f in figures)}"
                     f" in one), {l_threads} threads, {(t1 - t0) / os.sysconf('SC_CLK_TCK') / 5 * 100:.0f} % of a core idle"
                     f"; together: {(d_rss + l_rss) // 1024} MiB RSS, {d_fds + l_fds} fds"
                     f"; users' databases in the replica: {count} of {users} ({settled:.0f} s after the figures)")
        print(line, flush=True)
    finally:
        # Litestream's shutdown syncs every database (minutes at 10,000): a measurement kills it instead.
        for process in processes:
            for pid in children(process.pid) + [process.pid]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("users", type=int, nargs="*", default=[1000])
    parser.add_argument("--groups", type=int, action="append", help="Litestream processes (repeatable: one run each)")
    parser.add_argument("--monitor-interval", default="1s")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run without Litestream")
    arguments = parser.parse_args()
    for users in arguments.users:
        if not arguments.no_baseline:
            run(users, 0, arguments.monitor_interval)
        for groups in arguments.groups or [1]:
            run(users, groups, arguments.monitor_interval)
