# mesh/influxdb — Debian's InfluxDB 1.x package, the one the local mesh installs on the host.
# Listens where INFLUXDB_HTTP_BIND_ADDRESS says (compose's .env); usage reporting is off.
ARG BASE=mesh/base:bookworm
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends influxdb \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
ENV INFLUXDB_REPORTING_DISABLED=true \
    INFLUXDB_HTTP_BIND_ADDRESS=127.0.0.1:8086 \
    INFLUXDB_BIND_ADDRESS=127.0.0.1:8088 \
    INFLUXDB_HTTP_LOG_ENABLED=false \
    INFLUXDB_META_DIR=/var/lib/influxdb/meta \
    INFLUXDB_DATA_DIR=/var/lib/influxdb/data \
    INFLUXDB_DATA_WAL_DIR=/var/lib/influxdb/wal
VOLUME /var/lib/influxdb
LABEL org.opencontainers.image.title="Detector Mesh InfluxDB"
CMD ["influxd", "-config", "/etc/influxdb/influxdb.conf"]
