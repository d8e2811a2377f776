"""The calls of calls.json, made raw and compared with what a generated client got.

  transcript.py expand DOCUMENT CALLS OUT   each call with its route and its
                                            parameters' places, from the served document
  transcript.py raw URL EXPANDED OUT        the calls by raw HTTP; the statuses must be
                                            the expected ones
  transcript.py compare RAW CLIENT NAME     a client's transcript against the raw one

A transcript is one JSON line a call: {"op", "status", "body"}, where a client's
"body" is the typed result (or the typed Problem of an error) written back as
JSON by the generated models. Members that are null and members that are absent
count as equal (the generated models write back a null member as an absent one),
and a call's "volatile" members (a time) are left out.
"""
import json
import sys
import urllib.error
import urllib.parse
import urllib.request


def expand(document_path, calls_path, out_path):
    document = json.load(open(document_path))
    operations = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and "operationId" in operation:
                operations[operation["operationId"]] = (method.upper(), path, operation, item.get("parameters", []))

    def resolve(node):
        while "$ref" in node:
            kind, name = node["$ref"].split("/")[-2:]
            node = document["components"][kind][name]
        return node

    expanded = []
    for call in json.load(open(calls_path)):
        method, path, operation, shared = operations[call["op"]]
        declared = [resolve(parameter) for parameter in shared + operation.get("parameters", [])]
        places = {parameter["name"]: parameter["in"] for parameter in declared}
        given = call.get("params", {})
        unknown = set(given) - set(places)
        if unknown:
            raise SystemExit(f"{call['op']}: no parameter {sorted(unknown)} in the document")
        entry = {
            "op": call["op"],
            "method": method,
            "path": path,
            "params": [{"name": name, "in": places[name], "value": value} for name, value in given.items()],
            "expect": call.get("expect", 200),
            "volatile": call.get("volatile", []),
        }
        if "body" in call:
            entry["body"] = call["body"]
        expanded.append(entry)
    json.dump(expanded, open(out_path, "w"), indent=1)


def raw(base_url, expanded_path, out_path):
    with open(out_path, "w") as out:
        for call in json.load(open(expanded_path)):
            path, query, headers = call["path"], {}, {}
            for parameter in call["params"]:
                value = str(parameter["value"])
                if parameter["in"] == "path":
                    path = path.replace("{" + parameter["name"] + "}", urllib.parse.quote(value, safe=""))
                elif parameter["in"] == "query":
                    query[parameter["name"]] = value
                else:
                    headers[parameter["name"]] = value
            data = None
            if "body" in call:
                data = json.dumps(call["body"]).encode()
                headers["Content-Type"] = "application/json"
            url = base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
            request = urllib.request.Request(url, data=data, headers=headers, method=call["method"])
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    status, text = response.status, response.read()
            except urllib.error.HTTPError as error:
                status, text = error.code, error.read()
            if status != call["expect"]:
                raise SystemExit(f"{call['op']}: raw status {status}, expected {call['expect']}: {text[:300]!r}")
            line = {"op": call["op"], "status": status, "body": json.loads(text), "volatile": call["volatile"]}
            out.write(json.dumps(line) + "\n")


def comparable(value, volatile):
    """Without null members, nor the members that differ from server to server (a time)."""
    if isinstance(value, dict):
        return {key: comparable(item, volatile) for key, item in value.items() if item is not None and key not in volatile}
    if isinstance(value, list):
        return [comparable(item, volatile) for item in value]
    return value


def compare(raw_path, client_path, name):
    expected = [json.loads(line) for line in open(raw_path)]
    got = [json.loads(line) for line in open(client_path)]
    failures = []
    if len(got) != len(expected):
        failures.append(f"{len(got)} calls made, {len(expected)} expected")
    for index, (want, have) in enumerate(zip(expected, got)):
        label = f"#{index} {want['op']}"
        if have["op"] != want["op"]:
            failures.append(f"{label}: the client made {have['op']}")
        elif have["status"] != want["status"]:
            failures.append(f"{label}: status {have['status']} (client) vs {want['status']} (raw): {have['body']}")
        elif want["status"] >= 400:
            # The typed Problem: its code and status must be the server's.
            if (have["body"] or {}).get("code") != want["body"].get("code") or (have["body"] or {}).get("status") != want["status"]:
                failures.append(f"{label}: the client read the problem as {have['body']}, raw {want['body']}")
        elif comparable(have["body"], want["volatile"]) != comparable(want["body"], want["volatile"]):
            failures.append(f"{label}: the client got {json.dumps(have['body'])}, raw {json.dumps(want['body'])}")
    print(f"{name}: {len(got)} calls through the generated client, compared with raw HTTP")
    if failures:
        print("\n".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    {"expand": expand, "raw": raw, "compare": compare}[command](*arguments)
