#!/bin/sh
# The broker image's entry point: fill in the ports, format the KRaft log folder once (a named
# volume keeps it, and its topics, across `compose down` without -v), run the broker.
set -eu
config=/opt/kafka/config/server.properties
sed -e "s/@LISTEN_HOST@/${KAFKA_HOST}/g" -e "s/@ADVERTISED_HOST@/${KAFKA_ADVERTISED_HOST:-$KAFKA_HOST}/g" \
    -e "s/@PORT@/${KAFKA_PORT}/g" \
    -e "s/@CONTROLLER_PORT@/${KAFKA_CONTROLLER_PORT}/g" \
    /opt/kafka/config/server.properties.in > "$config"
java_opts="-Xmx${KAFKA_HEAP} -Xms${KAFKA_HEAP} -XX:+UseG1GC -Djava.awt.headless=true"
java_opts="$java_opts -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties"
if [ ! -f /var/lib/kafka/meta.properties ]; then
  cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  # shellcheck disable=SC2086
  java $java_opts -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted \
    "--cluster-id=$cluster_id" --config "$config"
fi
# shellcheck disable=SC2086
exec java $java_opts -cp '/opt/kafka/libs/*' kafka.Kafka "$config"
