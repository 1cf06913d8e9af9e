#!/bin/bash
# Health probe of the NGINX image: GET PATH on the address SG_LISTEN names (a wildcard is asked
# over loopback) with bash's /dev/tcp, so the image needs no HTTP client. Exit 0 on a 2xx.
set -eu
# SG_LISTEN as the entrypoint sees it: the environment's, else nginx/settings.env's default.
sg_bin=$(dirname "$(command -v sg-render)")
. "$sg_bin/sg-settings"
listen=$SG_LISTEN
port=${listen##*:}
host=127.0.0.1
case "$listen" in
  *:*) host=${listen%:*} ;;
esac
case "$host" in
  '' | 0.0.0.0 | '*' | '[::]') host=127.0.0.1 ;;
esac
exec 3<>"/dev/tcp/$host/$port"
printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "${1:-/hello}" >&3
read -r -t 3 _ status _ <&3
[[ $status == 2?? ]]
