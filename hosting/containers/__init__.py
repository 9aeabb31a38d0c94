"""The mesh in containers: images built here without a registry, and detectors deployed as
containers through the Docker engine's API (the ``docker`` SDK).

* :mod:`engine` connects to the engine, or says in one line why it cannot;
* :mod:`images` builds the mesh's images (`make images`) from a Debian root filesystem;
* :mod:`instances` is the container twin of :mod:`control.deploy.instances`: one replica of a
  detector release as one labelled container.

The compose file that runs the whole mesh in containers is ``infra/compose/``.
"""
