#!/bin/sh
# The broker image's entry point: fill in this node's settings, format the KRaft log folder once
# (a named volume keeps it, and its topics, across `compose down` without -v), run the broker.
# Alone (the defaults): node 1, its own only voter, the broker's topics with one replica, a new
# cluster id. A node of a cluster (docker-compose.cluster.yml) is given its KAFKA_NODE_ID, every
# voter (KAFKA_VOTERS), the cluster's shared KAFKA_CLUSTER_ID and its topics' replication.
set -eu
config=/opt/kafka/config/server.properties
node=${KAFKA_NODE_ID:-1}
voters=${KAFKA_VOTERS:-$node@$KAFKA_HOST:$KAFKA_CONTROLLER_PORT}
replicas=${KAFKA_INTERNAL_REPLICAS:-1}
sed -e "s/@LISTEN_HOST@/${KAFKA_HOST}/g" -e "s/@ADVERTISED_HOST@/${KAFKA_ADVERTISED_HOST:-$KAFKA_HOST}/g" \
    -e "s/@PORT@/${KAFKA_PORT}/g" \
    -e "s/@CONTROLLER_PORT@/${KAFKA_CONTROLLER_PORT}/g" \
    -e "s/@NODE@/$node/g" -e "s/@VOTERS@/$voters/g" \
    -e "s/@REPLICAS@/$replicas/g" -e "s/@MIN_ISR@/${KAFKA_INTERNAL_MIN_ISR:-1}/g" \
    /opt/kafka/config/server.properties.in > "$config"
if [ "$replicas" -gt 1 ]; then
  cat /opt/kafka/config/cluster.properties >> "$config"
fi
java_opts="-Xmx${KAFKA_HEAP} -Xms${KAFKA_HEAP} -XX:+UseG1GC -Djava.awt.headless=true"
java_opts="$java_opts -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties"
meta=/var/lib/kafka/meta.properties
if [ -f "$meta" ] && [ -n "${KAFKA_CLUSTER_ID:-}" ]; then
  formatted=$(sed -n 's/^cluster.id=//p' "$meta")
  if [ "$formatted" != "$KAFKA_CLUSTER_ID" ]; then
    echo "kafka: this node's volume holds cluster $formatted, not $KAFKA_CLUSTER_ID (a single" \
         "broker's data?): remove it first (mesh compose down --volumes)" >&2
    exit 2
  fi
fi
if [ ! -f "$meta" ]; then
  cluster_id=${KAFKA_CLUSTER_ID:-$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')}
  # shellcheck disable=SC2086
  java $java_opts -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted \
    "--cluster-id=$cluster_id" --config "$config"
fi
# shellcheck disable=SC2086
exec java $java_opts -cp '/opt/kafka/libs/*' kafka.Kafka "$config"
