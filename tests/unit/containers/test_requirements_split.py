"""The images take subsets of requirements.lock, installed with ``--no-deps``: each subset must
hold every runtime dependency of its packages, or a container fails at import."""

from __future__ import annotations

import importlib.metadata

from packaging.requirements import Requirement

from hosting.containers.requirements_split import (
    DEVELOPMENT,
    SPARK,
    canonical,
    pins,
    services_requirements,
    spark_requirements,
)
from shared.settings import PROJECT_ROOT

LOCK = PROJECT_ROOT / "requirements.lock"


def _names(lines: list[str]) -> set[str]:
    return {canonical(line.split("==")[0]) for line in lines}


def _dependencies(name: str) -> set[str]:
    """What ``name`` (as installed in this virtualenv, from the same lock) needs at run time:
    its unconditional requirements and those whose marker holds here, without extras."""
    found = set()
    for text in importlib.metadata.requires(name) or []:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            found.add(canonical(requirement.name))
    return found


def test_every_locked_package_goes_to_one_image_or_is_a_development_tool() -> None:
    services = _names(services_requirements(LOCK))
    spark = _names(spark_requirements(LOCK))
    locked = set(pins(LOCK))
    assert services | spark | (locked & DEVELOPMENT) == locked
    assert not services & spark
    assert locked >= DEVELOPMENT and locked >= SPARK, "a listed package left the lock"


def test_the_services_image_holds_every_dependency_of_its_packages() -> None:
    services = _names(services_requirements(LOCK))
    missing = {name: _dependencies(name) - services for name in services}
    assert {name: deps for name, deps in missing.items() if deps} == {}


def test_the_spark_image_holds_every_dependency_of_the_spark_stack() -> None:
    image = _names(services_requirements(LOCK)) | _names(spark_requirements(LOCK))
    missing = {name: _dependencies(name) - image for name in _names(spark_requirements(LOCK))}
    assert {name: deps for name, deps in missing.items() if deps} == {}
