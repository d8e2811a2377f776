#!/usr/bin/env python3
"""What one open per-user SQLite file costs in each journal mode, measured on
the system's libsqlite3 (the one daogate links) through ctypes, configured as
daogate configures it (no memory statistics, no bulk page-cache allocation).

Prints, per mode: descriptors and RSS per open connection (N files held open
after a select and an insert each), and the cold costs in microseconds of
open + PK select + close and of open + select + insert + close.

    python3 bench/journal-modes.py [N]
"""
import ctypes, ctypes.util, os, sys, tempfile, time, shutil

lib = ctypes.CDLL(ctypes.util.find_library("sqlite3"))
SQLITE_CONFIG_PAGECACHE, SQLITE_CONFIG_MEMSTATUS = 7, 9
lib.sqlite3_config(SQLITE_CONFIG_MEMSTATUS, ctypes.c_int(0))
lib.sqlite3_config(SQLITE_CONFIG_PAGECACHE, ctypes.c_void_p(None), ctypes.c_int(0), ctypes.c_int(0))
lib.sqlite3_initialize()
lib.sqlite3_open_v2.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_char_p]
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
    if lib.sqlite3_open_v2(path.encode(), ctypes.byref(db), OPEN, None) != 0:
        raise RuntimeError(path)
    exec_(db, "PRAGMA synchronous=NORMAL; PRAGMA cache_size=-64; " + pragmas)
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
    print(f"| {name} | {(fd1 - fd0) / count:.2f} | {(rss1 - rss0) / count:.1f} | {read_us:.0f} | {write_us:.0f} |")

count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
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
print("| journal mode | fds per open file | RSS KB per open file | open+select+close µs | open+select+insert+close µs |")
print("| --- | --- | --- | --- | --- |")
sys.stdout.flush()
import subprocess
for name in MODES:
    subprocess.run([sys.executable, __file__, str(count), name], check=True)
