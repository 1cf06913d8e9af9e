#!/bin/sh
# secret-gate: the NGINX image's entrypoint. Loads the SG_ defaults (nginx/settings.env), renders
# $NGINX_ENVSUBST_TEMPLATE_DIR into the prefix $NGINX_ENVSUBST_OUTPUT_DIR with nginx/bin/sg-render (the one place of the checks on the SG_
# values, which `npm start` runs too; the image ships no secrets, so a missing SG_SECRETS_FILE is
# named there), then runs the command as PID 1: NGINX under the secret-set watcher
# (sg-secret-sets run), which keeps the per-set files of /secret in step with the secrets file
# and, with SG_POLICY_FILE, NGINX's named sets in step with the verifier's policy file.
# The study's flat SECRETS JSON comes as a file (a Docker or Kubernetes secret at
# /run/secrets/flat-secrets, or SG_FLAT_SECRETS_FILE), never as a variable `docker inspect` shows;
# its content is exported as SECRETS to the watcher only, which publishes it as the default set.
set -eu
# The defaults of /etc/nginx/settings.env (nginx/settings.env) for every SG_ name not set, for
# sg-render and the watcher alike.
sg_bin=$(dirname "$(command -v sg-render)")
. "$sg_bin/sg-settings"

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
  # The watcher renders the same way again when the named sets of SG_POLICY_FILE change.
  NGINX_ENVSUBST_TEMPLATE_DIR=$templates
  NGINX_ENVSUBST_OUTPUT_DIR=$out
  export NGINX_ENVSUBST_TEMPLATE_DIR NGINX_ENVSUBST_OUTPUT_DIR
  problems=''
  read_flat_secrets
  if [ -n "$problems" ]; then
    echo "sg-entrypoint: $problems" >&2
    exit 1
  fi
  # The checks on the SG_ values and the rendering: the same script as `npm start`'s.
  sg-render "$templates" "$out"
  # The container's logs are its stdout and stderr.
  ln -sf /dev/stdout "$out/logs/access.log"
  ln -sf /dev/stderr "$out/logs/error.log"
}

case "${1:-}" in
  nginx | nginx-debug)
    render
    # The secret-set watcher publishes the sets before NGINX starts, then lives beside it.
    exec sg-secret-sets run "$@"
    ;;
esac
exec "$@"
