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

started_broker=0
worker_pid=""
cleanup() {
  if [ -n "$worker_pid" ] && kill -0 "$worker_pid" 2>/dev/null; then
    kill "$worker_pid"; wait "$worker_pid" 2>/dev/null || true
  fi
  if [ "$started_broker" = 1 ]; then bash ops/kafka/broker.sh stop; fi
}
trap cleanup EXIT

if ! bash ops/kafka/broker.sh status >/dev/null 2>&1; then started_broker=1; fi
export STREAMFS_BOOTSTRAP_SERVERS=$(bash ops/kafka/broker.sh start | tail -n 1)

$bin/streamfs topics create
$bin/streamfs worker --log-level warning > .run/demo-worker.log 2>&1 &
worker_pid=$!
# its /health answers 200 once it has its partitions (after loading or, on the first start
# after an install, compiling its kernels); a watch started before would warn, rightly, that
# no worker consumes yet
echo "starting the worker (its first start after an install compiles its kernels: a minute or two) ..."
for _ in $(seq 1 600); do
  if $bin/python -c 'import sys, urllib.request; urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=1)' \
       "$STREAMFS_WEB_PORT" 2>/dev/null; then
    break
  fi
  kill -0 "$worker_pid" 2>/dev/null \
    || { echo "the worker stopped; its log:"; tail -n 40 .run/demo-worker.log; exit 1; }
  sleep 0.5
done

$bin/streamfs produce features sklearn:breast_cancer --stream demo-breast-cancer \
  --algorithm saola --param test=fisher_z --param alpha=0.01 --block-bytes 20000
echo "waiting for the final selection of stream demo-breast-cancer ..."
$bin/streamfs watch demo-breast-cancer --until-final --timeout 180 > .run/demo-updates.txt \
  || { echo "no final selection; worker log:"; tail -n 40 .run/demo-worker.log; exit 1; }
echo "final selection, read back from ${STREAMFS_TOPIC_PREFIX}selected-features:"
$bin/streamfs watch demo-breast-cancer --once
