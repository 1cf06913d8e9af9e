#!/bin/sh
# Renders $NGINX_ENVSUBST_TEMPLATE_DIR/**/*.template into $NGINX_ENVSUBST_OUTPUT_DIR, substituting
# only the variables matching $NGINX_ENVSUBST_FILTER (NGINX's own $variables stay), then runs the
# command as PID 1. The checks of nginx/render.ts, in one message: every SG_ name a template uses
# must be set (empty counts), and no value may hold a quote or a line break. The image ships no
# secrets: a missing SG_SECRETS_FILE is named here. NGINX then runs under the secret-set watcher
# (sg-secret-sets run), which keeps the per-set files of /secret in step with the secrets file.
# The study's flat SECRETS JSON comes as a file (a Docker or Kubernetes secret at
# /run/secrets/flat-secrets, or SG_FLAT_SECRETS_FILE), never as a variable `docker inspect` shows;
# its content is exported as SECRETS to the watcher only, which publishes it as the default set.
set -eu

# An empty file (compose mounts /dev/null when no file is given) means "no flat secrets".
read_flat_secrets() {
  flat=${SG_FLAT_SECRETS_FILE:-/run/secrets/flat-secrets}
  [ -e "$flat" ] || return 0
  if [ ! -r "$flat" ]; then
    problems="${problems:+$problems; }flat secrets \"$flat\" cannot be read by uid $(id -u): make it readable by that user"
    return 0
  fi
  content=$(cat "$flat")
  [ -n "$content" ] || return 0
  if [ -n "${SECRETS:-}" ]; then
    problems="${problems:+$problems; }SECRETS is set and \"$flat\" holds flat secrets too: keep only the file"
    return 0
  fi
  SECRETS=$content
  export SECRETS
}

render() {
  templates=${NGINX_ENVSUBST_TEMPLATE_DIR:-/etc/nginx/templates}
  out=${NGINX_ENVSUBST_OUTPUT_DIR:-/tmp/nginx}
  filter=${NGINX_ENVSUBST_FILTER:-^SG_}
  used=$(find "$templates" -follow -type f -name '*.template' -exec cat {} + |
    grep -oE '\$\{?[A-Za-z_][A-Za-z0-9_]*' | tr -d '${' | sort -u)
  problems=$(printf '%s\n' "$used" | awk -v filter="$filter" '
    $0 ~ filter && !($0 in ENVIRON) { missing = missing " " $0 }
    END {
      for (name in ENVIRON) if (name ~ filter && ENVIRON[name] ~ /["\r\n]/) unsafe = unsafe " " name
      if (missing != "") print "missing NGINX variables:" missing
      if (unsafe != "") print "NGINX variables must not contain quotes or line breaks:" unsafe
    }')
  if [ -n "${SG_SECRETS_FILE:-}" ] && [ ! -r "$SG_SECRETS_FILE" ]; then
    problems="${problems:+$problems; }SG_SECRETS_FILE \"$SG_SECRETS_FILE\" cannot be read: mount the secrets file there"
  fi
  read_flat_secrets
  if [ -n "$problems" ]; then
    echo "sg-entrypoint: $problems" >&2
    exit 1
  fi
  defined=$(awk -v filter="$filter" 'BEGIN { for (name in ENVIRON) if (name ~ filter) printf "${%s} ", name }')
  cd "$templates"
  find . -follow -type f -name '*.template' | while read -r template; do
    target="$out/${template%.template}"
    mkdir -p "$(dirname "$target")"
    envsubst "$defined" <"$template" >"$target"
  done
  for dir in "${SG_RUN_DIR:-}" "${SG_TEMP_DIR:-}"; do
    [ -z "$dir" ] || mkdir -p "$dir"
  done
  cd /
}

case "${1:-}" in
  nginx | nginx-debug)
    render
    # The secret-set watcher publishes the sets before NGINX starts, then lives beside it.
    exec sg-secret-sets run "$@"
    ;;
esac
exec "$@"
