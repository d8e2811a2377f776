"""Every method of the example modules through a client generated from the
OpenAPI description, and the same calls through curl against a twin server:
the typed results must equal what curl gets.

usage: test_generated_client.py CLIENT_SERVER_URL CURL_SERVER_URL [JWT_SECRET_FILE]
(PYTHONPATH must hold the generated package daogate_client.)

With JWT_SECRET_FILE, both servers run `serve --auth jwt` with that HS256
secret: each call carries a token for its user (minted by scripts/mint-token,
as the README shows), through the generated AuthenticatedClient and curl alike.
"""
import importlib
import json
import re
import subprocess
import sys

from daogate_client import AuthenticatedClient, Client
from daogate_client.models import Problem

client_url, curl_url = sys.argv[1], sys.argv[2]
secret_file = sys.argv[3] if len(sys.argv) > 3 else None
client = Client(base_url=client_url, raise_on_unexpected_status=True)
failures = []
calls = 0
tokens = {}


def token(user):
    """A token for the user (a shared module's call: any user's), minted once."""
    user = user or "anyone"
    if user not in tokens:
        tokens[user] = subprocess.run(["scripts/mint-token", "--secret-file", secret_file, "--sub", user, "--ttl", "600"],
                                      capture_output=True, text=True, check=True).stdout.strip()
    return tokens[user]


