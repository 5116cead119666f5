#!/usr/bin/env bash
# Local single-node Apache Kafka (KRaft) on 127.0.0.1, fetched from Maven Central.
#
#   ops/kafka/broker.sh start    fetch jars (cached), format fresh storage, start, wait until ready
#   ops/kafka/broker.sh stop     stop the broker started by `start` (by pid)
#   ops/kafka/broker.sh restart  stop it (if running) and start it again on the same port and
#                                data (tests of a broker outage; `start` would format fresh
#                                storage)
#   ops/kafka/broker.sh status   print the bootstrap address if running, exit 1 otherwise
#   ops/kafka/broker.sh fetch    only fetch the jars
#
# Settings (environment): KAFKA_VERSION (default 4.1.2; 3.9.x works too),
# STREAMFS_CACHE (jar cache, default <repo>/.cache), STREAMFS_RUN (pid, logs, data and the
# `bootstrap` file with host:port, default <repo>/.run/kafka), KAFKA_HEAP (default 768m),
# KAFKA_JVM_OPTS (more JVM options, space-separated; default -XX:TieredStopAtLevel=1, set it
# empty for the JVM's own tiered compilation).
#
# KAFKA_SASL_USERS="admin:pw user:pw ..." makes `start` a secured broker, as a production cluster
# is: the bootstrap address is a SASL_PLAINTEXT listener (mechanisms PLAIN and SCRAM-SHA-512)
# that knows these users, and ACLs are enforced (StandardAuthorizer; the first user is a super user, every other
# one may do only what ACLs allow). KAFKA_TLS=1 puts TLS on that listener (SASL_SSL; SSL
# without users), with a certificate for 127.0.0.1 signed by a CA made for it, whose
# certificate clients find in $STREAMFS_RUN/tls/ca.pem. The broker's own traffic uses a second,
# PLAINTEXT listener that only the broker itself is told about.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
version=${KAFKA_VERSION:-4.1.2}
cache=${STREAMFS_CACHE:-$repo/.cache}
libs="$cache/kafka-$version/libs"
run=${STREAMFS_RUN:-$repo/.run/kafka}
heap=${KAFKA_HEAP:-768m}

log() { echo "[kafka] $*" >&2; }

fetch() {
  if [ -f "$libs/.complete" ]; then return 0; fi
  log "fetching Apache Kafka $version from Maven Central into $libs"
  local extra=()
  case "$version" in 3.*) extra=(-Dreload4j) ;; esac
  rm -rf "$libs" && mkdir -p "$libs"
  # stdout carries only the bootstrap address (callers capture it): mvn's output goes to stderr,
  # without the colour resets Maven 3.8 prints even in batch mode with colours off
  mvn -q -B -Dstyle.color=never -f "$here/pom.xml" "${extra[@]}" -Dkafka.version="$version" \
    dependency:copy-dependencies -DoutputDirectory="$libs" -DincludeScope=runtime 2>&1 \
    | sed -e 's/\x1b\[[0-9;]*m//g' -e '/^$/d' >&2
  ls "$libs"/kafka_2.13-*.jar >/dev/null
  touch "$libs/.complete"
}

running_pid() {
  [ -f "$run/pid" ] || return 1
  local pid; pid=$(cat "$run/pid")
  kill -0 "$pid" 2>/dev/null && echo "$pid"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

start() {
  if pid=$(running_pid); then
    log "already running (pid $pid) at $(cat "$run/bootstrap")"
    cat "$run/bootstrap"; return 0
  fi
  fetch
  rm -rf "$run" && mkdir -p "$run/data"
  local port cport
  port=$(free_port); cport=$(free_port)
  while [ "$cport" = "$port" ]; do cport=$(free_port); done
  echo "$port" > "$run/port"
  {
    echo "process.roles=broker,controller"
    echo "node.id=1"
    echo "controller.quorum.voters=1@127.0.0.1:$cport"
    echo "controller.listener.names=CONTROLLER"
    echo "inter.broker.listener.name=PLAINTEXT"
    if [ -n "${KAFKA_SASL_USERS:-}${KAFKA_TLS:-}" ]; then listeners_secured "$port" "$cport"; else
      echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
      echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
      echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    fi
  } > "$run/server.properties"
  cat >> "$run/server.properties" <<PROPS
log.dirs=$run/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
log.cleaner.enable=true
message.max.bytes=16777216
PROPS
  cp "$here/log4j2.properties" "$run/log4j2.properties"
  cat > "$run/log4j.properties" <<'L4J'
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache=WARN
L4J
  jvm
  local cluster
  cluster=$("${JVM[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)
  local scram=() pair
  for pair in ${KAFKA_SASL_USERS:-}; do  # the same users for SCRAM, kept in the metadata log
    scram+=(--add-scram "SCRAM-SHA-512=[name=${pair%%:*},password=${pair#*:}]")
  done
  "${JVM[@]}" kafka.tools.StorageTool format -t "$cluster" -c "$run/server.properties" \
    "${scram[@]}" > "$run/format.log" 2>&1 || { cat "$run/format.log" >&2; exit 1; }
  launch
}

# The listeners of a secured broker: clients at $1, on SASL_PLAINTEXT, SASL_SSL or SSL (as
# KAFKA_SASL_USERS and KAFKA_TLS say); the broker to itself on an internal PLAINTEXT listener
# (as the super user ANONYMOUS, bound to 127.0.0.1 like the rest).
listeners_secured() {
  local iport proto listener jaas="" admin="" pair
  iport=$(free_port)
  while [ "$iport" = "$1" ] || [ "$iport" = "$2" ]; do iport=$(free_port); done
  case "${KAFKA_SASL_USERS:+sasl}-${KAFKA_TLS:-}" in
    sasl-1) proto=SASL_SSL ;; sasl-*) proto=SASL_PLAINTEXT ;; *) proto=SSL ;;
  esac
  listener=$(echo "$proto" | tr 'A-Z' 'a-z')
  echo "listeners=PLAINTEXT://127.0.0.1:$iport,$proto://127.0.0.1:$1,CONTROLLER://127.0.0.1:$2"
  echo "advertised.listeners=PLAINTEXT://127.0.0.1:$iport,$proto://127.0.0.1:$1"
  echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,$proto:$proto,CONTROLLER:PLAINTEXT"
  if [ -n "${KAFKA_SASL_USERS:-}" ]; then
    for pair in $KAFKA_SASL_USERS; do
      case "$pair" in *:*) ;; *) log "KAFKA_SASL_USERS: '$pair' is not user:password"; exit 2 ;; esac
      [ -n "$admin" ] || admin=${pair%%:*}
      jaas="$jaas user_${pair%%:*}=\"${pair#*:}\""
    done
    echo "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512"
    echo "listener.name.$listener.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$jaas;"
    echo "listener.name.$listener.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
    echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    echo "super.users=User:ANONYMOUS;User:$admin"
  fi
  if [ "${KAFKA_TLS:-}" = 1 ]; then
    tls_files
    echo "listener.name.$listener.ssl.keystore.type=PEM"
    echo "listener.name.$listener.ssl.keystore.location=$run/tls/broker-keystore.pem"
  fi
}

