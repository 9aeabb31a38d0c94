# mesh/spark — the Spark jobs (ingest, the metrics aggregator, the history, backtests): the Python
# image's venv and code plus the Spark stack, on Debian's Java 17, with the Kafka/Avro connector
# and Delta Lake jars baked in so that nothing downloads when a job starts. Context: .cache/images/spark/ (made by `make images`).
ARG PYTHON_IMAGE=mesh/python:local
ARG BASE=mesh/base:bookworm
ARG JRE=mesh/jre:bookworm

FROM ${PYTHON_IMAGE} AS python

FROM ${BASE} AS venv
COPY --from=python /opt/mesh/venv /opt/mesh/venv
COPY requirements.txt build-ca.crt /tmp/build/
RUN PIP_CERT=/tmp/build/build-ca.crt /opt/mesh/venv/bin/pip install --quiet --no-cache-dir \
      --disable-pip-version-check --no-deps -r /tmp/build/requirements.txt

FROM ${JRE}
ENV PATH=/opt/mesh/venv/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONPATH=/opt/mesh/app \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYSPARK_PYTHON=/opt/mesh/venv/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/mesh/venv/bin/python \
    MESH_HOME=/var/lib/mesh \
    MESH_CACHE=/opt/mesh/cache \
    MESH_JVM_CLASS_ARCHIVE=false
COPY --from=venv /opt/mesh/venv /opt/mesh/venv
COPY --from=python /opt/mesh/app /opt/mesh/app
COPY jars /opt/mesh/cache/jars/spark
COPY delta-jars /opt/mesh/cache/jars/delta
WORKDIR /opt/mesh/app
RUN mkdir -p /var/lib/mesh
LABEL org.opencontainers.image.title="Detector Mesh Spark jobs"
CMD ["python", "-m", "services.ingest.job"]
