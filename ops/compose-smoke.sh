#!/usr/bin/env bash
# Run docker-compose.yml for real on a Docker engine and check what it computes.
#
#   ops/compose-smoke.sh [demo|scale|all]      (default all; `make compose-smoke`)
#
# demo:  `compose up` of the default services; waits for the downstream example's summary
#        (it must have trained on >0 instances) and for the final SAOLA and OFS selections,
#        and compares those with `streamfs select` on the same data.
# scale: profile "scale": three workers (`--scale worker=3`), 30 streams published at once
#        (ops/compose/scale.streams); one worker is SIGKILLed (`docker kill`) mid-stream and
#        started again; every stream's final selection must equal `streamfs select`'s.
#
# The offline `streamfs select` runs inside the streamfs image (same libraries as the worker),
# through ops/compose/streams.py. Everything is torn down (`down -v`) at the end, whatever
# happens; the exit code is non-zero on any failure.
#
# It installs nothing: it needs a running engine (DOCKER_HOST or the default socket; README,
# "Docker", says how to install and start one from Debian packages) and Compose v2
# (`docker compose`) or v1.29 (`docker-compose`). Images: python:3.11-slim and apache/kafka are
# pulled if a registry answers; otherwise stand-ins are built from local files
# (ops/standins/build.sh: a debootstrap Debian rootfs, the Maven Central Kafka jars of
# ops/kafka/broker.sh) and tagged with the official names. Images already present are reused.
#
# Settings: STREAMFS_COMPOSE_PROJECT (default streamfs-smoke), STREAMFS_COMPOSE (the compose
# command, e.g. "docker-compose" to run v1 where v2 is installed), STREAMFS_CACHE (Kafka jar cache,
# as for broker.sh), STREAMFS_BUILD_CA_BUNDLE (CA bundle pip trusts while building the image,
# default the host's /etc/ssl/certs/ca-certificates.crt if present; "" for none).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
mode=${1:-all}
case "$mode" in demo|scale|all) ;; *) echo "usage: $0 [demo|scale|all]" >&2; exit 2 ;; esac
project=${STREAMFS_COMPOSE_PROJECT:-streamfs-smoke}
kafka_version=$(sed -n 's/^version=\${KAFKA_VERSION:-\([^}]*\)}$/\1/p' ops/kafka/broker.sh)
started=$SECONDS

