#!/usr/bin/env bash
# Stand-ins for the two public images the compose file names, built from local files where no
# container registry is reachable. Each stand-in is tagged with the official name, so
# docker-compose.yml and ops/Dockerfile are used unchanged, and labelled
# org.streamfs.standin=<what it is> so a later run (or a person) can tell it is not the real one.
#
#   ops/standins/build.sh python python:3.11-slim
#       Debian bookworm (debootstrap) + python3, python3-venv, python3-pip. Bookworm's
#       python3 is 3.11, the version of the official image.
#   ops/standins/build.sh kafka apache/kafka:4.1.2 LIBS_DIR
#       Debian bookworm + openjdk-17-jre-headless + the Kafka jars `ops/kafka/broker.sh fetch`
#       downloads from Maven Central, with an entrypoint that reads KAFKA_* variables the way
#       the official image does.
#
# Both start from one Debian base (streamfs-standin/debian:bookworm), made once by debootstrap
# (about 70 s) and reused. Needs root, debootstrap and a reachable Debian mirror.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
base=streamfs-standin/debian:bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { echo "[standins] $*" >&2; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

debian_base() {
  have_image "$base" && return 0
  command -v debootstrap >/dev/null || { log "debootstrap is not installed (apt-get install debootstrap)"; exit 1; }
  local rootfs; rootfs=$(mktemp -d)
  log "debootstrap bookworm into $rootfs (minbase, $mirror)"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 \
    || { tail -n 20 "$rootfs.log" >&2; rm -rf "$rootfs" "$rootfs.log"; exit 1; }
  # apt lists are fetched again by the builds below; keep the image small
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
  tar -C "$rootfs" -c . | docker import \
    --change 'LABEL org.streamfs.standin="Debian bookworm rootfs (debootstrap)"' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
    --change 'CMD ["bash"]' - "$base" >/dev/null
  rm -rf "$rootfs" "$rootfs.log"
  log "imported $base"
}

case "${1:-}" in
  python)
    tag=${2:?tag}
    debian_base
    docker build -q -t "$tag" --build-arg BASE="$base" "$here/python" >/dev/null
    log "built $tag (stand-in: Debian bookworm python3 $(docker run --rm "$tag" python --version 2>&1 | cut -d' ' -f2))"
    ;;
  kafka)
    tag=${2:?tag} libs=${3:?libs dir}
    [ -f "$libs/.complete" ] || { log "no complete jar cache in $libs (run ops/kafka/broker.sh fetch)"; exit 1; }
    debian_base
    # the build context: the stand-in's files plus a hard-linked (or copied) set of jars
    ctx=$(mktemp -d)
    trap 'rm -rf "$ctx"' EXIT
    cp "$here"/kafka/* "$here"/../kafka/log4j2.properties "$ctx"/
    mkdir "$ctx/libs" && { cp -l "$libs"/*.jar "$ctx/libs"/ 2>/dev/null || cp "$libs"/*.jar "$ctx/libs"/; }
    docker build -q -t "$tag" --build-arg BASE="$base" "$ctx" >/dev/null
    log "built $tag (stand-in: Debian bookworm, OpenJDK 17, $(ls "$ctx"/libs/kafka_2.13-*.jar | xargs -n1 basename))"
    ;;
  *) echo "usage: $0 python TAG | kafka TAG LIBS_DIR" >&2; exit 2 ;;
esac
