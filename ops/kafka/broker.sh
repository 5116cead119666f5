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
#   ops/kafka/broker.sh kill-node I   SIGKILL node I of a cluster (a crashed broker)
#   ops/kafka/broker.sh stop-node I   stop node I of a cluster (SIGTERM: a controlled shutdown)
#   ops/kafka/broker.sh start-node I  start node I of a cluster again, on its port and data
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
# PLAINTEXT listener that only the broker itself is told about. KAFKA_TLS=mutual also requires
# a client certificate signed by that CA (mutual TLS: ssl.client.auth=required); with
# KAFKA_TLS_USERS="admin user ..." `start` makes one for each user ($STREAMFS_RUN/tls/<user>.pem
# and <user>.key, subject CN=<user>), and a client without SASL is the user its certificate's CN
# names, with ACLs enforced as for KAFKA_SASL_USERS (the first user a super user).
# KAFKA_TLS_SAN sets the names the broker's certificate holds (default
# "IP:127.0.0.1,DNS:localhost", the names clients connect by; another makes it one that
# clients refuse, as a certificate made for other host names is).
# KAFKA_OAUTHBEARER=1 (with KAFKA_SASL_USERS) also takes SASL/OAUTHBEARER at that listener,
# with Kafka's default validator: unsigned JWTs, their "sub" the principal (tests only).
#
# KAFKA_NODES=3 makes `start` a cluster of three nodes (each a broker and a KRaft controller,
# one JVM each, in $STREAMFS_RUN/node-1..3): the internal topics are replicated to all three
# with min.insync.replicas 2, and the bootstrap file lists every node's address. `stop`,
# `restart` and `status` act on every node; kill-node, stop-node and start-node on one. Not
# combined with KAFKA_SASL_USERS or KAFKA_TLS.
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

# The nodes of the run directory (1 unless `start` made a cluster) and where node $1 keeps its
# pid, port, log and data: the run directory itself for a single node, as it always has.
nodes() { cat "$run/nodes" 2>/dev/null || echo 1; }
node_dir() { if [ "$(nodes)" = 1 ]; then echo "$run"; else echo "$run/node-$1"; fi; }

running_pid() {  # $1: a node's directory
  [ -f "$1/pid" ] || return 1
  local pid; pid=$(cat "$1/pid")
  kill -0 "$pid" 2>/dev/null && echo "$pid"
}

any_running() {
  local i
  for i in $(seq 1 "$(nodes)"); do running_pid "$(node_dir "$i")" >/dev/null && return 0; done
  return 1
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# $1 distinct free ports, one a line
free_ports() {
  local -a got=() ; local p
  while [ "${#got[@]}" -lt "$1" ]; do
    p=$(free_port)
    case " ${got[*]} " in *" $p "*) ;; *) got+=("$p") ;; esac
  done
  printf '%s\n' "${got[@]}"
}

start() {
  local n=${KAFKA_NODES:-1}
  if ! [[ "$n" =~ ^[1-9]$ ]]; then log "KAFKA_NODES: '$n' is not a number of nodes from 1 to 9"; exit 2; fi
  if [ "$n" != 1 ] && [ -n "${KAFKA_SASL_USERS:-}${KAFKA_TLS:-}" ]; then
    log "KAFKA_NODES=$n: a cluster is started without security (unset KAFKA_SASL_USERS and KAFKA_TLS)"; exit 2
  fi
  case "${KAFKA_TLS:-}" in
    ''|1|mutual) ;; *) log "KAFKA_TLS: '$KAFKA_TLS' is not 1 (TLS) or mutual (TLS with client certificates)"; exit 2 ;;
  esac
  if [ -n "${KAFKA_TLS_USERS:-}" ] && [ "${KAFKA_TLS:-}" != mutual ]; then
    log "KAFKA_TLS_USERS: client certificates are for KAFKA_TLS=mutual"; exit 2
  fi
  if [ -n "${KAFKA_OAUTHBEARER:-}" ] && [ -z "${KAFKA_SASL_USERS:-}" ]; then
    log "KAFKA_OAUTHBEARER: needs KAFKA_SASL_USERS (the SASL listener, and its super user)"; exit 2
  fi
  local user
  for user in ${KAFKA_TLS_USERS:-}; do
    case "$user" in *[!A-Za-z0-9._-]*) log "KAFKA_TLS_USERS: '$user' is not a user name (letters, digits, . _ -)"; exit 2 ;; esac
  done
  if any_running; then
    log "already running at $(cat "$run/bootstrap")"
    cat "$run/bootstrap"; return 0
  fi
  # the run directory is wiped for a fresh broker: only one this script made (its nodes file)
  # or an empty one, never whatever STREAMFS_RUN names ($HOME, a shared directory)
  if [ -d "$run" ] && [ ! -f "$run/nodes" ] && [ -n "$(ls -A "$run")" ]; then
    log "STREAMFS_RUN=$run: not empty and not a run directory of this script (no 'nodes' file); name a new or empty directory"
    exit 2
  fi
  fetch
  rm -rf "$run" && mkdir -p "$run"
  echo "$n" > "$run/nodes"
  local -a ports
  mapfile -t ports < <(free_ports $((2 * n)))
  local i voters="" isr=$((n < 2 ? n : 2))
  for i in $(seq 1 "$n"); do voters="$voters${voters:+,}$i@127.0.0.1:${ports[n + i - 1]}"; done
  for i in $(seq 1 "$n"); do
    local d port=${ports[i - 1]} cport=${ports[n + i - 1]}
    d=$(node_dir "$i")
    mkdir -p "$d/data"
    echo "$port" > "$d/port"
    {
      echo "process.roles=broker,controller"
      echo "node.id=$i"
      echo "controller.quorum.voters=$voters"
      echo "controller.listener.names=CONTROLLER"
      echo "inter.broker.listener.name=PLAINTEXT"
      if [ -n "${KAFKA_SASL_USERS:-}${KAFKA_TLS:-}" ]; then listeners_secured "$port" "$cport"; else
        echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
        echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
        echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
      fi
    } > "$d/server.properties"
    cat >> "$d/server.properties" <<PROPS
