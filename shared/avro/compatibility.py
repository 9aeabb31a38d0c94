"""Refuse a schema change that is not backward and forward compatible, naming the field.

Producers and consumers are upgraded one at a time, so during a rollout new consumers read old
data (backward compatibility) and old consumers read new data (forward compatibility).
:func:`check_schemas_dir` checks every consecutive pair of versions in a schema folder in both
directions with the Avro resolution rules (:mod:`shared.avro.resolution`), plus the project's
rules for schema files (:mod:`shared.avro.lint`). ``make test`` runs::

    python -m shared.avro.compatibility [SCHEMAS_DIR]

which prints one problem per line, e.g.
``transaction v1 cannot read transaction v2 data (forward): transaction.amount: writer type
string cannot be read as double``, and exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from shared.avro.catalogue import Catalogue
from shared.avro.errors import SchemaError
from shared.avro.lint import lint_catalogue
from shared.avro.resolution import check_compatibility
from shared.settings import Settings

__all__ = ["check_catalogue", "check_compatibility", "check_schemas_dir", "main"]


def check_catalogue(catalogue: Catalogue) -> list[str]:
    """Compatibility of consecutive versions of every schema, both ways, plus version numbering."""
    problems: list[str] = []
    for name in catalogue.names():
        versions = catalogue.versions(name)
        numbers = [sv.version for sv in versions]
        if numbers != list(range(1, len(numbers) + 1)):
            found = ", ".join(f"v{n}" for n in numbers)
            problems.append(f"{name}: versions must be v1, v2, ... without gaps; found {found}")
        for old, new in pairwise(versions):
            for p in check_compatibility(new.parsed, old.parsed, root=name):
                problems.append(f"{new.label} cannot read {old.label} data (backward): {p}")
            for p in check_compatibility(old.parsed, new.parsed, root=name):
                problems.append(f"{old.label} cannot read {new.label} data (forward): {p}")
    return problems


def check_schemas_dir(schemas_dir: Path | str) -> list[str]:
    """Every problem of a schema folder: unreadable files, project rules, incompatible versions."""
    try:
        catalogue = Catalogue.load(schemas_dir)
    except SchemaError as exc:
        return [str(exc)]
    return lint_catalogue(catalogue) + check_catalogue(catalogue)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m shared.avro.compatibility [SCHEMAS_DIR]``: print problems, exit 1 on any."""
    parser = argparse.ArgumentParser(
        prog="python -m shared.avro.compatibility",
        description="Check that consecutive schema versions are backward and forward compatible.",
    )
    parser.add_argument(
        "schemas_dir", nargs="?", type=Path, help="default: MESH_SCHEMAS_DIR or schemas/"
    )
    args = parser.parse_args(argv)
    schemas_dir = args.schemas_dir
    if schemas_dir is None:
        schemas_dir = Settings.from_env().schemas_dir
    problems = check_schemas_dir(schemas_dir)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} schema problem(s) in {schemas_dir}", file=sys.stderr)
        return 1
    print(f"{schemas_dir}: schemas are valid and compatible", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
