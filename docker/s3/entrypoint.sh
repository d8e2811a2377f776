#!/bin/sh
# docker/s3's entry point: `rclone serve s3` on port 9000 over /srv/s3, each folder there a bucket. As root (the
# image's default) it makes the folder the s3 user's (uid 10002) and the buckets named in S3_BUCKETS, then
# serves as that user. The credentials (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, or files named by
# S3_ACCESS_KEY_ID_FILE and S3_SECRET_ACCESS_KEY_FILE) reach rclone in its environment (RCLONE_AUTH_KEY), not
# on its command line. Arguments are rclone serve s3's own options, added.
set -e
for name in S3_ACCESS_KEY_ID S3_SECRET_ACCESS_KEY; do
    eval "file=\${${name}_FILE:-}"
    if [ -n "$file" ]; then
        if ! value=$(cat "$file"); then
            echo "s3-entrypoint: ${name}_FILE: cannot read $file" >&2
            exit 1
        fi
        export "$name=$value"
    fi
    eval "value=\${$name:-}"
    case "$value" in
        "") echo "s3-entrypoint: set $name or ${name}_FILE (the credentials callers sign with)" >&2; exit 1 ;;
        *[,\"]*) echo "s3-entrypoint: $name holds a comma or a double quote, which rclone's key list cannot" >&2; exit 1 ;;
    esac
done
# One access key and its secret; rclone reads a list from the variable, hence the quotes around the pair.
export RCLONE_AUTH_KEY="\"$S3_ACCESS_KEY_ID,$S3_SECRET_ACCESS_KEY\""
unset S3_ACCESS_KEY_ID S3_SECRET_ACCESS_KEY S3_ACCESS_KEY_ID_FILE S3_SECRET_ACCESS_KEY_FILE
as=""
if [ "$(id -u)" = 0 ]; then
    find /srv/s3 ! -user s3 -exec chown s3:s3 {} +
    as="setpriv --reuid=s3 --regid=s3 --init-groups --"
fi
for bucket in $S3_BUCKETS; do
    $as mkdir -p "/srv/s3/$bucket"
done
exec $as rclone serve s3 --addr :9000 --config /dev/null "$@" /srv/s3
