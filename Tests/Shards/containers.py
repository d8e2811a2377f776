#!/usr/bin/env python3
"""What can be proved of the container files without a container engine:

- every shared library the release binary needs (ldd) comes from a package the Dockerfile's runtime stage
  installs, or one those depend on (apt-cache depends --recurse), or from the Swift toolchain, which the image
  links statically (--static-swift-stdlib);
- docker/compose.yaml is well-formed YAML and consistent: HAProxy, two user shards and the common shard from the
  one image, each shard's name in the shard map with its service's address and port, secrets and volumes
  declared, files present; the HAProxy configuration generated from docker/shards/shards.json passes haproxy -c.

Run by Tests/Shards/run (part of `make test`)."""
import os, re, subprocess, sys, tempfile, json

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def fail(message):
    failures.append(message)
    print("FAIL:", message, flush=True)


def runtime_packages():
    text = open(os.path.join(ROOT, "docker/Dockerfile")).read()
    runtime = text[text.rindex("FROM debian"):]
    install = re.search(r"apt-get install[^\n]*\\\n((?:[^\n]*\\\n)*?[^\n]*?)&&", runtime)
    if not install:
        # the list may end the line before `&& rm`
        install = re.search(r"--no-install-recommends\s*\\\n(.*?)\\\n\s*&&", runtime, re.S)
    words = re.findall(r"[a-z0-9][a-z0-9.+-]+", install.group(1))
    return [w for w in words if w not in ("apt-get", "install", "y", "no-install-recommends")]


def libraries_of(binary):
    output = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libraries = []
    for line in output.splitlines():
        match = re.search(r"=>\s+(/\S+)", line) or re.match(r"\s*(/\S+)", line)
        if match:
            libraries.append(match.group(1))
        elif "not found" in line:
            fail(f"ldd: {line.strip()}")
    return libraries


def check_libraries():
    binary = os.environ.get("DAOGATE_RELEASE_BINARY") or os.path.join(ROOT, ".build/release/daogate")
    if not os.path.exists(binary):
        binary = os.path.join(ROOT, ".build/debug/daogate")
        print("no release build: checking the debug binary's libraries", flush=True)
    packages = runtime_packages()
    closure = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                              "--no-breaks", "--no-replaces", "--no-enhances", "--no-pre-depends"] + packages,
                             capture_output=True, text=True, check=True).stdout
    provided = {line.strip() for line in closure.splitlines() if line and not line.startswith(" ")}
    provided |= {re.sub(r"^Depends: ", "", line.strip()).strip("<>") for line in closure.splitlines() if "Depends:" in line}
    # debian:bookworm-slim's own essential packages
    provided |= {"libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libzstd1", "liblzma5", "libselinux1", "libcap2"}
    toolchain = os.path.realpath(os.path.dirname(os.path.dirname(subprocess.run(
        ["sh", "-c", "command -v swift"], capture_output=True, text=True).stdout.strip() or "/usr/bin/swift")))
    checked = 0
    for library in libraries_of(binary):
        real = os.path.realpath(library)
        if real.startswith(toolchain + "/") and "/lib/swift" in real:
            continue  # the Swift runtime: linked statically into the image's binary
        owner = subprocess.run(["dpkg", "-S", library], capture_output=True, text=True)
        if owner.returncode != 0:
            owner = subprocess.run(["dpkg", "-S", real], capture_output=True, text=True)
        if owner.returncode != 0:
            fail(f"{library} belongs to no Debian package")
            continue
        package = owner.stdout.split(":")[0].strip()
        if package not in provided:
            fail(f"{library} comes from {package}, which the Dockerfile's runtime stage does not install ({', '.join(packages)})")
        checked += 1
    print(f"ldd: {checked} system libraries of {os.path.basename(binary)}, all from the runtime packages", flush=True)


def check_compose():
    import yaml
    compose_text = open(os.path.join(ROOT, "docker/compose.yaml")).read()
    compose = yaml.safe_load(compose_text)
    services = compose.get("services", {})
    shard_map = json.load(open(os.path.join(ROOT, "docker/shards/shards.json")))
    shards = {name: service for name, service in services.items()
              if isinstance(service.get("environment"), dict) and "DAOGATE_SHARD" in service["environment"]}
    if "haproxy" not in services:
        fail("compose has no haproxy service")
    images = {service["image"] for service in shards.values()}
    if len(images) != 1:
        fail(f"the shards run {images}, not one image")
    if len(shards) != 3:
        fail(f"compose has {len(shards)} shards, not two user shards and the common one")
    names = {service["environment"]["DAOGATE_SHARD"]: name for name, service in shards.items()}
    if set(names) != set(shard_map["shards"]):
        fail(f"compose's shards {sorted(names)} are not the map's {sorted(shard_map['shards'])}")
    if shard_map["common"] not in names:
        fail(f"the map's common shard {shard_map['common']} is no compose service")
    for shard, address in shard_map["shards"].items():
        host, port = address.rsplit(":", 1)
        service = shards.get(names.get(shard))
        if service is None or host != names[shard] or service["environment"].get("DAOGATE_PORT") != port:
            fail(f"shard {shard}'s address {address} is not its service and port")
    for name, service in list(shards.items()) + [("haproxy", services.get("haproxy", {}))]:
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./shards/haproxy"):
                # Generated by the haproxy-config command the compose file's header gives.
                if "--out /srv/config/haproxy" not in compose_text:
                    fail(f"{name} mounts {source}, which the compose file does not say how to generate")
            elif source.startswith("."):
                if not os.path.exists(os.path.join(ROOT, "docker", source)):
                    fail(f"{name} mounts {source}, which does not exist")
            elif source not in (compose.get("volumes") or {}):
                fail(f"{name} mounts the undeclared volume {source}")
        for secret in service.get("secrets", []):
            if secret not in (compose.get("secrets") or {}):
                fail(f"{name} uses the undeclared secret {secret}")
        for dependency in service.get("depends_on", []):
            if dependency not in services:
                fail(f"{name} depends on the unknown service {dependency}")
    for published in services.get("haproxy", {}).get("ports", []):
        if not re.fullmatch(r"\d+:\d+", str(published)):
            fail(f"haproxy publishes {published!r}")
    # The configuration generated for the compose file's map is one HAProxy accepts.
    binary = os.environ.get("DAOGATE_BINARY") or os.path.join(ROOT, ".build/debug/daogate")
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([binary, "haproxy-config", "--modules", os.path.join(ROOT, "modules"), "--shard-map",
                        os.path.join(ROOT, "docker/shards/shards.json"), "--out", out,
                        "--runtime-socket", os.path.join(out, "admin.sock")], check=True)
        checked = subprocess.run(["haproxy", "-c", "-f", os.path.join(out, "haproxy.cfg")], capture_output=True, text=True)
        # The shards' host names resolve only on the compose network: let HAProxy say anything but a syntax error.
        if checked.returncode != 0 and "could not resolve address" not in checked.stdout + checked.stderr:
            fail(f"haproxy -c refuses the generated configuration: {checked.stdout}{checked.stderr}")
    print(f"compose: {len(services)} services, shards {sorted(names)} from {images}", flush=True)


if __name__ == "__main__":
    check_libraries()
    check_compose()
    if failures:
        sys.exit(1)
    print("containers: ok")
