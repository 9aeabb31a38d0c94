"""The control plane: the `mesh` command and everything it does to a local mesh.

It deploys, rolls out and scales detectors (as processes or containers), starts the Spark jobs,
and keeps each service alive under its own supervisor; the servers and containers it runs them
on are the hosting's (:mod:`hosting`), which it calls and which never calls it back. It never
imports a service's modules: services run as processes (``python -m ...``) and tell it how they
do through files under ``$MESH_HOME`` (:mod:`shared.service_files`).
"""
