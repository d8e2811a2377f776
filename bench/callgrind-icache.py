#!/usr/bin/env python3
"""What a request's code costs the instruction cache, from a profile of `bench/callgrind` run with CACHESIM=1
(valgrind's cache simulation, per instruction: --cache-sim=yes --dump-instr=yes).

  callgrind-icache.py PROFILE REQUESTS [BINARY]

Prints the simulated first-level instruction-cache misses (I1mr) per request, for each object (the server's
binary, libmicrohttpd, SQLite, Swift's runtime, libc); and for the object whose path ends in BINARY (default
"/daogate"): the distinct instructions it ran, and the 64-byte lines of code they lie on, which a request has to
fetch when they no longer fit in the cache.
"""
import collections
import re
import sys

path, requests = sys.argv[1], float(sys.argv[2])
binary = sys.argv[3] if len(sys.argv) > 3 else "/daogate"

names = {"ob": {}, "fn": {}}


def name(kind, text):
    """A compressed name, `(N) text` the first time and `(N)` after."""
    match = re.match(r"\((\d+)\)(?: (.*))?", text.strip())
    if not match:
        return text.strip()
    if match.group(2):
        names[kind][match.group(1)] = match.group(2)
    return names[kind].get(match.group(1), match.group(1))


events, positions, summary = [], 1, {}
ir = collections.Counter()
misses = collections.Counter()
addresses, lines = set(), set()
ob, last, after_call = None, 0, False
for line in open(path):
    if line.startswith("events:"):
        events = line.split()[1:]
        continue
    if line.startswith("summary:"):
        summary = dict(zip(events, (int(v) for v in line.split()[1:])))
        continue
    if line.startswith("positions:"):
        positions = len(line.split()) - 1
        continue
    if line.startswith("ob="):
        ob = name("ob", line[3:])
        continue
    if line.startswith("cob="):
        name("ob", line[4:])
        continue
    if line.startswith(("fn=", "cfn=")):
        name("fn", line.split("=", 1)[1])
        continue
    if line.startswith("calls="):
        after_call = True
        continue
    if not line[:1].isdigit() and line[:1] not in ("+", "-", "*"):
        continue
    fields = line.split()
    first = fields[0]  # the instruction's address: absolute, relative to the last line's, or the same
    if first.startswith("0x"):
        address = int(first, 16)
    elif first[0] in "+-":
        address = last + int(first)
    elif first == "*":
        address = last
    else:
        address = int(first)
    last = address
    if after_call:  # the call's inclusive cost, counted in the callee's own lines
        after_call = False
        continue
    values = [int(v) for v in fields[positions:]]
    values += [0] * (len(events) - len(values))
    cost = dict(zip(events, values))
    object_name = (ob or "?").split("/")[-1]
    ir[object_name] += cost.get("Ir", 0)
    misses[object_name] += cost.get("I1mr", 0)
    if ob and ob.endswith(binary) and cost.get("Ir", 0) > 0:
        addresses.add(address)
        lines.add(address // 64)

if "I1mr" not in events:
    sys.exit("no I1mr in the profile: run bench/callgrind with CACHESIM=1")
# The cost lines add up to the profile's `totals`, some per cent above its `summary` (what callgrind_annotate
# calls PROGRAM TOTALS, and bench/callgrind divides by the requests): both are printed.
print(f"simulated I1 misses per request: {summary.get('I1mr', 0) / requests:.0f} (the profile's summary); "
      f"{sum(misses.values()) / requests:.0f} in its cost lines, by object:")
for object_name, count in misses.most_common():
    if count / requests >= 1:
        print(f"  {count / requests:7.0f} misses  {ir[object_name] / requests:8.0f} instructions  {object_name}")
print(f"{binary.lstrip('/')}'s own code: {len(addresses)} distinct instructions run, on {len(lines)} lines of 64 bytes "
      f"({len(lines) * 64 // 1024} KiB)")
