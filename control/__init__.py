"""The control plane: the `mesh` command and everything it does to a local mesh.

It deploys, rolls out and scales detectors, starts the Spark jobs and the local servers (broker,
InfluxDB, trace backend), and keeps each service alive under its own supervisor. It never imports
a service's modules: services run as processes (``python -m ...``) and tell it how they do through
files under ``$MESH_HOME`` (:mod:`shared.service_files`).
"""
