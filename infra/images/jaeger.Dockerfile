# mesh/jaeger — the trace backend: the Jaeger v2 binary `make jaeger` built from the Go module
# proxy, with the local mesh's config (MESH_TRACE_HOST, MESH_OTLP_PORT, MESH_TRACE_UI_PORT) and the
# mesh's trace viewer as its UI. Context: .cache/images/jaeger/ (made by `make images`).
ARG BASE=mesh/base:bookworm
FROM ${BASE}
COPY jaeger /usr/local/bin/jaeger
COPY config.yaml /opt/jaeger/config.yaml
COPY ui /opt/jaeger/ui
ENV MESH_OTLP_PORT=4318 MESH_TRACE_UI_PORT=16686 MESH_TRACE_HOST=127.0.0.1
LABEL org.opencontainers.image.title="Detector Mesh trace backend (Jaeger v2)"
CMD ["jaeger", "--config", "/opt/jaeger/config.yaml"]
