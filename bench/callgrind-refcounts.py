"""Calls to Swift's reference counting per request in a callgrind profile: `swift_retain` and `swift_release`
(and their `_n` forms), each an atomic operation on an object's count, however they were reached (the
`bridgeObject` forms and value witnesses end in them); and where the requests' reads ran, on a reader or on the
file's writer. Used by bench/callgrind.

    python3 bench/callgrind-refcounts.py PROFILE REQUESTS
"""
import collections
import re
import sys

path, requests = sys.argv[1], float(sys.argv[2])
names = {}
calls = collections.Counter()
target = None


def name(text):
    # Callgrind compresses names: "(12) name" the first time, "(12)" after.
    match = re.match(r"\((\d+)\)(?: (.*))?", text.strip())
    if not match:
        return text.strip()
    if match.group(2):
        names[match.group(1)] = match.group(2)
    return names.get(match.group(1), match.group(1))


for line in open(path):
    if line.startswith("fn="):
        name(line[3:])
    elif line.startswith("cfn="):
        target = name(line[4:])
    elif line.startswith("calls=") and target:
        calls[target.split()[0]] += int(line[6:].split()[0])

retains = calls["swift_retain"] + calls["swift_retain_n"]
# Where the reads ran: a file's reads go to the writer until two overlap and a reader opens, and a read on the
# writer is a transaction of its own (some 1,500 instructions more a PK select), so two runs of one build can
# differ by where their reads went.
on_writer = sum(count for function, count in calls.items() if re.search(r"PoolC12readOnWriter\w*KF$", function))
on_reader = sum(count for function, count in calls.items() if re.search(r"PoolC7checkIn\w*F$", function))
releases = calls["swift_release"] + calls["swift_release_n"]
print(f"reference counting per request: {retains / requests:.1f} retains, {releases / requests:.1f} releases")
print(f"reads per request: {on_reader / requests:.2f} on a reader, {on_writer / requests:.2f} on the writer")
