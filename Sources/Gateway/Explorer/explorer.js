// daogate's API explorer: reads the served openapi.json, lists its operations (the modules' methods first),
// and sends a call as a person fills it. Every URL is relative to the page, so it works behind a proxy that
// serves daogate under a prefix. Text from the server is only ever set as textContent, never as HTML.
"use strict";

const state = { document: null, operations: [], current: null, jwt: false };
const $ = (id) => document.getElementById(id);

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

/// Follows a local `$ref` ("#/components/schemas/X") to what it names.
function resolve(node) {
  let seen = 0;
  while (node && typeof node.$ref === "string" && node.$ref.startsWith("#/") && seen++ < 16) {
    node = node.$ref.slice(2).split("/").reduce((at, key) => at && at[key.replace(/~1/g, "/").replace(/~0/g, "~")], state.document);
  }
  return node || {};
}

function typeOf(schema) {
  schema = resolve(schema);
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const named = types.filter((type) => type !== "null");
  if (named.length) return named[0] === "array" && schema.items ? "[" + typeOf(schema.items) + "]" : named[0];
  if (schema.oneOf || schema.anyOf) return (schema.oneOf || schema.anyOf).map(typeOf).join(" | ");
  return "any";
}

/// A starting value for a schema: its example or default, else an empty value of its type.
function sample(schema, depth = 0) {
  schema = resolve(schema);
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  if (depth > 3) return null;
  switch (typeOf(schema).split(" ")[0]) {
    case "string": return "";
    case "integer": case "number": return 0;
    case "boolean": return false;
    case "object": {
      const value = {};
      const required = schema.required || [];
      const names = Object.keys(schema.properties || {});
      for (const name of names.filter((n) => required.includes(n)).concat(names.filter((n) => !required.includes(n)))) {
        value[name] = sample(schema.properties[name], depth + 1);
      }
      return value;
    }
    default:
      if (typeOf(schema).startsWith("[")) return [];
      return null;
  }
}

function bodySchema(operation) {
  const body = resolve(operation.requestBody);
  const content = body.content || {};
  const json = content["application/json"];
  return json ? { schema: resolve(json.schema), required: !!body.required, description: body.description } : null;
}

function isStream(operation) {
  const ok = resolve((operation.responses || {})["200"]);
  return !!(ok.content && ok.content["text/event-stream"]);
}

/// The document's operations: each module's methods (a tag named after the module), then the service's.
function readOperations(doc) {
  const operations = [];
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const verb of ["get", "put", "post", "delete", "patch"]) {
      const operation = item[verb];
      if (!operation) continue;
      const parameters = (item.parameters || []).concat(operation.parameters || []).map(resolve);
      const dao = path.match(/^\/dao\/([^/]+)\/([^/]+)$/);
      operations.push({
        verb: verb.toUpperCase(), path, operation, parameters,
        tag: (operation.tags || [dao ? dao[1] : "other"])[0],
        name: dao ? dao[2] : path,
        label: dao ? dao[1] + "." + dao[2] : verb.toUpperCase() + " " + path,
      });
    }
  }
  const order = (doc.tags || []).map((tag) => tag.name);
  const rank = (op) => (op.path.startsWith("/dao/") ? 0 : 1) * 1000 + Math.max(order.indexOf(op.tag), 0);
  operations.sort((a, b) => rank(a) - rank(b) || a.path.localeCompare(b.path) || a.verb.localeCompare(b.verb));
  return operations;
}

function renderList() {
  const list = $("operation-list");
  const filter = $("filter").value.trim().toLowerCase();
  list.replaceChildren();
  const tags = new Map(((state.document.tags || []).map((tag) => [tag.name, tag.description || ""])));
  let group = null, shown = 0;
  for (const op of state.operations) {
    const text = (op.label + " " + op.tag + " " + (op.operation.summary || "")).toLowerCase();
    if (filter && !text.includes(filter)) continue;
    if (!group || group.tag !== op.tag) {
      const heading = element("h3", { title: tags.get(op.tag) || "" }, op.tag + " ");
      if (op.path.startsWith("/dao/")) heading.append(element("span", { class: "muted", text: "module" }));
      group = { tag: op.tag, list: element("ul") };
      list.append(heading, group.list);
    }
    const button = element("button", {
      type: "button", "data-testid": "operation", "data-path": op.path, "data-verb": op.verb,
      title: op.operation.summary || op.label,
    }, element("span", { class: "verb", text: op.verb }), element("span", { class: "name", text: op.name }));
    if (state.current === op) button.setAttribute("aria-current", "true");
    button.addEventListener("click", () => select(op));
    group.list.append(element("li", {}, button));
    shown++;
  }
  if (!shown) list.append(element("p", { class: "muted", text: "No operation matches." }));
}

