#!/bin/sh
# The image's entry point: `daogate ARGUMENTS…` (`serve` when none are given).
#
# `serve` started as root (the image's default) first makes the data folder the daogate user's — a named
# volume is already, a folder of the host's bind-mounted there is not — and then runs as that user (uid
# 10001), never as root. Started with --user (Kubernetes' runAsUser, `docker run --user`), it runs as that
# user and leaves the folder as it is. Every other command (haproxy-config, move-bucket, backup, restore, check,
# …) runs as the container's user: give `--user "$(id -u):$(id -g)"` to write files that are yours.
#
# Replication: with DAOGATE_REPLICA set (s3://BUCKET/PATH?endpoint=…, file:///PATH), `serve` runs under
# Litestream, which replicates every database of the data folder there. `daogate litestream-config` writes
# Litestream's configuration at each start into DAOGATE_LITESTREAM_CONFIG (default
# /tmp/daogate-litestream.yml), then `litestream replicate -config FILE -exec "daogate serve …"` runs, as the same
# user: Litestream starts daogate, passes it SIGTERM, waits for it to drain, then ships what is left and exits.
# DAOGATE_LITESTREAM_CONFIG without DAOGATE_REPLICA runs Litestream with that file, yours, as it is. Users'
# files are in WAL then (Litestream replicates WAL databases only): DAOGATE_USER_JOURNAL is set to wal, and
# any other value stops the start.
#
# S3 credentials are Litestream's variables, LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY (or
# AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); for secrets mounted as files, NAME_FILE names the file whose
# content becomes NAME, for every command (`restore` and `failover` read them too).
set -e
if [ "$#" -eq 0 ]; then set -- serve; fi
for name in LITESTREAM_ACCESS_KEY_ID LITESTREAM_SECRET_ACCESS_KEY AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY; do
    eval "file=\${${name}_FILE:-}"
    if [ -n "$file" ]; then
        if ! value=$(cat "$file"); then
            echo "daogate-entrypoint: ${name}_FILE: cannot read $file" >&2
            exit 1
        fi
        export "$name=$value"
        unset "${name}_FILE"
    fi
done
if [ "$1" != serve ]; then exec daogate "$@"; fi

as=""
if [ "$(id -u)" = 0 ]; then
    data="${DAOGATE_DATA:-/srv/data}"
    mkdir -p "$data"
    find "$data" ! -user daogate -exec chown daogate:daogate {} +
    as="setpriv --reuid=daogate --regid=daogate --init-groups --"
fi
if [ -z "${DAOGATE_REPLICA:-}" ] && [ -z "${DAOGATE_LITESTREAM_CONFIG:-}" ]; then
    exec $as daogate "$@"
fi

if [ "${DAOGATE_USER_JOURNAL:-wal}" != wal ]; then
    echo "daogate-entrypoint: Litestream replicates WAL databases only: DAOGATE_USER_JOURNAL must be wal (or unset) with DAOGATE_REPLICA or DAOGATE_LITESTREAM_CONFIG, not $DAOGATE_USER_JOURNAL" >&2
    exit 1
fi
export DAOGATE_USER_JOURNAL=wal
config="${DAOGATE_LITESTREAM_CONFIG:-/tmp/daogate-litestream.yml}"
if [ -n "${DAOGATE_REPLICA:-}" ]; then
    $as daogate litestream-config --data "${DAOGATE_DATA:-/srv/data}" --replica "$DAOGATE_REPLICA" --out "$config"
fi
# -exec is one string that Litestream splits as a shell would (go-shellwords): each argument single-quoted.
command=""
for word in daogate "$@"; do
    command="$command '$(printf '%s' "$word" | sed "s/'/'\\\\''/g")'"
done
exec $as litestream replicate -config "$config" -exec "$command"