log() { printf '[compose-smoke %4ds] %s\n' $((SECONDS - started)) "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }
# any other failing command (set -e) says where it was
set -E
trap 'log "FAILED (exit $?) at line $LINENO: $BASH_COMMAND"' ERR
# run a phase and log how long it took
timed() {
  local what=$1 t=$SECONDS; shift
  log "$what ..."
  "$@"
  log "$what: done in $((SECONDS - t)) s"
}

# --- engine and compose -------------------------------------------------------------------

docker info >/dev/null 2>&1 \
  || die "no Docker engine answers (DOCKER_HOST=${DOCKER_HOST:-unset}); see README, Docker"
if [ -n "${STREAMFS_COMPOSE:-}" ]; then
  read -r -a compose <<<"$STREAMFS_COMPOSE"
elif docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose=(docker-compose)
else
  die "neither \`docker compose\` (v2) nor \`docker-compose\` (v1.29) is installed"
fi
log "engine $(docker version --format '{{.Server.Version}}'), compose" \
    "$("${compose[@]}" version --short 2>/dev/null || "${compose[@]}" version | sed -n 1p)" \
    "(${compose[*]}), project $project"
dc() { "${compose[@]}" -p "$project" -f docker-compose.yml "$@"; }
# the scale profile's services exist for this one only (`up` without it starts the demo)
dcs() { dc --profile scale "$@"; }
# a one-off container of the streamfs image on the project's network
streams() { dc run --rm --no-deps -T --entrypoint python watch ops/compose/streams.py "$@"; }
# -a: Compose v2 lists only running containers without it; sed, not head, reads the whole
# list (head would close the pipe early: SIGPIPE, a failure under pipefail)
cid() { dcs ps -a -q "$1" | sed -n 1p; }

teardown() {
  local rc=$?
  if [ "$rc" != 0 ]; then
    log "last log lines of the project's containers:"
    dcs logs --no-color --tail 25 >&2 2>/dev/null || true
  fi
  local t=$SECONDS
  dcs down -v --remove-orphans >/dev/null 2>&1 || true
  log "down -v in $((SECONDS - t)) s; total $((SECONDS - started)) s; exit $rc"
}

# --- images -------------------------------------------------------------------------------

# TAG KIND: reuse, else pull (60 s at most), else build the stand-in
ensure_image() {
  local tag=$1 kind=$2 standin
  if docker image inspect "$tag" >/dev/null 2>&1; then
    standin=$(docker image inspect -f '{{index .Config.Labels "org.streamfs.standin"}}' "$tag")
    log "image $tag present${standin:+ (stand-in: $standin)}"
    return 0
  fi
  if timeout 60 docker pull -q "$tag" >/dev/null 2>&1; then
    log "image $tag pulled (official)"
    return 0
  fi
  log "official image $tag not pullable; building a stand-in from local files"
  if [ "$kind" = kafka ]; then
    KAFKA_VERSION=$kafka_version bash ops/kafka/broker.sh fetch
    local libs="${STREAMFS_CACHE:-$PWD/.cache}/kafka-$kafka_version/libs"
    bash ops/standins/build.sh kafka "$tag" "$libs"
  else
    bash ops/standins/build.sh python "$tag"
  fi
}

# The streamfs image, rebuilt every run (layer cache: a code change costs seconds). pip in the
# build stage trusts the host's CA bundle through a throw-away base image; the final image is
# FROM python:3.11-slim with the virtualenv copied in, so the bundle never reaches it.
build_streamfs() {
  local ca=${STREAMFS_BUILD_CA_BUNDLE-/etc/ssl/certs/ca-certificates.crt} base=python:3.11-slim
  if [ -n "$ca" ] && [ -f "$ca" ]; then
    local ctx; ctx=$(mktemp -d)
    cp "$ca" "$ctx/ca.pem"
    printf '%s\n' "FROM python:3.11-slim" "COPY ca.pem /etc/streamfs-build-ca.pem" \
      "ENV PIP_CERT=/etc/streamfs-build-ca.pem" > "$ctx/Dockerfile"
    docker build -q -t streamfs-build-base:smoke "$ctx" >/dev/null 2>"$ctx/err" \
      || { cat "$ctx/err" >&2; rm -rf "$ctx"; return 1; }
    rm -rf "$ctx"
    base=streamfs-build-base:smoke
    log "pip in the build stage trusts $ca"
  fi
  local out; out=$(mktemp)
  docker build -f ops/Dockerfile -t streamfs:latest --build-arg BUILD_BASE=$base . >"$out" 2>&1 \
    || { tail -n 30 "$out" >&2; rm -f "$out"; return 1; }
  rm -f "$out"
}

# --- checks -------------------------------------------------------------------------------

# SERVICE TIMEOUT: wait until the (first) container of SERVICE has exited; print its exit code
wait_exit() {
  local id deadline=$((SECONDS + $2))
  id=$(cid "$1")
  [ -n "$id" ] || die "no container for service $1"
  until [ "$(docker inspect -f '{{.State.Status}}' "$id")" = exited ]; do
    [ $SECONDS -lt $deadline ] || die "$1 still running after $2 s"
    sleep 2
  done
  docker inspect -f '{{.State.ExitCode}}' "$id"
}

# one-shot and CLI services must not carry the worker's health check (the image's HEALTHCHECK)
check_health_checks() {
  local service id state
  for service in "$@"; do
    id=$(cid "$service")
    state=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$id")
    [ -z "$state" ] || die "$service has a health check (status $state); it should be disabled"
  done
  log "health checks: only kafka and worker have one ($*: none)"
}

run_demo() {
  dcs down -v --remove-orphans >/dev/null 2>&1 || true
  timed "demo: up -d (kafka, topics, worker, producers, watch, downstream)" \
    dc up -d --no-build >/dev/null
  local rc summary instances trained port health
  rc=$(wait_exit downstream 600)
  summary=$(docker logs "$(cid downstream)" 2>&1 | grep '^summary:' | tail -n 1 || true)
  log "downstream exited $rc: ${summary:-no summary}"
  [ "$rc" = 0 ] || die "the downstream example exited $rc"
  instances=$(sed -n 's/^summary: \([0-9]*\) instances.*/\1/p' <<<"$summary")
  trained=$(sed -n 's/.*model trained on \([0-9]*\);.*/\1/p' <<<"$summary")
  [ "${instances:-0}" -gt 0 ] && [ "${trained:-0}" -gt 0 ] \
    || die "the downstream model saw ${instances:-?} instances and trained on ${trained:-?}"
  for service in producer instance-producer; do
    rc=$(wait_exit "$service" 300)
    [ "$rc" = 0 ] || die "$service exited $rc"
  done
  port=$(dc port worker 6066)
  health=$(curl -fsS "http://$port/health")
  log "worker /health on the host at $port: ${health:0:120}..."
  check_health_checks topics producer instance-producer watch downstream
  timed "demo: final selections vs streamfs select" \
    streams check ops/compose/demo.streams --timeout 300
  timed "demo: down -v" dcs down -v --remove-orphans >/dev/null 2>&1
}

run_scale() {
  dcs down -v --remove-orphans >/dev/null 2>&1 || true
  timed "scale: up -d --scale worker=3 (kafka, topics, 3 workers, scale-producer)" \
    dcs up -d --no-build --scale worker=3 kafka topics worker scale-producer >/dev/null
  local workers; workers=$(dc ps -q worker | wc -l)
  [ "$workers" = 3 ] || die "expected 3 worker containers, found $workers"
  # kill one worker once a few streams have results and before they are all final
  local with final total victim deadline=$((SECONDS + 300))
  while :; do
    read -r with final total < <(streams progress ops/compose/scale.streams)
    [ "$with" -ge 5 ] && break
    [ $SECONDS -lt $deadline ] || die "fewer than 5 streams with results after 300 s"
    sleep 1
  done
  victim=$(cid worker)
  [ "$final" -lt "$total" ] || die "all $total streams were final before the kill: not mid-stream"
  log "worker ${victim:0:12} before the kill: $(docker logs "$victim" 2>&1 | grep -o 'assigned [0-9]* partitions' | tail -n 1 || true)"
  docker kill "$victim" >/dev/null  # SIGKILL
  log "killed worker ${victim:0:12} (SIGKILL): $with/$total streams had results, $final final"
  sleep 5
  docker start "$victim" >/dev/null
  log "started worker ${victim:0:12} again"
  local rc; rc=$(wait_exit scale-producer 600)
  [ "$rc" = 0 ] || die "scale-producer exited $rc"
  log "scale-producer: $(docker logs "$(cid scale-producer)" 2>&1 | grep '^published' | tail -n 1 || true)"
  timed "scale: 30 final selections vs streamfs select" \
    streams check ops/compose/scale.streams --timeout 600
  log "worker restarts: $(for id in $(dc ps -q worker); do docker inspect -f '{{.Name}} {{.RestartCount}} {{.State.Status}}' "$id"; done | tr '\n' ';')"
  timed "scale: down -v" dcs down -v --remove-orphans >/dev/null 2>&1
}

trap teardown EXIT
timed "image python:3.11-slim" ensure_image python:3.11-slim python
timed "image apache/kafka:$kafka_version" ensure_image "apache/kafka:$kafka_version" kafka
timed "image streamfs:latest (ops/Dockerfile)" build_streamfs
case "$mode" in
  demo) timed "demo" run_demo ;;
  scale) timed "scale" run_scale ;;
  all) timed "demo" run_demo; timed "scale" run_scale ;;
esac
log "PASSED ($mode)"