# A test CA (its certificate: $run/tls/ca.pem, what clients set as ssl.ca.location) and the
# broker's key and certificate for 127.0.0.1 signed by it, in one PEM keystore.
tls_files() {
  local tls="$run/tls"
  mkdir -p "$tls"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=streamfs test CA" \
    -keyout "$tls/ca.key" -out "$tls/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$tls/broker.key" -out "$tls/broker.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$tls/san.ext"
  openssl x509 -req -in "$tls/broker.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" \
    -CAcreateserial -days 30 -extfile "$tls/san.ext" -out "$tls/broker.pem" 2>/dev/null
  cat "$tls/broker.key" "$tls/broker.pem" > "$tls/broker-keystore.pem"
}

jvm() {
  # The client JIT only by default: on a 2-core machine the optimising compiler of a young
  # JVM took up to a core for minutes after start, from the worker and tests beside it
  # (0.09-0.41 s of C2 CPU within single 0.1-0.7 s bench backlogs; README, Evaluating).
  # shellcheck disable=SC2206  # split on purpose: one option per word
  JVM=(java "-Xmx$heap" "-Xms256m" -XX:+UseG1GC ${KAFKA_JVM_OPTS--XX:TieredStopAtLevel=1}
    "-Dlog4j2.configurationFile=$run/log4j2.properties"
    "-Dlog4j.configuration=file:$run/log4j.properties"
    -cp "$libs/*")
}


# Start the JVM on the configured, formatted data directory and wait until it serves.
launch() {
  jvm
  nohup "${JVM[@]}" kafka.Kafka "$run/server.properties" > "$run/broker.log" 2>&1 &
  echo $! > "$run/pid"
  local deadline=$((SECONDS + 120))
  until grep -q "Kafka Server started" "$run/broker.log" 2>/dev/null; do
    if ! kill -0 "$(cat "$run/pid")" 2>/dev/null; then
      log "broker exited during start-up; last lines of $run/broker.log:"; tail -n 30 "$run/broker.log" >&2; exit 1
    fi
    if [ $SECONDS -ge $deadline ]; then log "broker not ready after 120 s"; stop; exit 1; fi
    sleep 0.5
  done
  echo "127.0.0.1:$port" > "$run/bootstrap"
  log "Apache Kafka $version ready at 127.0.0.1:$port (pid $(cat "$run/pid"))"
  cat "$run/bootstrap"
}


# Stop (if running) and start again on the same data and port (tests: a broker restart
# mid-stream). The port comes from the `port` file (server.properties for a directory made
# before that file was): `stop` removes the bootstrap file.
restart() {
  [ -f "$run/server.properties" ] || { log "nothing to restart in $run: use start"; exit 1; }
  local port
  port=$(cat "$run/port" 2>/dev/null ||
         sed -n 's|^advertised.listeners=PLAINTEXT://.*:||p' "$run/server.properties")
  running_pid >/dev/null || log "not running: starting it again on 127.0.0.1:$port"
  stop
  launch
}

stop() {
  local pid
  if pid=$(running_pid); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
    log "stopped (pid $pid)"
  fi
  rm -f "$run/pid" "$run/bootstrap"
}

status() {
  if running_pid >/dev/null; then cat "$run/bootstrap"; else log "not running"; return 1; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  fetch) fetch ;;
  restart) restart ;;
  *) echo "usage: $0 start|stop|restart|status|fetch" >&2; exit 2 ;;
esac
