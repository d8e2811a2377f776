#!/usr/bin/env python3
"""The change feed's side of `bench/run changes`.

  changes.py listen URL N SECONDS   N streams of GET /changes held open and read for SECONDS;
                                    prints the events received in all
  changes.py latency URL COUNT      one stream; COUNT writes one after another (POST /dao/Demo/insertItem,
                                    keep-alive); prints p50 and p99 (ms) of the time from sending a
                                    write to its event on the stream (an upper bound of commit to
                                    event), then of the time from sending it to its response
"""
import http.client, json, selectors, socket, sys, threading, time
from urllib.parse import urlparse


def open_stream(host, port):
    sock = socket.create_connection((host, port))
    sock.sendall(b"GET /changes HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n" % host.encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    return sock, head.split(b"\r\n\r\n", 1)[1]


def listen(url, count, seconds):
    u = urlparse(url)
    selector = selectors.DefaultSelector()
    for _ in range(count):
        sock, _ = open_stream(u.hostname, u.port)
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    events = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.2):
            data = key.fileobj.recv(1 << 16)
            events += data.count(b"event: change")
    print(events)


def latency(url, count):
    u = urlparse(url)
    sock, rest = open_stream(u.hostname, u.port)
    arrivals = {}
    lock = threading.Condition()

    def read():
        buffer = rest
        while True:
            data = sock.recv(1 << 16)
            if not data:
                return
            buffer += data
            now = time.perf_counter()
            for line in buffer.split(b"\n")[:-1]:
                if line.startswith(b"data: ") and b'"rowids"' in line:
                    for change in json.loads(line[6:])["changes"]:
                        with lock:
                            for rowid in change["rowids"]:
                                arrivals[rowid] = now
                            lock.notify_all()
            buffer = buffer[buffer.rfind(b"\n") + 1:]

    threading.Thread(target=read, daemon=True).start()
    connection = http.client.HTTPConnection(u.hostname, u.port)
    to_response, to_event = [], []
    for _ in range(count):
        sent = time.perf_counter()
        connection.request("POST", "/dao/Demo/insertItem", body='["latency"]', headers={"Content-Type": "application/json"})
        answer = json.loads(connection.getresponse().read())
        answered = time.perf_counter()
        rowid = answer["lastInsertRowId"]
        with lock:
            lock.wait_for(lambda: rowid in arrivals, timeout=5)
            arrived = arrivals.get(rowid)
        assert arrived is not None, "no event for row %d" % rowid
        to_response.append((answered - sent) * 1000)
        to_event.append((arrived - sent) * 1000)

    def pct(values, p):
        values = sorted(values)
        return values[min(len(values) - 1, int(p * len(values)))]

    print("%.3f %.3f %.3f %.3f" % (pct(to_event, 0.5), pct(to_event, 0.99), pct(to_response, 0.5), pct(to_response, 0.99)))


if __name__ == "__main__":
    if sys.argv[1] == "listen":
        listen(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        latency(sys.argv[2], int(sys.argv[3]))
