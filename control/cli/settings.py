"""``mesh settings``: every setting's effective value, where it came from, and what it does.

The values are those a process started from this shell would use: the environment's
``MESH_*`` variables over the declared defaults (:mod:`shared.settings_catalogue`). A value of
the wrong type is the same one-line error a service would stop with. ``--all`` adds the
variables that are not settings of a running mesh (the compose file's ports, the benchmarks'
and tests' knobs, what the control plane sets for its children). ``--manifest`` and ``--rules``
print the fields a detector's manifest and the notifier's channels take, from the same kind of
declaration (a dataclass whose fields carry their type, default and ``#:`` description).
"""

from __future__ import annotations

import argparse
import os
import textwrap
from typing import TYPE_CHECKING

from shared.detector.autoscale import AutoscalePolicy
from shared.detector.manifest import Manifest
from shared.field_docs import field_docs
from shared.notifier_channels import FileChannel, WebhookChannel
from shared.settings import Settings

if TYPE_CHECKING:
    from shared.settings_catalogue import Declared

#: Columns of a description line (it is indented under its variable).
WIDTH = 96


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "settings", help="every MESH_* setting: its effective value, set or default, and why"
    )
    parser.add_argument(
        "--all", action="store_true",
        help="also the compose file's ports, the benchmarks' and tests' knobs, internal ones",
    )  # fmt: skip
    parser.add_argument(
        "--set", dest="only_set", action="store_true", help="only the variables set here"
    )
    parser.add_argument(
        "--manifest", action="store_true",
        help="instead: the fields of a detector's manifest.yaml, their defaults and meaning",
    )  # fmt: skip
    parser.add_argument(
        "--rules", action="store_true",
        help="instead: the settings of the notifier's channels (infra/notifier/rules.yaml)",
    )  # fmt: skip
    parser.set_defaults(handler=show_settings)


def show_settings(args: argparse.Namespace, settings: Settings) -> int:
    # Imported here, not at the top: the catalogue reads TracingConfig, whose package loads
    # OpenTelemetry, ~80 ms (python -X importtime) that every other `mesh` command would pay.
    from shared.settings_catalogue import OTHER, effective

    if args.manifest or args.rules:
        return show_declarations(args)
    env = settings.environment or dict(os.environ)
    rows = effective(env)
    if args.all:
        rows += [(item, env.get(item.variable) or item.default, bool(env.get(item.variable)))
                 for item in OTHER]  # fmt: skip
    section = ""
    for item, value, was_set in rows:
        if args.only_set and not was_set:
            continue
        if item.section != section:
            section = item.section
            print(f"[{section}]")
        shown = value if value != "" else '""'
        print(f"  {item.variable} = {shown}" + ("   (set)" if was_set else ""))
        for line in _described(item):
            print(f"      {line}")
    return 0


def show_declarations(args: argparse.Namespace) -> int:
    """The fields of the files the mesh reads besides its environment."""
    sections: list[tuple[str, type]] = []
    if args.manifest:
        sections.append(("manifest.yaml (a detector folder)", Manifest))
        sections.append(("manifest.yaml autoscale: (docs/autoscale.md)", AutoscalePolicy))
    if args.rules:
        sections += [
            ("rules.yaml channels, type: webhook", WebhookChannel),
            ("rules.yaml channels, type: file", FileChannel),
        ]
    for title, cls in sections:
        print(f"[{title}]")
        for doc, _ in field_docs(cls):
            value = "(required)" if doc.required else "= " + (doc.default or "''")
            kind = f"{doc.type}, {doc.limits}" if doc.limits else doc.type
            print(f"  {doc.name} {value}   ({kind})")
            for line in textwrap.wrap(doc.description, WIDTH - 6):
                print(f"      {line}")
    return 0


def _described(item: Declared) -> list[str]:
    """The description's first sentence, wrapped, then its type and default."""
    first = item.description.split(". ")[0].rstrip(".") + "."
    default = item.default if item.default != "" else '""'
    return textwrap.wrap(f"{first} ({item.type}, default {default})", WIDTH - 6)
