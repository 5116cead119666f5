#!/usr/bin/env bash
# Stand-in for the official image's tool, used by the compose health check: the jars that
# `ops/kafka/broker.sh fetch` caches do not include kafka-tools. Healthy means the broker
# logged that it started and its listener accepts connections (arguments are ignored).
grep -q "Kafka Server started" /tmp/broker.log 2>/dev/null && exec 3<>/dev/tcp/127.0.0.1/9092
