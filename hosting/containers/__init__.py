"""The mesh in containers: images built here without a registry, the compose mesh and the
Swarm stack, through the Docker engine's API (the ``docker`` SDK) and the compose CLI.

* :mod:`engine` connects to the engine, or says in one line why it cannot;
* :mod:`images` builds the mesh's images (`make images`) from a Debian root filesystem;
* :mod:`compose` and :mod:`stack` run the whole mesh from ``infra/compose/``;
* :mod:`healthcheck` is the health probe each service's container runs.

A detector replica as a container is a deployment concern: :mod:`control.deploy.container_replicas`,
beside the process replicas of :mod:`control.deploy.instances`.
"""
