#!/bin/bash
# Health probe of the NGINX image: GET PATH on the address SG_LISTEN names (a wildcard is asked
# over loopback) with bash's /dev/tcp, so the image needs no HTTP client. Exit 0 on a 2xx.
set -eu
listen=${SG_LISTEN:-8080}
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
