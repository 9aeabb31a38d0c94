"""Fixtures for the Avro unit tests: the real catalogue and throw-away schema folders."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared.avro import Catalogue, load_catalogue
from shared.settings import Settings

#: ``write_schemas({"thing": [v1, v2]})`` -> the folder holding thing/v1.avsc and thing/v2.avsc.
WriteSchemas = Callable[[dict[str, list[Any]]], Path]


@pytest.fixture(scope="session")
def schemas_dir() -> Path:
    return Settings.from_env().schemas_dir


@pytest.fixture(scope="session")
def catalogue(schemas_dir: Path) -> Catalogue:
    return load_catalogue(schemas_dir)


@pytest.fixture
def write_schemas(tmp_path: Path) -> WriteSchemas:
    counter = iter(range(1_000_000))

    def write(schemas: dict[str, list[Any]]) -> Path:
        root = tmp_path / f"schemas{next(counter)}"
        for name, versions in schemas.items():
            (root / name).mkdir(parents=True)
            for number, schema in enumerate(versions, start=1):
                (root / name / f"v{number}.avsc").write_text(json.dumps(schema), encoding="utf-8")
        return root

    return write
