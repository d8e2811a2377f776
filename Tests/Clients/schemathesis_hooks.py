"""daogate's rules that JSON Schema cannot state, for schemathesis.

Schemathesis generates requests from openapi/daogate.json and reports a
"schema-valid request rejected" (ST202) when the server refuses one, and a
"schema-violating request accepted" (ST201) when it takes one. A few of
daogate's documented rules are not in the document because JSON Schema cannot
say them; a failure is dropped here only when the server's problem code (or
the request) shows it is one of these rules, never by operation alone, so that
every other failure of the same operation still fails the run. Schemathesis
counts the dropped failures in its summary.
"""
import json
import re

import schemathesis

# ST202: problem codes a schema-valid request may get, with the details that
# mark the rule (None: the code alone), and why the document cannot say so.
RULES = {
    # The module of /modules/{module}/... is a path parameter, and one
    # operation serves all: X-User-Id is required for user-dependent modules
    # only, X-Table-Name for template modules only.
    "user_required": None,
    # Table names are identifiers that are not SQL keywords (case-insensitive,
    # about 150 of them): a pattern cannot list them without lookahead. A
    # table another module owns (by its tableName, or in the caller's
    # storage) is refused: which ones depends on the modules and the storage.
    "invalid_table": ("is an SQL keyword", "is a template (no tableName", "may only use tables of its own",
                      "is not module", "always uses its table", "names no table"),
    # A table another module made in the caller's storage is that module's (409): which names are taken
    # depends on what earlier requests made there.
    "table_owned": None,
    # A user has data in at most --max-storages-per-user custom storages (409): generated X-Storage names
    # take them up.
    "too_many_storages": None,
    # Raw text (@{x no ""}) is held to the raw-text rule, and SQLite alone
    # knows which names exist; such arguments carry x-daogate-raw-text.
    "unsafe_inline": None,
    # A regular expression (RE2 syntax, bounded in size and time): no JSON Schema format names them.
    "invalid_regex": None,
    # The globals of /modules/{module}/globals depend on the module path parameter.
    # A transaction call's arguments are described as any JSON (the oneOf of an
    # object and an array broke openapi-generator's Java, Go and TypeScript
    # clients); the server takes an object, an array or null.
    "invalid_body": ("declares no global argument", "arguments must be an object or an array"),
    # Integers are 64-bit (README, "Values"); a JSON Schema "any" has no bound.
    "invalid_json": ("integer out of 64-bit range",),
    # A KV value must be of its type, a default JSON text of it; the schema
    # keeps value and type apart rather than a oneOf per type, which clients
    # would turn into a union type.
    "invalid_value": ("takes", "cannot be null", "default must be JSON", "a null default needs",
                      # {"all": false} in a cache removal: `all` is a plain boolean, since
                      # openapi-generator's rust cannot read a `const: true` boolean.
                      "all is true"),
    # Capacities and caches per space are the server's settings (README, "Configuration").
    "limit_exceeded": None,
    # A disk cache named "caches" would take the metadata table's name.
    "invalid_name": ("cannot name a cache",),
}

# The calls of a transaction name their module and method in the body: whether
# one exists, and what arguments it takes, depends on those names.
TRANSACTION_CODES = {"unknown_module", "unknown_method", "missing_argument", "unknown_argument",
                     "wrong_type", "invalid_arguments", "invalid_table", "user_required",
                     "unsafe_inline", "constraint_violation", "table_owned", "too_many_storages"}


def problem(response):
    try:
        body = json.loads(response.content)
    except ValueError:
        return None, ""
    if not isinstance(body, dict):
        return None, ""
    return body.get("code"), str(body.get("detail", ""))


def raw_text(case):
    """Whether the request sends an argument that the method inlines as raw SQL text."""
    body = case.operation.definition.raw.get("requestBody", {})
    schema = body.get("content", {}).get("application/json", {}).get("schema", {})
    raw = {name for name, property in schema.get("properties", {}).items() if property.get("x-daogate-raw-text")}
    return isinstance(case.body, dict) and bool(raw & case.body.keys())


def class_member_violation(case, failure):
    """Whether every invalid part the failure names is a member of an argument whose schema is a class's component."""
    message = getattr(failure, "message", "") or ""
    body = case.operation.definition.raw.get("requestBody", {})
    schema = body.get("content", {}).get("application/json", {}).get("schema", {})

    def is_class(name):
        argument = schema.get("properties", {}).get(name, {})
        return "$ref" in argument or "$ref" in argument.get("items", {})

    # "… at /properties/model/properties/id (…)", or "in body - messages -> Array with invalid items: id: …".
    places = re.findall(r" at (/\S+)", message)
    if places:
        names = [re.match(r"/properties/([^/]+)/(?:items/)?properties/", place) for place in places]
        return all(name is not None and is_class(name.group(1)) for name in names)
    found = re.search(r"in body - (\w+) -> ", message)
    return found is not None and is_class(found.group(1))


def int64_as_string(case, failure):
    """Whether the failure is only integers beyond ±(2^53 − 1) written as decimal strings, which a request with
    X-Int64-Format: string (any case) asked for: the header's description says they are outside the integer
    types the document describes (a oneOf of an integer and a string would give generated clients a union
    type for every integer)."""
    headers = {name.lower(): value for name, value in (case.headers or {}).items()}
    if str(headers.get("x-int64-format", "")).lower() != "string":
        return False
    # One failure per violation: the value that violates, and the message saying it is not an integer.
    instance = getattr(failure, "instance", None)
    message = getattr(failure, "message", "") or ""
    return isinstance(instance, str) and re.fullmatch(r"-?[0-9]+", instance) is not None \
        and abs(int(instance)) > 2**53 - 1 and f'"{instance}" is not of type "integer"' in message


@schemathesis.hook
def filter_failure(context, failure, case, response):
    """True keeps the failure."""
    path = case.operation.path
    if failure.code == "ST202":
        code, detail = problem(response)
        marks = RULES.get(code, ())
        if code in RULES and (marks is None or any(mark in detail for mark in marks)):
            return False
        if path == "/transaction" and code in TRANSACTION_CODES:
            return False
        if code == "invalid_arguments" and raw_text(case):
            return False
        # The keys of a batch are an object's member names: OpenAPI 3.1 has
        # propertyNames, OpenAPIKit does not write it; the description says the rule.
        if code == "invalid_name" and path.endswith("/{cache}/entries") and detail.startswith("a key"):
            return False
    if failure.code == "ST108" and int64_as_string(case, failure):
        return False
    if failure.code == "ST201":
        # Arguments by position: a JSON array is the documented alternative to
        # the object the request body describes (its description says so).
        if path.startswith("/dao/") and isinstance(case.body, list):
            return False
        # A class is one component for every method that takes or gives it
        # (issue 12: one type per class in generated clients), so it lists
        # members a given method does not read; the engine checks the members
        # a method reads and ignores the others, as the reference does, so a
        # violation inside another member of a class argument is accepted.
        if path.startswith("/dao/") and class_member_violation(case, failure):
            return False
    return True