function select(op) {
  state.current = op;
  renderList();
  $("intro").hidden = true;
  $("call-form").hidden = false;
  $("call-verb").textContent = op.verb;
  $("call-path").textContent = op.path;
  const summary = [op.operation.summary, op.operation.description].filter(Boolean).join(" — ");
  // The document's `code` spans become <code>; everything else stays text.
  $("call-summary").replaceChildren(...summary.split("`").map((part, index) => index % 2 ? element("code", { text: part }) : part));

  // The path's and query's parameters, and the headers other than the user and the token (above, for all calls).
  const box = $("call-parameters");
  box.replaceChildren();
  const names = new Set();
  const fields = [];
  for (const name of (op.path.match(/\{[^}]+\}/g) || []).map((p) => p.slice(1, -1))) {
    const declared = op.parameters.find((p) => p.in === "path" && p.name === name) || {};
    fields.push({ in: "path", name, required: true, description: declared.description });
  }
  for (const parameter of op.parameters) {
    if (parameter.in === "path" || /^(x-user-id|authorization)$/i.test(parameter.name || "")) continue;
    if (parameter.in !== "query" && parameter.in !== "header") continue;
    fields.push(parameter);
  }
  for (const field of fields) {
    const key = field.in + ":" + field.name;
    if (names.has(key)) continue;
    names.add(key);
    const input = element("input", { "data-in": field.in, "data-name": field.name, spellcheck: "false",
      autocomplete: "off", placeholder: field.required ? "required" : "optional" });
    const label = element("label", { title: field.description || "" },
      element("span", {}, field.name + " ", element("span", { class: "muted", text: "(" + field.in + ")" })), input);
    box.append(label);
  }

  const body = bodySchema(op.operation);
  const area = $("arguments");
  const table = $("call-schema");
  table.replaceChildren();
  if (body) {
    area.disabled = false;
    area.value = JSON.stringify(sample(body.schema), null, 2);
    $("arguments-label").title = body.description || "";
    const properties = body.schema.properties || {};
    const required = body.schema.required || [];
    if (Object.keys(properties).length) {
      table.append(element("tr", {}, element("th", { text: "argument" }), element("th", { text: "type" }),
        element("th", { text: "" })));
      const names = Object.keys(properties);
      for (const name of names.filter((n) => required.includes(n)).concat(names.filter((n) => !required.includes(n)))) {
        const schema = properties[name];
        table.append(element("tr", {}, element("td", {}, element("code", { text: name })),
          element("td", { text: typeOf(schema) }),
          element("td", { class: "muted", text: required.includes(name) ? "required" : "may be null or left out" })));
      }
    }
  } else {
    area.value = "";
    area.disabled = true;
  }
  const stream = isStream(op.operation);
  $("send").disabled = stream;
  $("send").title = stream ? "A Server-Sent Events stream: follow it with curl -N (see As curl)." : "";
  updateCurl();
}

/// The request the form describes: URL (relative to the page), method, headers, body.
function request() {
  const op = state.current;
  let path = op.path;
  const query = new URLSearchParams();
  const headers = {};
  for (const input of $("call-parameters").querySelectorAll("input")) {
    const value = input.value;
    if (input.dataset.in === "path") path = path.replace("{" + input.dataset.name + "}", encodeURIComponent(value));
    else if (value === "") continue;
    else if (input.dataset.in === "query") query.append(input.dataset.name, value);
    else headers[input.dataset.name] = value;
  }
  const user = $("user-id").value.trim();
  const token = $("token").value.trim();
  if (user) headers["X-User-Id"] = user;
  if (token) headers["Authorization"] = "Bearer " + token;
  let body;
  if (!$("arguments").disabled && $("arguments").value.trim() !== "") {
    body = $("arguments").value;
    headers["Content-Type"] = "application/json";
  }
  const search = query.toString();
  return { url: path.slice(1) + (search ? "?" + search : ""), method: op.verb, headers, body };
}

