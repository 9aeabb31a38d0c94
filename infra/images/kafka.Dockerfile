# mesh/kafka — a KRaft node from the jars `make jars` fetched from Maven Central: a single broker,
# or one node of a cluster (kafka-entrypoint.sh), configured like the local mesh's brokers
# (hosting/servers/broker.py: broker_properties, via hosting/containers/broker_image.py).
# Context: .cache/images/kafka/ (made by `make images`).
ARG JRE=mesh/jre:bookworm
FROM ${JRE}
COPY libs /opt/kafka/libs
COPY log4j2.properties server.properties.in cluster.properties /opt/kafka/config/
COPY entrypoint.sh /opt/kafka/entrypoint.sh
RUN chmod 755 /opt/kafka/entrypoint.sh && mkdir -p /var/lib/kafka
ENV KAFKA_HOST=127.0.0.1 KAFKA_PORT=9092 KAFKA_CONTROLLER_PORT=9093 KAFKA_HEAP=512m KAFKA_NODE_ID=1 \
    KAFKA_INTERNAL_REPLICAS=1 KAFKA_INTERNAL_MIN_ISR=1
VOLUME /var/lib/kafka
LABEL org.opencontainers.image.title="Detector Mesh Kafka broker (KRaft)"
ENTRYPOINT ["/opt/kafka/entrypoint.sh"]
