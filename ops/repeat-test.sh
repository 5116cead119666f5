#!/usr/bin/env bash
# Run one test (a pytest node id) N times in a row against one broker and count the passes:
#   bash ops/repeat-test.sh 20 tests/worker/test_exactly_once.py::test_two_one_three_workers_with_kills_during_rebalances
# Exits non-zero unless every run passed. Logs of failed runs go to .run/repeat/ (pytest's
# output in run-N.log, the workers' logs under tmp-N/).
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: $0 N NODE_ID}
node=${2:?usage: $0 N NODE_ID}
mkdir -p .run/repeat
export STREAMFS_RUN=${STREAMFS_RUN:-$PWD/.run/repeat/kafka}
started=0
if [ -z "${STREAMFS_BOOTSTRAP_SERVERS:-}" ]; then
  STREAMFS_BOOTSTRAP_SERVERS=$(bash ops/kafka/broker.sh start | tail -n 1); started=1
  export STREAMFS_BOOTSTRAP_SERVERS
fi
trap '[ "$started" = 1 ] && bash ops/kafka/broker.sh stop' EXIT
passed=0
for i in $(seq 1 "$n"); do
  t0=$SECONDS
  rm -rf ".run/repeat/tmp-$i"
  if .venv/bin/pytest -q -p no:cacheprovider --basetemp=".run/repeat/tmp-$i" "$node" \
      > ".run/repeat/run-$i.log" 2>&1; then
    passed=$((passed + 1)); rm -rf ".run/repeat/run-$i.log" ".run/repeat/tmp-$i"; verdict=passed
  else
    verdict="FAILED (logs: .run/repeat/run-$i.log, .run/repeat/tmp-$i/)"
  fi
  echo "run $i/$n: $verdict in $((SECONDS - t0)) s"
done
echo "$passed of $n runs passed"
[ "$passed" = "$n" ]
