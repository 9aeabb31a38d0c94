"""Deploying detectors into the running local mesh: validate, release, start, roll out, stop.

* :mod:`validate` checks a detector folder in a throwaway process (manifest, import, input
  schemas, dry run through the harness) before anything runs;
* :mod:`releases` snapshots the folder, so a rollback can start exactly the code that ran;
* :mod:`registry` remembers what is deployed and whether it should run;
* :mod:`instances` runs each replica under its own supervisor and reads its state;
* :mod:`health` decides whether new instances are healthy; :mod:`rollout` replaces them one at a
  time and rolls back.

Nothing here ever signals a process of another detector: a deploy, stop or rollout only starts
and stops processes of the detector it names.
"""