log.dirs=$d/data
num.partitions=1
default.replication.factor=$n
offsets.topic.replication.factor=$n
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=$n
transaction.state.log.min.isr=$isr
share.coordinator.state.topic.replication.factor=$n
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
log.cleaner.enable=true
message.max.bytes=16777216
PROPS
  done
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
  if ! cluster=$("${JVM[@]}" kafka.tools.StorageTool random-uuid 2> "$run/uuid.log" | tail -n 1) \
      || [ -z "$cluster" ]; then
    log "java could not run Kafka's StorageTool ($(java -version 2>&1 | head -n 1 || echo 'no java on PATH')):"
    cat "$run/uuid.log" >&2
    exit 1
  fi
  local scram=() pair
  for pair in ${KAFKA_SASL_USERS:-}; do  # the same users for SCRAM, kept in the metadata log
    scram+=(--add-scram "SCRAM-SHA-512=[name=${pair%%:*},password=${pair#*:}]")
  done
  for i in $(seq 1 "$n"); do
    d=$(node_dir "$i")
    "${JVM[@]}" kafka.tools.StorageTool format -t "$cluster" -c "$d/server.properties" \
      "${scram[@]}" > "$d/format.log" 2>&1 || { cat "$d/format.log" >&2; exit 1; }
  done
  launch $(seq 1 "$n")
}

# The listeners of a secured broker: clients at $1, on SASL_PLAINTEXT, SASL_SSL or SSL (as
# KAFKA_SASL_USERS and KAFKA_TLS say); the broker to itself on an internal PLAINTEXT listener
# (as the super user ANONYMOUS, bound to 127.0.0.1 like the rest).
listeners_secured() {
  local iport proto listener jaas="" admin="" pair
  iport=$(free_port)
  while [ "$iport" = "$1" ] || [ "$iport" = "$2" ]; do iport=$(free_port); done
  case "${KAFKA_SASL_USERS:+sasl}-${KAFKA_TLS:-}" in
    sasl-) proto=SASL_PLAINTEXT ;; sasl-*) proto=SASL_SSL ;; *) proto=SSL ;;
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
    echo "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512${KAFKA_OAUTHBEARER:+,OAUTHBEARER}"
    if [ -n "${KAFKA_OAUTHBEARER:-}" ]; then
      # Kafka's default validator of OAUTHBEARER tokens: unsigned JWTs ("alg":"none"), their
      # "sub" the principal; it checks their expiry and nothing else: for tests only
      echo "listener.name.$listener.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
    fi
    echo "listener.name.$listener.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$jaas;"
    echo "listener.name.$listener.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
  fi
  if [ -n "${KAFKA_TLS:-}" ]; then
    tls_files
    echo "listener.name.$listener.ssl.keystore.type=PEM"
    echo "listener.name.$listener.ssl.keystore.location=$run/tls/broker-keystore.pem"
  fi
  if [ "${KAFKA_TLS:-}" = mutual ]; then
    echo "listener.name.$listener.ssl.client.auth=required"
    echo "listener.name.$listener.ssl.truststore.type=PEM"
    echo "listener.name.$listener.ssl.truststore.location=$run/tls/ca.pem"
    # the principal of a certificate is its CN ("User:app"), not the whole subject
    echo 'ssl.principal.mapping.rules=RULE:^CN=([^,]+)$/$1/,DEFAULT'
    local user
    for user in ${KAFKA_TLS_USERS:-}; do
      client_cert "$user"
      [ -n "$admin" ] || admin=$user
    done
  fi
  if [ -n "$admin" ]; then
    echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    echo "super.users=User:ANONYMOUS;User:$admin"
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
  printf 'subjectAltName=%s\n' "${KAFKA_TLS_SAN:-IP:127.0.0.1,DNS:localhost}" > "$tls/san.ext"
  openssl x509 -req -in "$tls/broker.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" \
    -CAcreateserial -days 30 -extfile "$tls/san.ext" -out "$tls/broker.pem" 2>/dev/null
  cat "$tls/broker.key" "$tls/broker.pem" > "$tls/broker-keystore.pem"
}

