#!/usr/bin/env bash
# KAFKA_FOO_BAR=v -> foo.bar=v (as the official image does: "__" stands for "_", "___" for "-"),
# format the KRaft storage if it is new, then run the broker in the foreground.
set -euo pipefail
props=/opt/kafka/config/server.properties
data=/var/lib/kafka/data
: > "$props"
echo "log.dirs=$data" >> "$props"
while IFS='=' read -r name value; do
  case "$name" in
    KAFKA_HEAP_OPTS|KAFKA_OPTS|KAFKA_JVM_PERFORMANCE_OPTS|KAFKA_LOG4J_OPTS) continue ;;
    KAFKA_*) ;;
    *) continue ;;
  esac
  key=${name#KAFKA_}; key=${key,,}
  key=${key//___/-}; key=${key//__/@}; key=${key//_/.}; key=${key//@/_}
  echo "$key=$value" >> "$props"
done < <(env)

java_cmd=(java ${KAFKA_HEAP_OPTS:--Xmx768m -Xms256m} -XX:+UseG1GC
  -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties -cp '/opt/kafka/libs/*')
if [ ! -f "$data/meta.properties" ]; then
  cluster=${CLUSTER_ID:-$("${java_cmd[@]}" kafka.tools.StorageTool random-uuid | tail -n 1)}
  "${java_cmd[@]}" kafka.tools.StorageTool format -t "$cluster" -c "$props"
fi
# the health check (kafka-broker-api-versions.sh) reads this log for "Kafka Server started"
exec "${java_cmd[@]}" kafka.Kafka "$props" > >(tee /tmp/broker.log) 2>&1
