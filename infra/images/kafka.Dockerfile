# mesh/kafka — a single-node KRaft broker from the jars `make jars` fetched from Maven Central,
# configured like the local mesh's (hosting/servers/broker.py: broker_properties).
# Context: .cache/images/kafka/ (made by `make images`).
ARG JRE=mesh/jre:bookworm
FROM ${JRE}
COPY libs /opt/kafka/libs
COPY log4j2.properties server.properties.in /opt/kafka/config/
COPY entrypoint.sh /opt/kafka/entrypoint.sh
RUN chmod 755 /opt/kafka/entrypoint.sh && mkdir -p /var/lib/kafka
ENV KAFKA_HOST=127.0.0.1 KAFKA_PORT=9092 KAFKA_CONTROLLER_PORT=9093 KAFKA_HEAP=512m
VOLUME /var/lib/kafka
LABEL org.opencontainers.image.title="Detector Mesh Kafka broker (KRaft)"
ENTRYPOINT ["/opt/kafka/entrypoint.sh"]