# A client key and certificate for user $1 (subject CN=$1) signed by the test CA.
client_cert() {
  local tls="$run/tls"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$tls/$1.key" \
    -out "$tls/$1.csr" 2>/dev/null
  openssl x509 -req -in "$tls/$1.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" \
    -CAcreateserial -days 30 -out "$tls/$1.pem" 2>/dev/null
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


# Start the JVMs of the given nodes on their configured, formatted data directories, then wait
# until each serves. All start before any is waited for: a controller of a cluster serves only
# once a majority of the controllers runs.
launch() {
  jvm
  local i d
  for i in "$@"; do
    d=$(node_dir "$i")
    nohup "${JVM[@]}" kafka.Kafka "$d/server.properties" > "$d/broker.log" 2>&1 &
    echo $! > "$d/pid"
  done
  local deadline=$((SECONDS + 120))
  for i in "$@"; do
    d=$(node_dir "$i")
    until grep -q "Kafka Server started" "$d/broker.log" 2>/dev/null; do
      if ! kill -0 "$(cat "$d/pid")" 2>/dev/null; then
        log "broker exited during start-up; last lines of $d/broker.log:"; tail -n 30 "$d/broker.log" >&2
        stop; exit 1
      fi
      if [ $SECONDS -ge $deadline ]; then log "broker not ready after 120 s ($d/broker.log)"; stop; exit 1; fi
      sleep 0.5
    done
  done
  local addresses=""
  for i in $(seq 1 "$(nodes)"); do
    addresses="$addresses${addresses:+,}127.0.0.1:$(port_of "$(node_dir "$i")")"
  done
  echo "$addresses" > "$run/bootstrap"
  for i in "$@"; do
    d=$(node_dir "$i")
    log "Apache Kafka $version ready at 127.0.0.1:$(port_of "$d") (pid $(cat "$d/pid"))"
  done
  cat "$run/bootstrap"
}

# A node's client port: its `port` file (server.properties for a directory made before that
# file was).
port_of() {
  cat "$1/port" 2>/dev/null || sed -n 's|^advertised.listeners=PLAINTEXT://.*:||p' "$1/server.properties"
}

# Stop (if running) and start again on the same data and ports (tests: a broker restart
# mid-stream; `start` would format fresh storage). `stop` removes the bootstrap file.
restart() {
  [ -f "$(node_dir 1)/server.properties" ] || { log "nothing to restart in $run: use start"; exit 1; }
  any_running || log "not running: starting it again on $(for i in $(seq 1 "$(nodes)"); do
    printf '127.0.0.1:%s ' "$(port_of "$(node_dir "$i")")"; done)"
  stop
  fetch  # the jars may live in another STREAMFS_CACHE than at start (cached: no work if there)
  launch $(seq 1 "$(nodes)")
}

stop_node() {  # $1: a node's directory, $2: the signal
  local pid
  if pid=$(running_pid "$1"); then
    kill "-$2" "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
    log "stopped (pid $pid)"
  fi
  rm -f "$1/pid"
}

stop() {
  local i
  for i in $(seq 1 "$(nodes)"); do stop_node "$(node_dir "$i")" TERM; done
  rm -f "$run/bootstrap"
}

# kill-node, stop-node and start-node: $1 is a node's number, 1 to the number of nodes
node_arg() {
  if ! [[ "${1:-}" =~ ^[1-9]$ ]] || [ "$1" -gt "$(nodes)" ]; then
    log "no node '${1:-}' in $run (nodes 1 to $(nodes))"; exit 2
  fi
}

signal_node() {  # $1: the node, $2: the signal (KILL: a crash; TERM: a controlled shutdown)
  node_arg "${1:-}"
  stop_node "$(node_dir "$1")" "$2"
}

start_node() {
  node_arg "${1:-}"
  if running_pid "$(node_dir "$1")" >/dev/null; then log "node $1 is running"; cat "$run/bootstrap"; return 0; fi
  fetch
  launch "$1"
}

status() {
  local i down=""
  [ -f "$run/bootstrap" ] || { log "not running"; return 1; }
  for i in $(seq 1 "$(nodes)"); do running_pid "$(node_dir "$i")" >/dev/null || down="$down $i"; done
  if [ -z "$down" ]; then cat "$run/bootstrap"; return 0; fi
  if [ "$(nodes)" = 1 ]; then log "not running"; else log "nodes not running:$down of $(nodes)"; fi
  return 1
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  fetch) fetch ;;
  restart) restart ;;
  kill-node) signal_node "${2:-}" KILL ;;
  stop-node) signal_node "${2:-}" TERM ;;
  start-node) start_node "${2:-}" ;;
  *) echo "usage: $0 start|stop|restart|status|fetch|kill-node I|stop-node I|start-node I" >&2; exit 2 ;;
esac
