"""What a job killed mid-write leaves in its checkpoints, cleared before the queries start again.

Spark writes each entry of a query's offset and commit logs atomically: to a hidden temporary
file (``.<batch>.<uuid>.tmp``, and its ``.crc``), renamed into place when complete. A SIGKILL
between the two leaves the temporary file behind. Spark 4.1.1 then refuses to start the query
while it has not completed its first batch (SPARK-53103's check: the commit log must be empty
before batch 0, and a leftover file makes it "not empty"): the job exits, its supervisor starts
it again, and it exits the same way for ever. Chaos case 5 found it: a real-time routing job
killed while its first batch committed never routed again.

A temporary file of a dead writer is garbage by construction (the complete entry was never
renamed into place), and the job is the only writer of its checkpoints (one supervised process
per mesh), so the job removes them at its start. For the same reason a commit whose batch has no
offset log entry (real-time mode writes the commit and the offsets as its batch ends; a kill
between the two leaves one without the other) says nothing a restart could use: it is removed
too, and the batch runs again from the previous entry (at least once, as after any kill).
"""

from __future__ import annotations

from pathlib import Path

#: The metadata logs of a query's checkpoint that Spark writes entry by entry.
LOGS = ("offsets", "commits")


def clear_interrupted_writes(query_checkpoint: Path) -> list[Path]:
    """Remove the leftovers of a writer killed mid-write from one query's checkpoint folder;
    returns what was removed (for the job's log)."""
    removed = []
    for log in LOGS:
        folder = query_checkpoint / log
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir()):
            if entry.name.startswith(".") and (
                entry.name.endswith(".tmp") or entry.name.endswith(".tmp.crc")
            ):
                entry.unlink()
                removed.append(entry)
    offsets = _entries(query_checkpoint / "offsets")
    newest = max(offsets, default=-1)
    commits = query_checkpoint / "commits"
    for batch in sorted(b for b in _entries(commits) if b > newest):
        for name in (str(batch), f".{batch}.crc"):
            path = commits / name
            if path.exists():
                path.unlink()
                removed.append(path)
    return removed


def _entries(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return [int(p.name) for p in folder.iterdir() if p.name.isdigit()]
