// The calls of calls.json (expanded by transcript.py) through the client that
// openapi-generator's typescript-fetch made (./client, unmodified): each
// request body is built by the generated model's FromJSON, each result read by
// the generated model and written back by its ToJSON, one JSON line a call.
// Then a few calls written out in plain typed code.
//
// usage: node driver.js BASE_URL EXPANDED_CALLS TRANSCRIPT
import * as client from "./client";

// The little of Node's own API used here (Debian packages no @types/node).
declare const process: { argv: string[]; exit(code: number): never };
declare function require(module: "fs"): {
  readFileSync(path: string, encoding: "utf8"): string;
  writeFileSync(path: string, data: string): void;
};
const fs = require("fs");

interface Param { name: string; in: string; value: unknown }
interface Call { op: string; params: Param[]; body?: unknown }

const [baseUrl, callsPath, transcriptPath] = process.argv.slice(2);
const configuration = new client.Configuration({ basePath: baseUrl });
const generated = client as unknown as Record<string, any>;
const apis = Object.keys(generated)
  .filter((name) => /^[A-Z]\w*Api$/.test(name) && name !== "BaseAPI")
  .map((name) => new generated[name](configuration));

// openapi-generator's camelize: Books_addBook -> booksAddBook, X-User-Id -> xUserId.
function camel(name: string): string {
  const pascal = name.split(/[^A-Za-z0-9]+/).filter(Boolean).map((part) => part[0].toUpperCase() + part.slice(1)).join("");
  return pascal[0].toLowerCase() + pascal.slice(1);
}

function model(name: string, direction: "FromJSON" | "ToJSON"): (value: any) => any {
  const convert = generated[name + direction];
  if (typeof convert !== "function") throw new Error(`the generated client has no ${name}${direction}`);
  return convert;
}

// The models an operation writes its body with and reads its result with, as
// its generated code names them (identical inline schemas share one model).
function models(api: any, operation: string): { body?: [string, string]; result?: string } {
  const options = String(api[operation + "RequestOpts"] ?? "");
  const raw = String(api[operation + "Raw"]);
  const body = /(\w+)ToJSON\)?\(requestParameters\['(\w+)'\]\)/.exec(options);
  const result = /(\w+)FromJSON\)?\(jsonValue\)/.exec(raw);
  return { body: body ? [body[1], body[2]] : undefined, result: result?.[1] };
}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`typed call: ${what}`);
}

async function main(): Promise<void> {
  const calls: Call[] = JSON.parse(fs.readFileSync(callsPath, "utf8"));
  const lines: string[] = [];
  for (const call of calls) {
    const operation = camel(call.op);
    const method = operation + "Raw";
    const api = apis.find((candidate) => typeof candidate[method] === "function");
    if (!api) throw new Error(`the generated client has no ${method}`);
    const named = models(api, operation);
    const request: Record<string, unknown> = {};
    for (const param of call.params) request[camel(param.name)] = param.value;
    if (call.body !== undefined) {
      if (!named.body) throw new Error(`${call.op}: the generated client sends no body`);
      request[named.body[1]] = model(named.body[0], "FromJSON")(call.body);
    }
    let status: number;
    let body: unknown;
    try {
      const response = await api[method](request);
      status = response.raw.status;
      body = named.result ? model(named.result, "ToJSON")(await response.value()) : null;
    } catch (error) {
      if (!(error instanceof client.ResponseError)) throw error;
      status = error.response.status;
      body = client.ProblemToJSON(client.ProblemFromJSON(await error.response.json()));
    }
    lines.push(JSON.stringify({ op: call.op, status, body }));
  }
  fs.writeFileSync(transcriptPath, lines.join("\n") + "\n");

  // Typed code as an application writes it.
  const demo = new client.DemoApi(configuration);
  const written = await demo.demoInsertItem({ demoInsertItemRequest: { content: "typed" } });
  check(written.ok === true && written.changes === 1 && written.lastInsertRowId > 1, `insertItem gave ${JSON.stringify(written)}`);
  const item = await demo.demoGetItem({ demoGetItemRequest: { index: written.lastInsertRowId } });
  check(item.result === "typed", `getItem gave ${JSON.stringify(item)}`);
  const books = new client.BooksApi(configuration);
  const book = await books.booksSelectBook({ booksSelectBookRequest: { id: 1 } });
  check(book.result?.year === 2000 && book.result?.email === "h@sqlite.org", `selectBook gave ${JSON.stringify(book)}`);
  const messages = new client.MessagesApi(configuration);
  const none = await messages.messagesGetMessage({ xUserId: "nobody", messagesGetMessageRequest: { msgId: 1 } });
  check(none.result === null, `getMessage of nobody gave ${JSON.stringify(none)}`);
  try {
    await books.booksAddBook({ booksAddBookRequest: { title: "dup", isbn: "1" } });
    check(false, "a duplicate isbn was accepted");
  } catch (error) {
    if (!(error instanceof client.ResponseError)) throw error;
    const problem = client.ProblemFromJSON(await error.response.json());
    check(error.response.status === 409 && problem.code === "constraint_violation", `a duplicate gave ${JSON.stringify(problem)}`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
