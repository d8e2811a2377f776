"""Shares of a daogate server's perf samples (`perf script -F ip,sym,dso` on standard input, call graphs
recorded with -g): by object, by daogate's libmicrohttpd callbacks and the steps under them (inclusive), and
Swift's reference counting wherever it is called. With the sampling frequency and the requests answered
while sampling as arguments, each share also in µs per request. System libraries keep no frame pointers: a
sample inside one may lose its caller's frame, so the inclusive shares are lower bounds. Used by bench/perf."""
import collections
import re
import sys

STEPS = [
    ("libmicrohttpd's access handler (handleAccess): the whole request", r"HTTPTransport12handleAccess"),
    ("  the headers into the request (DaemonContext.begin)", r"DaemonContextC5begin"),
    ("  the gateway's answer (Gateway.respond)", r"GatewayAAV7respond2to"),
    ("    the engine's call (Engine.call)", r"DAOEngine6EngineC4call_7context"),
    ("      the file's lease from the registry and its release", r"DatabaseRegistryC(5lease|7acquire|7release)"),
    ("      the read on the pool (DatabasePool.read), SQLite's work included", r"DatabasePoolC8readBody|0B4PoolC8readBody"),
    ("the completion callback (handleCompletion): the access-log line, the request's state freed", r"HTTPTransport16handleCompletion"),
    ("libmicrohttpd's zeroing of the connection's pool (memset)", r"^__memset"),
]
COUNTING = re.compile(r"^(swift_retain|swift_release|swift_bridgeObjectRetain|swift_bridgeObjectRelease|swift_retain_n|"
                      r"swift_release_n|swift::RefCounts.*(increment|decrement)|_swift_release_dealloc)")

samples = 0
objects = collections.Counter()
steps = collections.Counter()
counting = 0
stack = []


def flush():
    global samples, counting
    if not stack:
        return
    samples += 1
    leaf_symbol, leaf_object = stack[0]
    objects[leaf_object] += 1
    if COUNTING.search(leaf_symbol):
        counting += 1
    symbols = [symbol for symbol, _ in stack]
    for label, pattern in STEPS:
        matcher = re.compile(pattern)
        if any(matcher.search(symbol) for symbol in symbols):
            steps[label] += 1


for line in sys.stdin:
    line = line.strip()
    if not line:
        flush()
        stack = []
        continue
    match = re.match(r"\S+\s+(.*?)\s+\((.*)\)$", line)
    if match:
        stack.append((match.group(1), match.group(2).rsplit("/", 1)[-1]))
flush()

if samples == 0:
    sys.exit("no samples")
per_request = None
if len(sys.argv) == 3:
    frequency, requests = float(sys.argv[1]), float(sys.argv[2])
    per_request = samples / frequency / requests * 1e6  # µs of server CPU per request


def share(count):
    text = f"{100 * count / samples:5.1f} %"
    return text + (f" {per_request * count / samples:5.2f} µs" if per_request else "")


print(f"{samples} samples of the server" + (f", {per_request:.2f} µs of CPU per request" if per_request else ""))
print("by object (self time):")
for name, count in objects.most_common(8):
    print(f"  {share(count)}  {name}")
print("by step (inclusive: what each calls counts to it):")
for label, _ in STEPS:
    print(f"  {share(steps[label])}  {label}")
print(f"Swift's reference counting (retain, release and the deinitializers' start), wherever called: {share(counting)}")
