# mesh/python — the Python services: detector runtime, notifier, tools and the `mesh` CLI.
# Context: the checkout, filtered by .dockerignore; `make images` writes the pinned subset of
# requirements.lock and the build's CA bundle to .cache/images/python-build/ first.
ARG BASE=mesh/base:bookworm

# The virtualenv is built in its own stage: the CA bundle pip needs here never reaches the image.
FROM ${BASE} AS venv
COPY .cache/images/python-build/requirements.txt .cache/images/python-build/build-ca.crt /tmp/build/
# The compiled Avro decoder's wheel, built on the host by `make images` (none without cargo).
COPY .cache/images/python-build/wheels/ /tmp/build/wheels/
RUN python3 -m venv /opt/mesh/venv \
 && PIP_CERT=/tmp/build/build-ca.crt /opt/mesh/venv/bin/pip install --quiet --no-cache-dir \
      --disable-pip-version-check --no-deps -r /tmp/build/requirements.txt \
 && for wheel in /tmp/build/wheels/*.whl; do [ -e "$wheel" ] || continue; \
      /opt/mesh/venv/bin/pip install --quiet --no-cache-dir --disable-pip-version-check \
        --no-deps "$wheel"; done

FROM ${BASE}
ENV PATH=/opt/mesh/venv/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONPATH=/opt/mesh/app \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MESH_HOME=/var/lib/mesh \
    MESH_CACHE=/opt/mesh/cache
COPY --from=venv /opt/mesh/venv /opt/mesh/venv
WORKDIR /opt/mesh/app
COPY pyproject.toml ./
COPY infra/topics.yaml infra/topics.yaml
COPY infra/notifier infra/notifier
COPY infra/maven infra/maven
COPY schemas schemas
COPY shared shared
COPY services services
COPY control control
COPY hosting hosting
COPY tools tools
COPY detectors detectors
# The `mesh` command, as the project's entry point (pyproject.toml) defines it.
RUN printf '#!/opt/mesh/venv/bin/python\nimport sys\nfrom control.cli.main import main\nsys.exit(main())\n' \
      > /opt/mesh/venv/bin/mesh \
 && chmod 755 /opt/mesh/venv/bin/mesh \
 && mkdir -p /var/lib/mesh
LABEL org.opencontainers.image.title="Detector Mesh Python services"
CMD ["mesh", "--help"]
