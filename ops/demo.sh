#!/usr/bin/env bash
# End-to-end demo: local Apache Kafka -> `streamfs worker` -> SAOLA on scikit-learn's bundled
# breast-cancer data streamed as features -> final selection read back from the
# selected-features topic. Stops everything it started, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.venv/bin
export STREAMFS_RUN=${STREAMFS_RUN:-$PWD/.run/demo-kafka}
export STREAMFS_TOPIC_PREFIX="demo-$(date +%s)."
export STREAMFS_APP_ID="streamfs-demo-$(date +%s)"
export STREAMFS_WEB_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# the worker's local state copies: this run's own, removed with it
export STREAMFS_DATA_DIR=$(mktemp -d -t streamfs-demo-state.XXXXXX)
# the demo's logs, kept after it for a look (STREAMFS_RUN may lie anywhere)
logs=.run
mkdir -p "$logs"

started_broker=0
worker_pid=""
cleanup() {
  if [ -n "$worker_pid" ] && kill -0 "$worker_pid" 2>/dev/null; then
    kill "$worker_pid"; wait "$worker_pid" 2>/dev/null || true
  fi
  if [ "$started_broker" = 1 ]; then
    bash ops/kafka/broker.sh stop
  elif [ -n "${STREAMFS_BOOTSTRAP_SERVERS:-}" ]; then
    # a broker that was running before (and goes on): drop this run's topics from it
    $bin/python - <<'PY' || true
import os
from confluent_kafka.admin import AdminClient
admin = AdminClient({"bootstrap.servers": os.environ["STREAMFS_BOOTSTRAP_SERVERS"]})
mine = [t for t in admin.list_topics(timeout=10).topics
        if t.startswith((os.environ["STREAMFS_TOPIC_PREFIX"], os.environ["STREAMFS_APP_ID"] + "-"))]
for future in (admin.delete_topics(mine).values() if mine else []):
    future.result(30)
PY
  fi
  rm -rf "$STREAMFS_DATA_DIR"
}
trap cleanup EXIT

if ! bash ops/kafka/broker.sh status >/dev/null 2>&1; then started_broker=1; fi
export STREAMFS_BOOTSTRAP_SERVERS=$(bash ops/kafka/broker.sh start | tail -n 1)

$bin/streamfs topics create
$bin/streamfs worker --log-level warning > "$logs/demo-worker.log" 2>&1 &
worker_pid=$!
# its /health answers 200 once it has its partitions (after loading or, on the first start
# after an install, compiling its kernels); a watch started before would warn, rightly, that
# no worker consumes yet
echo "starting the worker (its first start after an install compiles its kernels: a minute or two) ..."
ready=0
for _ in $(seq 1 600); do
  if $bin/python -c 'import sys, urllib.request; urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=1)' \
       "$STREAMFS_WEB_PORT" 2>/dev/null; then
    ready=1
    break
  fi
  kill -0 "$worker_pid" 2>/dev/null \
    || { echo "the worker stopped; its log:"; tail -n 40 "$logs/demo-worker.log"; exit 1; }
  sleep 0.5
done
[ "$ready" = 1 ] \
  || { echo "the worker was not ready after 5 minutes; its log:"; tail -n 40 "$logs/demo-worker.log"; exit 1; }

$bin/streamfs produce features sklearn:breast_cancer --stream demo-breast-cancer \
  --algorithm saola --param test=fisher_z --param alpha=0.01 --block-bytes 20000
echo "waiting for the final selection of stream demo-breast-cancer ..."
$bin/streamfs watch demo-breast-cancer --until-final --timeout 180 > "$logs/demo-updates.txt" \
  || { echo "no final selection; worker log:"; tail -n 40 "$logs/demo-worker.log"; exit 1; }
echo "final selection, read back from ${STREAMFS_TOPIC_PREFIX}selected-features:"
$bin/streamfs watch demo-breast-cancer --once
