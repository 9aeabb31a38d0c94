# mesh/jre:bookworm — the Debian base plus Debian's Java 17 runtime, for the broker and Spark.
# Built by `make images` (hosting/containers/images.py) from mesh/base:bookworm, which it makes
# with debootstrap: no registry is needed.
ARG BASE=mesh/base:bookworm
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
