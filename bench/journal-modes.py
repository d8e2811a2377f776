#!/usr/bin/env python3
"""What one open per-user SQLite file costs in each journal mode, measured on
the system's libsqlite3 (the one daogate links) through ctypes, configured as
daogate configures it (no memory statistics, no bulk page-cache allocation).

Prints, per mode: the files on disk per database written, descriptors and RSS
per open connection (N files held open after a select and an insert each), and
the cold costs in microseconds of open + PK select + close and of open + select
+ insert + close; then the cost of open + select + close of a rollback file
while 0, 2,000 and 9,000 others are held open, through SQLite's default `unix`
VFS (which finds each file it opens in a list of every file open) and through
`unix-none` (no file locks, no such list), which daogate uses for users'
rollback files; then a commit on a file held open in `TRUNCATE` and `DELETE`
(`unix-none`; 3 interleaved rounds, medians).

    python3 bench/journal-modes.py [N]
"""
import ctypes, ctypes.util, os, sys, tempfile, time, shutil

lib = ctypes.CDLL(ctypes.util.find_library("sqlite3"))
SQLITE_CONFIG_PAGECACHE, SQLITE_CONFIG_MEMSTATUS = 7, 9
lib.sqlite3_config(SQLITE_CONFIG_MEMSTATUS, ctypes.c_int(0))
lib.sqlite3_config(SQLITE_CONFIG_PAGECACHE, ctypes.c_void_p(None), ctypes.c_int(0), ctypes.c_int(0))
lib.sqlite3_initialize()
lib.sqlite3_open_v2.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_char_p]
VFS = None  # the default, unix
lib.sqlite3_exec.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
lib.sqlite3_close_v2.argtypes = [ctypes.c_void_p]
OPEN = 0x2 | 0x4 | 0x8000  # READWRITE | CREATE | NOMUTEX

MODES = {
    "wal": "PRAGMA journal_mode=WAL",
    "wal, locking_mode=exclusive": "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL",
    "truncate": "PRAGMA journal_mode=TRUNCATE",
    "delete": "PRAGMA journal_mode=DELETE",
    "truncate, locking_mode=exclusive": "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=TRUNCATE",
}

def rss_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

def fds():
    return len(os.listdir("/proc/self/fd"))

def exec_(db, sql):
    code = lib.sqlite3_exec(db, sql.encode(), None, None, None)
    if code != 0:
        raise RuntimeError(f"{sql}: {code}")

def open_(path, pragmas):
    db = ctypes.c_void_p()
    if lib.sqlite3_open_v2(path.encode(), ctypes.byref(db), OPEN, VFS) != 0:
        raise RuntimeError(path)
    # The mode first: cache_size reads the schema, which would open the file in its old mode.
    exec_(db, pragmas + "; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-64")
    return db

def measure(name, pragmas, count, folder):
    paths = [f"{folder}/u{i}.db" for i in range(count)]
    for path in paths:  # make the files, in their mode
        db = open_(path, pragmas)
        exec_(db, "create table if not exists t (id integer primary key, v text); insert or replace into t values (1, 'x')")
        lib.sqlite3_close_v2(db)
    fd0, rss0 = fds(), rss_kb()
    held = []
    for path in paths:
        db = open_(path, pragmas)
        exec_(db, "select v from t where id = 1")
        exec_(db, "insert or replace into t values (2, 'y')")
        held.append(db)
    fd1, rss1 = fds(), rss_kb()
    on_disk = len(os.listdir(folder)) / count
    for db in held:
        lib.sqlite3_close_v2(db)
    def cold(sql):  # microseconds per open + sql + close
        start = time.perf_counter()
        for path in paths:
            db = open_(path, pragmas)
            exec_(db, sql)
            lib.sqlite3_close_v2(db)
        return (time.perf_counter() - start) / count * 1e6
    read_us = cold("select v from t where id = 1")
    write_us = cold("select v from t where id = 1; insert or replace into t values (3, 'z')")
    print(f"| {name} | {on_disk:.2f} | {(fd1 - fd0) / count:.2f} | {(rss1 - rss0) / count:.1f} | {read_us:.0f} | {write_us:.0f} |")

