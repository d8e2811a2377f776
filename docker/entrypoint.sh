#!/bin/sh
# The image's entry point: `daogate ARGUMENTS…` (`serve` when none are given).
#
# `serve` started as root (the image's default) first makes the data folder the daogate user's — a named
# volume is already, a folder of the host's bind-mounted there is not — and then runs as that user (uid
# 10001), never as root. Started with --user (Kubernetes' runAsUser, `docker run --user`), it runs as that
# user and leaves the folder as it is. Every other command (haproxy-config, move-bucket, backup, check, …)
# runs as the container's user: give `--user "$(id -u):$(id -g)"` to write files that are yours.
set -e
if [ "$#" -eq 0 ]; then set -- serve; fi
if [ "$1" = serve ] && [ "$(id -u)" = 0 ]; then
    data="${DAOGATE_DATA:-/srv/data}"
    mkdir -p "$data"
    find "$data" ! -user daogate -exec chown daogate:daogate {} +
    exec setpriv --reuid=daogate --regid=daogate --init-groups -- daogate "$@"
fi
exec daogate "$@"
