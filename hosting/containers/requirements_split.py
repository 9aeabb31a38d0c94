"""Which pinned packages go into which image: the lock (requirements.lock) is the only source of
versions; the images take subsets of it, so a container runs exactly what the tests ran.

* the Python services image (detector runtime, notifier, tools, the `mesh` CLI) leaves out the
  development tools and the Spark stack (pyspark alone is ~400 MB);
* the Spark image adds the Spark stack on top of it.

Packages are installed with ``--no-deps`` from these subsets, so a runtime dependency that a new
requirement pulls in must not be listed below; ``tests/unit/containers`` checks every package of
the lock lands in exactly one place.
"""

from __future__ import annotations

import re
from pathlib import Path

#: The test, lint and type-check tools and what only they pull in.
DEVELOPMENT = frozenset({
    "ast-serialize", "grimp", "hypothesis", "import-linter", "iniconfig", "librt",
    "markdown-it-py", "mdurl", "mypy", "pathspec", "pluggy", "pygments",
    "pytest", "pytest-timeout", "rich", "ruff",
})  # fmt: skip
#: Only the Spark jobs (ingest, the metrics aggregator) import these.
SPARK = frozenset({"numpy", "pandas", "py4j", "pyarrow", "pyspark"})

_PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==\S+$")


def canonical(name: str) -> str:
    """PEP 503 normalisation: ``PyYAML`` and ``mypy_extensions`` compare as pip compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lock: Path) -> dict[str, str]:
    """The lock's ``name==version`` lines, keyed by canonical name."""
    found = {}
    for line in lock.read_text().splitlines():
        match = _PIN.match(line.strip())
        if match:
            found[canonical(match[1])] = line.strip()
    return found


def services_requirements(lock: Path) -> list[str]:
    return [pin for name, pin in sorted(pins(lock).items()) if name not in DEVELOPMENT | SPARK]


def spark_requirements(lock: Path) -> list[str]:
    return [pin for name, pin in sorted(pins(lock).items()) if name in SPARK]