def snake(name):
    """The generator's snake_case of an operationId such as Messages_getMessage."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).replace("__", "_").lower()


def pascal(name):
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\s]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)))


def curl(path, body, headers):
    command = ["curl", "-s", "-X", "POST", curl_url + path, "-w", "\n%{http_code}"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    if body is not None:
        command += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    text, status = output.rsplit("\n", 1)
    return int(status), json.loads(text)


def without(value, names):
    """The JSON value with the members of these names left out, at any depth."""
    if isinstance(value, dict):
        return {key: without(member, names) for key, member in value.items() if key not in names}
    if isinstance(value, list):
        return [without(element, names) for element in value]
    return value


def call(module, method, body=None, user=None, table=None, expect=200, ignore=()):
    """One call both ways; records a failure when they differ (but for the members named in ignore)."""
    global calls
    calls += 1
    operation = f"{module}_{method}"
    api = importlib.import_module(f"daogate_client.api.{snake(module)}.{snake(operation)}")
    arguments = {"client": client}
    headers = {}
    if secret_file:
        arguments["client"] = AuthenticatedClient(base_url=client_url, token=token(user), raise_on_unexpected_status=True)
        headers["Authorization"] = f"Bearer {token(user)}"
    if body is not None:
        model = getattr(importlib.import_module("daogate_client.models"), pascal(operation) + "Body")
        arguments["body"] = model.from_dict(body)
    if user is not None:
        arguments["x_user_id"] = user
        headers["X-User-Id"] = user
    if table is not None:
        arguments["x_table_name"] = table
        headers["X-Table-Name"] = table
    response = api.sync_detailed(**arguments)
    typed = response.parsed
    got = typed.to_dict()
    status, expected = curl(f"/dao/{module}/{method}", body, headers)
    if response.status_code != status or status != expect:
        failures.append(f"{operation}: status {response.status_code} (client) vs {status} (curl), expected {expect}")
    elif expect == 200 and isinstance(typed, Problem):
        failures.append(f"{operation}: the client parsed a problem: {got}")
    elif without(got, ignore) != without(expected, ignore):
        failures.append(f"{operation}: the client got {got}, curl got {expected}")
    return typed


# Demo: insert, read back by lastInsertRowId.
inserted = call("Demo", "insertItem", {"content": "something"})
assert inserted.last_insert_row_id == 1 and inserted.changes == 1 and inserted.ok is True
item = call("Demo", "getItem", {"index": inserted.last_insert_row_id})
assert item.result == "something", item.result
call("Demo", "getItem", {"index": 99})

# Messages: a per-user module with a map, crypt and a foreach insert.
ann = "ann"
call("Messages", "addMessages", {"messages": [
    {"msgId": 10, "time": 1700000000, "content": "hello", "uin": 7, "read": True},
    {"msgId": 11, "time": 1700000100, "content": "again", "uin": 7, "read": False},
], "onlyRead": False}, user=ann)
call("Messages", "insertMessage", {"model": {"time": 1700000200, "content": "third", "uin": 8, "read": False}}, user=ann)
found = call("Messages", "find", {"id": 10, "time": 1}, user=ann)
assert found.result.msg_id == 10 and found.result.content == "hello", found.result
call("Messages", "getMessage", {"msgId": 11}, user=ann)
messages = call("Messages", "messagesOf", {"uin": 7}, user=ann)
assert [message.msg_id for message in messages.result] == [11, 10]
assert call("Messages", "unreadCount", user=ann).result == 2
call("Messages", "remove", {"msgId": 11}, user=ann)
call("Messages", "unreadCount", user="bob")
call("Messages", "getMessage", {"msgId": 1}, user="bob")

# Books: dynamic SQL of every kind.
for book in [{"title": "SQLite", "year": 2000, "authorName": "Hipp", "isbn": "1"},
             {"title": "Swift", "year": 2014, "authorName": "Lattner", "isbn": "2", "featured": True},
             {"title": "abc1", "year": 2020, "isbn": "3"}]:
    call("Books", "addBook", book)
call("Books", "addBook", {"title": "dup", "isbn": "1"}, expect=409)
call("Books", "findBooks", {"title": "S%"})
call("Books", "findBooks", {"author": {"name": "Lattner"}, "state": "ACTIVE"})
call("Books", "findBooks", {})
call("Books", "searchActive", {})
call("Books", "searchActive", {"author": {"name": "Hipp"}})
call("Books", "byIds", {"idList": [1, 3]})
assert call("Books", "byCodes", {"list": ["1", "2"], "prefix": "abc"}).result == ["abc1"]
call("Books", "recentTitles", {"title": "x", "year": 2010, "authors": ["a", "b"]})
call("Books", "updateAuthor", {"id": 1, "email": "h@sqlite.org"})
# Nothing to set: onVoid="quit" skips the statement.
assert call("Books", "updateAuthor", {"id": 1, "username": "u", "password": "p"}).changes == 0
call("Books", "byIds", {"idList": []}, expect=400)
book = call("Books", "selectBook", {"id": 1})
assert book.result.email == "h@sqlite.org" and book.result.year == 2000
call("Books", "sorted", {"orderBy": "year", "direction": "DESC"})
call("Books", "sorted", {"orderBy": "year; drop table books"}, expect=400)
assert call("Books", "titlesFrom", {"year": 2010}).result == ["Swift", "abc1"]
call("Books", "removeBook", {"id": 3})
call("Books", "addBook", {"title": 5}, expect=400)

# Templates: try/except keeps the rowid.
call("Templates", "insertTemplates", {"templates": [{"tplId": "a", "tplVersion": 1, "time": 5, "data": "first", "tag": "x"}]})
call("Templates", "insertTemplates", {"templates": [{"tplId": "a", "tplVersion": 1, "time": 6, "data": "second", "tag": "y"}]})
template = call("Templates", "getTemplate", {"tplId": "a", "tplVersion": 1})
assert template.result.data == "second" and template.result.rowid == 1

# ChatMessages: a template module, its table per call.
call("ChatMessages", "send", {"sender": "ann", "body": "hi"}, user="u", table="chat_1")
call("ChatMessages", "send", {"sender": "bob", "body": "yo"}, user="u", table="chat_1")
# sentAt is each server's clock at the insert: the twins may see different seconds.
latest = call("ChatMessages", "latest", {"limit": 10}, user="u", table="chat_1", ignore=("sentAt",))
assert [message.body for message in latest.result] == ["yo", "hi"]
call("ChatMessages", "clear", user="u", table="chat_1")
call("ChatMessages", "latest", {"limit": 10}, user="u", table="chat_2")

# A transaction whose later calls use earlier results: ResultReference values, made with the generated model.
def transaction(body, expect=200):
    global calls
    calls += 1
    api = importlib.import_module("daogate_client.api.daogate.daogate_transaction")
    models = importlib.import_module("daogate_client.models")
    arguments = {"client": client, "body": models.DaogateTransactionBody.from_dict(body)}
    headers = {}
    if secret_file:
        arguments["client"] = AuthenticatedClient(base_url=client_url, token=token(None), raise_on_unexpected_status=True)
        headers["Authorization"] = f"Bearer {token(None)}"
    response = api.sync_detailed(**arguments)
    got = response.parsed.to_dict()
    status, expected = curl("/transaction", body, headers)
    if response.status_code != status or status != expect:
        failures.append(f"transaction: status {response.status_code} (client) vs {status} (curl), expected {expect}: {got}")
    elif got != expected:
        failures.append(f"transaction: the client got {got}, curl got {expected}")
    return got


def reference(pointer):
    return importlib.import_module("daogate_client.models").ResultReference.from_dict({"$result": pointer}).to_dict()


chained = transaction({"calls": [
    {"module": "Demo", "method": "insertItem", "arguments": {"content": "parent"}},
    {"module": "Demo", "method": "getItem", "arguments": {"index": reference("/0/lastInsertRowId")}},
    {"module": "Demo", "method": "insertItem", "arguments": [reference("/1/result")]},
]})
assert chained["results"][1] == {"result": "parent"}, chained
assert chained["results"][2]["lastInsertRowId"] == chained["results"][0]["lastInsertRowId"] + 1, chained
refused = transaction({"calls": [
    {"module": "Demo", "method": "getItem", "arguments": {"index": reference("/0/lastInsertRowId")}},
]}, expect=400)
assert refused["code"] == "invalid_reference" and refused["call"] == 0, refused

print(f"{calls} calls through the generated client and curl")
if failures:
    print("\n".join(failures))
    sys.exit(1)
