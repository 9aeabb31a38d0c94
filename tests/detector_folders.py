"""Write detector folders for tests: a manifest and a few lines of ``detect``, as an author would.

Tests of deploy and rollout need detectors that work, fail at import, fail every record, or
carry a new version; each is a real folder on disk, deployed the way a user deploys theirs.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

#: A working detector body: alert on every transaction above 900 in any currency.
ALERT_ABOVE_900 = """
    if record["amount"] <= 900:
        return []
    return [ctx.alert("above_900", severity="LOW", score=1.0, reason="amount above 900")]
"""


def write_detector(
    folder: Path,
    name: str,
    *,
    version: str = "1.0.0",
    body: str = ALERT_ABOVE_900,
    inputs: tuple[str, ...] = ("transactions",),
    replicas: int = 1,
    start: str = "earliest",
    manifest_inputs: tuple[str, ...] | None = None,
    preamble: str = "",
    manifest_extra: str = "",
) -> Path:
    """``folder`` with manifest.yaml and detector.py; ``body`` is the inside of ``detect``."""
    folder.mkdir(parents=True, exist_ok=True)
    listed = manifest_inputs if manifest_inputs is not None else inputs
    (folder / "manifest.yaml").write_text(
        f"name: {name}\nversion: {version}\ninputs: [{', '.join(listed)}]\n"
        f"owner: test-team\nreplicas: {replicas}\nstart: {start}\n"
        + textwrap.dedent(manifest_extra).lstrip("\n")
    )
    (folder / "detector.py").write_text(
        "from shared.detector import detector\n"
        + textwrap.dedent(preamble)
        + f"\n\n@detector(name={name!r}, version={version!r}, inputs={list(inputs)!r})\n"
        + "def detect(record, ctx):\n"
        + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
        + "\n"
    )
    return folder
