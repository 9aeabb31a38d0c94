"""The hosting: what a mesh runs on, started and stopped for the control plane.

``servers/`` runs the local servers as processes of this machine (the Kafka broker in KRaft
mode with its TLS and logins, InfluxDB, the Jaeger trace backend, a Docker engine), each
installed from a package registry on first use; ``containers/`` builds the mesh's images and
runs the compose mesh and the Swarm stack. It changes when a server's version, a package or an
image changes, not when an operator's commands do: the control plane (:mod:`control`) calls it,
it never calls the control plane, and it never imports a service (pyproject.toml's contracts).
"""
