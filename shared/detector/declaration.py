"""How a detector is declared: a plain function plus its name, version, inputs and state.

A data scientist writes ``detect(record, ctx)`` and decorates it; the decorator checks the
declaration at import time (so a typo fails when the module loads, not on the first record) and
returns a :class:`Detector`, which the harness and the runtime both execute. Nothing here knows
about Kafka or asyncio: the same declaration could run on another engine.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shared.detector.errors import DeclarationError
from shared.detector.state import StoreSpec

if TYPE_CHECKING:
    from shared.detector.context import Context

#: Input record type -> Avro schema name of its ``records.<type>`` topic.
INPUT_TYPES: Mapping[str, str] = {"transactions": "transaction", "logins": "login"}

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")

#: What a detector function looks like: a record (dict) and a context in, alerts out.
DetectFn = Callable[[dict[str, Any], "Context"], Iterable[dict[str, Any]] | None]


@dataclass(frozen=True)
class Detector:
    """A declared detector: everything the harness and the runtime need to run it."""

    name: str
    version: str
    inputs: tuple[str, ...]
    detect: DetectFn
    state: tuple[StoreSpec, ...] = ()
    description: str = ""
    stores: Mapping[str, StoreSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_name("detector name", self.name)
        if not isinstance(self.version, str) or not self.version.strip():
            raise DeclarationError(f"detector {self.name}: `version` must be a non-empty string")
        check_inputs(f"detector {self.name}", self.inputs)
        if not callable(self.detect):
            raise DeclarationError(f"detector {self.name}: `detect` must be a function")
        stores: dict[str, StoreSpec] = {}
        for spec in self.state:
            if not isinstance(spec, StoreSpec):
                raise DeclarationError(
                    f"detector {self.name}: state must be KeyValue(...) or Window(...) specs, "
                    f"got {type(spec).__name__}"
                )
            if spec.name in stores:
                raise DeclarationError(f"detector {self.name}: state {spec.name!r} declared twice")
            stores[spec.name] = spec
        object.__setattr__(self, "stores", stores)

    @property
    def stateful(self) -> bool:
        return bool(self.state)


def detector(
    *,
    name: str,
    version: str,
    inputs: Sequence[str],
    state: Sequence[StoreSpec] = (),
    description: str = "",
) -> Callable[[DetectFn], Detector]:
    """Declare ``detect(record, ctx) -> alerts`` as a detector.

    ``inputs`` are record types (``transactions``, ``logins``); ``state`` lists the stores
    the function reaches through ``ctx.kv(name)`` / ``ctx.window(name)``.
    """

    def wrap(fn: DetectFn) -> Detector:
        return Detector(
            name=name,
            version=version,
            inputs=tuple(inputs),
            detect=fn,
            state=tuple(state),
            description=description or (fn.__doc__ or "").strip().split("\n")[0],
        )

    return wrap


def check_name(what: str, value: object) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        raise DeclarationError(
            f"{what} {value!r} must be lower case letters, digits and _ (start with a letter)"
        )


def check_inputs(where: str, inputs: object) -> None:
    if isinstance(inputs, str) or not isinstance(inputs, Sequence) or not inputs:
        raise DeclarationError(f"{where}: `inputs` must be a non-empty list of record types")
    for record_type in inputs:
        if record_type not in INPUT_TYPES:
            raise DeclarationError(
                f"{where}: unknown input type {record_type!r}; choose from {', '.join(INPUT_TYPES)}"
            )
    if len(set(inputs)) != len(inputs):
        raise DeclarationError(f"{where}: an input type is listed twice")