function shellQuote(text) { return "'" + text.replace(/'/g, "'\\''") + "'"; }

function updateCurl() {
  if (!state.current) return;
  const call = request();
  const words = ["curl", "-s"];
  if (call.method !== "GET") words.push("-X", call.method);
  words.push(shellQuote(new URL(call.url, document.baseURI).href));
  for (const [name, value] of Object.entries(call.headers)) {
    words.push("-H", shellQuote(name + ": " + (name === "Authorization" ? "Bearer $TOKEN" : value)));
  }
  if (call.body !== undefined) words.push("--data-binary", shellQuote(call.body));
  $("call-curl").textContent = words.join(" ");
}

/// Shows a finished call's outcome; the box's `data-answers` counts them (a test waits on it).
function answered(className, ...children) {
  const box = $("response");
  box.className = className;
  box.replaceChildren(...children);
  box.dataset.answers = String(Number(box.dataset.answers || "0") + 1);
  box.removeAttribute("aria-busy");
}

function showAnswer(status, statusText, contentType, text, elapsed) {
  const box = element("div");
  let value, parsed = false;
  try { value = JSON.parse(text); parsed = true; } catch (error) { value = text; }
  const problem = status >= 400;
  box.append(element("p", {}, element("span", { class: "status", text: status + " " + (statusText || "") }),
    element("span", { class: "muted", text: "  " + (contentType || "no body") + " · " + elapsed + " ms" })));
  if (problem && parsed && value && typeof value === "object") {
    const line = [value.code, value.detail].filter(Boolean).join(": ");
    if (line) box.append(element("p", { class: "problem-detail", text: line }));
  }
  box.append(element("pre", { text: parsed ? JSON.stringify(value, null, 2) : text }));
  answered(problem ? "problem" : "ok", ...box.childNodes);
}

async function send(event) {
  if (event) event.preventDefault();
  if (!state.current || $("send").disabled) return;
  const call = request();
  if (call.body !== undefined) {
    try { JSON.parse(call.body); } catch (error) {
      answered("problem", element("p", { class: "problem-detail", text: "The arguments are not JSON (nothing was sent): " + error.message }));
      return;
    }
  }
  $("send").disabled = true;
  $("response").setAttribute("aria-busy", "true");
  $("response").replaceChildren(element("p", { class: "muted", text: "Sending " + call.method + " " + call.url + "…" }));
  const started = performance.now();
  try {
    const response = await fetch(call.url, { method: call.method, headers: call.headers, body: call.body, cache: "no-store" });
    const text = await response.text();
    showAnswer(response.status, response.statusText, response.headers.get("Content-Type"), text,
      Math.round(performance.now() - started));
  } catch (error) {
    answered("problem", element("p", { class: "problem-detail", text: "The call did not reach the server: " + error.message }));
  } finally {
    $("send").disabled = false;
  }
}

async function start() {
  $("user-id").value = sessionStorage.getItem("daogate.user") || "";
  $("user-id").addEventListener("input", () => { sessionStorage.setItem("daogate.user", $("user-id").value); updateCurl(); });
  $("token").addEventListener("input", updateCurl);
  $("filter").addEventListener("input", renderList);
  $("call-form").addEventListener("submit", send);
  $("call-form").addEventListener("input", updateCurl);
  $("arguments").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) send(event);
  });
  try {
    const response = await fetch("openapi.json", { cache: "no-store" });
    if (!response.ok) throw new Error("GET openapi.json answered " + response.status);
    state.document = await response.json();
  } catch (error) {
    $("operation-list").replaceChildren(element("p", { class: "problem-detail", text: "Could not read openapi.json: " + error.message }));
    return;
  }
  const info = state.document.info || {};
  $("title").textContent = (info.title || "daogate") + " API explorer";
  $("version").textContent = info.version ? "v" + info.version : "";
  const schemes = (state.document.components || {}).securitySchemes || {};
  state.jwt = !!schemes.bearer;
  $("mode").textContent = state.jwt
    ? "This server verifies a JWT on every call (--auth jwt): paste one in Token. Its user claim is the caller; a user id, when given, must be the same."
    : "The user id picks the caller's own storage. The token is needed only by admin operations (the admin token).";
  state.operations = readOperations(state.document);
  renderList();
}

document.addEventListener("DOMContentLoaded", start);
