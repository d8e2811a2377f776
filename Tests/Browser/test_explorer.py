"""The API explorer (GET /docs) driven in headless Chromium by its stable hooks (data-testid = operation,
user-id, arguments, send, response), against real `daogate serve`s on loopback ports:

1. `/` redirects to the page; it lists one operation per method of the served openapi.json, the modules'
   methods among them, and loads nothing from anywhere but the server;
2. a call sent with a user id shows the server's answer, and the call really ran in that user's storage
   (curl reads back what the page wrote, as that user only);
3. a call that must fail (Books.addBook without its title) shows the problem: status, code and detail;
   arguments that are not JSON are refused on the page and nothing is sent;
4. in jwt mode the page loads without a token, a call without one shows the 401, and with one it succeeds;
5. behind HAProxy, in front of two shards (`daogate haproxy-config`), the page (served by the common shard)
   sends each user's call to that user's shard: no 421, and each shard holds its own user's row;
6. CORS as Chromium enforces it: a page of a listed origin (`--cors-origin`) calls daogate with a user id and
   a JSON body (a preflighted request) and reads the answer and a problem; a page of an origin not listed
   cannot, and its call never reaches the storage.

Run by Tests/Browser/run. Prints what it checked; exits 1 at the first failure.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import threading
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("DAOGATE_BINARY", str(ROOT / ".build/debug/daogate"))
WORK = Path(tempfile.mkdtemp(prefix="daogate-browser-"))
SERVERS = []


def free_port():
    """A loopback port free now, for the programs that must be told theirs (a shard map, HAProxy)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """A `daogate serve` on a free loopback port, with its own data folder and key."""

    def __init__(self, name, *arguments, environment=None, port=0):
        folder = WORK / name
        folder.mkdir()
        (folder / "key").write_bytes(os.urandom(32))
        self.log = folder / "log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("DAOGATE_")}
        env.update(environment or {})
        self.process = subprocess.Popen(
            [BINARY, "serve", "--modules", "modules", "--data", str(folder / "data"), "--port", str(port),
             "--key-file", str(folder / "key"), "--access-log", "off", *arguments],
            cwd=ROOT, env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        SERVERS.append(self)
        deadline = time.time() + 30
        while True:
            match = re.search(r"daogate listening on (http://127\.0\.0\.1:\d+)", self.log.read_text())
            if match:
                self.base = match.group(1)
                break
            if self.process.poll() is not None or time.time() > deadline:
                sys.exit(f"daogate serve did not start:\n{self.log.read_text()}")
            time.sleep(0.05)

    def call(self, path, body=None, headers=None):
        """A request as curl would send it: the status and the JSON answer."""
        request = urllib.request.Request(self.base + path, data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json", **(headers or {})},
                                         method="POST" if body is not None else "GET")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", f"--user-data-dir={WORK / 'profile'}", "--no-first-run",
                     "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--disable-extensions", "--disable-features=Translate,OptimizationHints,MediaRouter",
                     # No network beyond loopback: every other host name fails to resolve.
                     "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(options=options, service=service)


def check(condition, message):
    if not condition:
        raise AssertionError(message)
    print(f"  ok: {message}")


def wait(driver, condition, what, timeout=10):
    try:
        return WebDriverWait(driver, timeout).until(lambda d: condition(d))
    except TimeoutException:
        raise AssertionError(f"timed out waiting for {what}; the page shows:\n{driver.find_element(By.TAG_NAME, 'body').text[:2000]}")


def hook(driver, name):
    return driver.find_element(By.CSS_SELECTOR, f'[data-testid="{name}"]')


def operations(driver):
    return driver.find_elements(By.CSS_SELECTOR, '[data-testid="operation"]')


def pick(driver, path):
    """Clicks the operation of `path` and waits until its arguments are in the form."""
    button = wait(driver, lambda d: next((o for o in operations(d) if o.get_attribute("data-path") == path), None),
                  f"the operation {path}")
    button.click()
    wait(driver, lambda d: d.find_element(By.ID, "call-path").text == path, f"{path} in the form")


def fill(element, text):
    element.clear()
    element.send_keys(text)


def send_and_read(driver):
    """Clicks send and returns the text of the answer it brings (the page counts answers in data-answers)."""
    answers = int(hook(driver, "response").get_attribute("data-answers") or 0)
    hook(driver, "send").click()
    wait(driver, lambda d: int(hook(d, "response").get_attribute("data-answers") or 0) > answers, "the answer")
    return hook(driver, "response").text


def documented_operations(server):
    _, document = server.call("/openapi.json")
    return sorted((verb.upper(), path) for path, item in document["paths"].items()
                  for verb in ("get", "put", "post", "delete", "patch") if verb in item)


def trusted_header_mode(driver):
    print("== the explorer, trusted-header mode")
    server = Server("plain")
    driver.get(server.base + "/")
    wait(driver, lambda d: len(operations(d)) > 0, "the operations")
    check(driver.current_url == server.base + "/docs", f"/ redirects to /docs ({driver.current_url})")
    listed = sorted((o.get_attribute("data-verb"), o.get_attribute("data-path")) for o in operations(driver))
    check(listed == documented_operations(server), f"one operation per operation of openapi.json ({len(listed)})")
    for path in ["/dao/Demo/insertItem", "/dao/Messages/insertMessage", "/dao/Books/addBook"]:
        check(("POST", path) in listed, f"{path} is listed")

    # A call with a user id: the page shows the answer, and it ran in that user's own storage.
    fill(hook(driver, "user-id"), "ann")
    pick(driver, "/dao/Messages/insertMessage")
    check(json.loads(hook(driver, "arguments").get_attribute("value")).keys() == {"model"},
          "the arguments start from the method's own (model)")
    message = {"model": {"time": 1700000000, "content": "written from the explorer", "uin": 7, "read": False}}
    fill(hook(driver, "arguments"), json.dumps(message))
    answer = send_and_read(driver)
    check(answer.startswith("200"), f"the page shows the 200 ({answer.splitlines()[0]})")
    shown = json.loads(answer.split("\n", 1)[1])
    check(shown.keys() == {"ok", "changes", "lastInsertRowId"} and shown["changes"] == 1, f"the page shows the JSON answer {shown}")
    row = shown["lastInsertRowId"]
    status, read = server.call("/dao/Messages/getMessage", {"msgId": row}, {"X-User-Id": "ann"})
    check(status == 200 and read["result"]["content"] == "written from the explorer", "ann's storage holds the message the page wrote")
    status, other = server.call("/dao/Messages/getMessage", {"msgId": row}, {"X-User-Id": "bob"})
    check(status == 200 and other["result"] is None, "bob's does not")

    # Read back through the page: the same answer curl gets.
    pick(driver, "/dao/Messages/getMessage")
    fill(hook(driver, "arguments"), json.dumps({"msgId": row}))
    answer = send_and_read(driver)
    check(json.loads(answer.split("\n", 1)[1]) == read, "getMessage on the page answers what curl gets")

    if os.environ.get("EXPLORER_SCREENSHOT"):
        driver.save_screenshot(os.environ["EXPLORER_SCREENSHOT"])
        print(f"  screenshot: {os.environ['EXPLORER_SCREENSHOT']}")

    # A call that must fail: the problem is shown, status, code and detail.
    pick(driver, "/dao/Books/addBook")
    fill(hook(driver, "arguments"), '{"year": 2001}')
    answer = send_and_read(driver)
    status, problem = server.call("/dao/Books/addBook", {"year": 2001})
    check(status == 400 and answer.startswith("400"), f"the page shows the 400 ({answer.splitlines()[0]})")
    check(f"{problem['code']}: {problem['detail']}" in answer, f"the page shows the problem's code and detail ({problem['code']})")
    check(json.loads(answer.split("\n", 2)[2]) == problem, "the page shows the problem+json as sent")
    check("problem" in hook(driver, "response").get_attribute("class"), "the answer is marked as a problem")
    _, books = server.call("/dao/Books/findBooks", {})
    # Arguments that are not JSON: refused on the page, nothing sent.
    fill(hook(driver, "arguments"), '{"title": "unfinished"')
    answer = send_and_read(driver)
    check("not JSON (nothing was sent)" in answer, "arguments that are not JSON are refused on the page")
    check(server.call("/dao/Books/findBooks", {}) == (200, books), "and nothing was sent")

    # Everything the page loaded came from this server.
    loaded = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    check(loaded and all(url.startswith(server.base + "/") for url in loaded),
          f"all {len(loaded)} resources came from the server ({sorted(set(re.sub(r'[?].*', '', u) for u in loaded))})")
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE" and "400" not in entry["message"]]
    check(not errors, f"no error in the browser's console {errors}")


def jwt_mode(driver):
    print("== the explorer, jwt mode")
    secret = WORK / "jwt.secret"
    secret.write_bytes(os.urandom(32))
    server = Server("jwt", "--auth", "jwt", environment={"DAOGATE_JWT_SECRET_FILE": str(secret)})
    driver.get(server.base + "/docs")
    wait(driver, lambda d: len(operations(d)) > 0, "the operations")
    check(len(operations(driver)) == len(documented_operations(server)), "the page loads without a token and lists every operation")
    check("JWT" in driver.find_element(By.ID, "mode").text, "the page says calls need a JWT")
    pick(driver, "/dao/Demo/insertItem")
    fill(hook(driver, "arguments"), '{"content": "jwt"}')
    answer = send_and_read(driver)
    check(answer.startswith("401") and "token_missing" in answer, f"a call without a token shows the 401 ({answer.splitlines()[0]})")
    token = subprocess.run([sys.executable, str(ROOT / "scripts/mint-token"), "--secret-file", str(secret), "--sub", "ann"],
                           check=True, capture_output=True, text=True).stdout.strip()
    fill(hook(driver, "token"), token)
    answer = send_and_read(driver)
    check(answer.startswith("200") and '"ok": true' in answer, "with a token it succeeds")


def behind_haproxy(driver):
    print("== the explorer on shards behind HAProxy")
    buckets = 16
    ports = {"a": free_port(), "c": free_port()}
    shard_map = WORK / "shards.json"
    shard_map.write_text(json.dumps({"epoch": 1, "buckets": buckets, "common": "c",
                                     "shards": {name: f"127.0.0.1:{port}" for name, port in ports.items()},
                                     "ranges": [[0, 7, "a"], [8, buckets - 1, "c"]]}))
    shards = {name: Server(f"shard-{name}", "--shard", name, "--shard-map", str(shard_map), port=port)
              for name, port in ports.items()}
    listen = free_port()
    config = WORK / "haproxy"
    subprocess.run([BINARY, "haproxy-config", "--modules", "modules", "--shard-map", str(shard_map), "--out", str(config),
                    "--listen", f"127.0.0.1:{listen}"], check=True, cwd=ROOT, capture_output=True)
    haproxy = subprocess.Popen(["haproxy", "-f", str(config / "haproxy.cfg")], stdout=(WORK / "haproxy.log").open("w"),
                               stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{listen}"
        deadline = time.time() + 20
        while True:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                raise AssertionError(f"HAProxy did not answer:\n{(WORK / 'haproxy.log').read_text()}")
            time.sleep(0.1)
        # One user in each shard's buckets.
        users = {}
        for index in range(1000):
            user = f"user{index}"
            owner = "a" if zlib.crc32(user.encode()) % buckets <= 7 else "c"
            users.setdefault(owner, user)
        driver.get(base + "/")
        wait(driver, lambda d: len(operations(d)) > 0, "the operations")
        check(driver.current_url == base + "/docs", "through HAProxy, / redirects to /docs and the page lists the operations")
        for owner, user in sorted(users.items()):
            fill(hook(driver, "user-id"), user)
            pick(driver, "/dao/Messages/insertMessage")
            fill(hook(driver, "arguments"), json.dumps({"model": {"time": 1, "content": f"for {user}", "uin": 1, "read": False}}))
            answer = send_and_read(driver)
            check(answer.startswith("200"), f"{user}'s call from the page answered {answer.splitlines()[0]} (shard {owner}'s user)")
            status, read = shards[owner].call("/dao/Messages/getMessage", {"msgId": 1}, {"X-User-Id": user})
            check(status == 200 and read["result"]["content"] == f"for {user}", f"shard {owner} holds {user}'s message")
        loaded = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        check(all(url.startswith(base + "/") for url in loaded), "everything the page loaded came through HAProxy")
    finally:
        haproxy.terminate()
        haproxy.wait(timeout=10)


class AppPage(BaseHTTPRequestHandler):
    """A page of another origin: a web app that calls daogate from the browser."""

    def do_GET(self):
        body = b"<!DOCTYPE html><title>an app</title><p>an app"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments):
        pass


CALL_FROM_PAGE = """
const [url, user, body, done] = arguments;
fetch(url, {method: "POST", headers: {"Content-Type": "application/json", "X-User-Id": user}, body})
  .then(async (response) => done({status: response.status, body: await response.text()}))
  .catch((error) => done({error: String(error)}));
"""


def cors_in_the_browser(driver):
    print("== CORS in the browser")
    apps = [ThreadingHTTPServer(("127.0.0.1", 0), AppPage) for _ in range(2)]
    for app in apps:
        threading.Thread(target=app.serve_forever, daemon=True).start()
    listed, unlisted = (f"http://127.0.0.1:{app.server_address[1]}" for app in apps)
    server = Server("cors", "--cors-origin", listed)
    try:
        driver.get(listed + "/")
        message = json.dumps({"model": {"time": 2, "content": "from another origin", "uin": 3, "read": False}})
        answer = driver.execute_async_script(CALL_FROM_PAGE, server.base + "/dao/Messages/insertMessage", "carol", message)
        check(answer.get("status") == 200 and json.loads(answer["body"])["changes"] == 1,
              f"a page of {listed} (listed) calls daogate with X-User-Id and JSON and reads the answer {answer}")
        answer = driver.execute_async_script(CALL_FROM_PAGE, server.base + "/dao/Books/addBook", "carol", "{}")
        check(answer.get("status") == 400 and json.loads(answer["body"])["code"] == "missing_argument",
              "and reads a problem's code")
        driver.get(unlisted + "/")
        message = json.dumps({"model": {"time": 3, "content": "from an origin not listed", "uin": 3, "read": False}})
        answer = driver.execute_async_script(CALL_FROM_PAGE, server.base + "/dao/Messages/insertMessage", "dave", message)
        check("error" in answer, f"a page of {unlisted} (not listed) cannot: {answer}")
        status, read = server.call("/dao/Messages/messagesOf", {"uin": 3}, {"X-User-Id": "dave"})
        check(status == 200 and read["result"] == [], "and its call never reached dave's storage (the preflight stopped it)")
    finally:
        for app in apps:
            app.shutdown()


def main():
    driver = browser()
    try:
        print(f"chromium {driver.capabilities.get('browserVersion')}, chromedriver "
              f"{driver.capabilities.get('chrome', {}).get('chromedriverVersion', '?').split(' ')[0]}")
        trusted_header_mode(driver)
        jwt_mode(driver)
        behind_haproxy(driver)
        cors_in_the_browser(driver)
    except AssertionError as failure:
        print(f"FAILED: {failure}")
        return 1
    finally:
        driver.quit()
        for server in SERVERS:
            server.process.terminate()
            server.process.wait(timeout=10)
        shutil.rmtree(WORK, ignore_errors=True)
    print("the API explorer works in Chromium")
    return 0


if __name__ == "__main__":
    sys.exit(main())
