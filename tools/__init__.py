"""Tools around the mesh, not part of it: the load generator and scorer (`mesh produce`, the
demo's check of planted alerts) and the demo's wait for routing. They import only :mod:`shared`."""