def open_cost(vfs, held_count, folder):
    """µs per open + PK select + close of a rollback file while held_count others are open."""
    global VFS
    VFS = vfs
    pragmas = "PRAGMA journal_mode=DELETE"
    held = []
    for i in range(held_count):
        db = open_(f"{folder}/held-{i}.db", pragmas)
        exec_(db, "create table if not exists t (id integer primary key, v text); select v from t where id = 1")
        held.append(db)
    paths = [f"{folder}/probe-{i}.db" for i in range(500)]
    for path in paths:
        db = open_(path, pragmas)
        exec_(db, "create table if not exists t (id integer primary key, v text)")
        lib.sqlite3_close_v2(db)
    start = time.perf_counter()
    for path in paths:
        db = open_(path, pragmas)
        exec_(db, "select v from t where id = 1")
        lib.sqlite3_close_v2(db)
    elapsed = (time.perf_counter() - start) / len(paths) * 1e6
    for db in held:
        lib.sqlite3_close_v2(db)
    return elapsed

def commit_cost(modes, files=20, commits=10, rounds=3):
    """µs per commit (`insert or replace` of one row) on files held open, by mode: medians of interleaved rounds."""
    global VFS
    VFS = b"unix-none"
    folder = tempfile.mkdtemp(prefix="daogate-journal-")
    costs = {mode: [] for mode in modes}
    try:
        for round_ in range(rounds):
            for mode in modes:
                held = []
                for i in range(files):
                    db = open_(f"{folder}/{mode}-{round_}-{i}.db", f"PRAGMA journal_mode={mode}")
                    exec_(db, "create table if not exists t (id integer primary key, v text); insert or replace into t values (1, 'x')")
                    held.append(db)
                start = time.perf_counter()
                for step in range(commits):
                    for db in held:
                        exec_(db, f"insert or replace into t values ({step}, 'value {step}')")
                costs[mode].append((time.perf_counter() - start) / (files * commits) * 1e6)
                for db in held:
                    lib.sqlite3_close_v2(db)
    finally:
        shutil.rmtree(folder)
    return {mode: sorted(values)[len(values) // 2] for mode, values in costs.items()}

count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
if len(sys.argv) > 2 and sys.argv[2] == "open-cost":  # in a process of its own
    folder = tempfile.mkdtemp(prefix="daogate-journal-")
    try:
        vfs = None if sys.argv[3] == "unix" else sys.argv[3].encode()
        print(f"| {sys.argv[3]} | " + " | ".join(f"{open_cost(vfs, n, folder):.0f}" for n in (0, 2000, 9000)) + " |")
    finally:
        shutil.rmtree(folder)
    sys.exit(0)
if len(sys.argv) > 2:  # one mode, in a process of its own (so no mode reuses another's freed memory)
    folder = tempfile.mkdtemp(prefix="daogate-journal-")
    try:
        measure(sys.argv[2], MODES[sys.argv[2]], count, folder)
    finally:
        shutil.rmtree(folder)
    sys.exit(0)
version = ctypes.c_char_p
lib.sqlite3_libversion.restype = ctypes.c_char_p
print(f"SQLite {lib.sqlite3_libversion().decode()}, {count} files each, cache_size=-64, synchronous=NORMAL")
print("| journal mode | files on disk per database | fds per open file | RSS KB per open file | open+select+close µs | open+select+insert+close µs |")
print("| --- | --- | --- | --- | --- | --- |")
sys.stdout.flush()
import subprocess
for name in MODES:
    subprocess.run([sys.executable, __file__, str(count), name], check=True)
print()
print("open + PK select + close of a rollback file (µs) while N other files are held open")
print("| VFS | N = 0 | N = 2,000 | N = 9,000 |")
print("| --- | --- | --- | --- |")
sys.stdout.flush()
for vfs in ("unix", "unix-none"):
    subprocess.run([sys.executable, __file__, str(count), "open-cost", vfs], check=True)
print()
print("a commit on a file held open (µs, median of 3 interleaved rounds of 20 files × 10 commits, unix-none)")
for mode, us in commit_cost(["truncate", "delete"]).items():
    print(f"| {mode} | {us:.0f} |")
