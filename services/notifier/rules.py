"""Where each alert goes: the notifier's routing file (``infra/notifier/rules.yaml`` by default).

The file names the **channels** (a webhook, a file), optional **customer segments** (glob patterns
on ``customer_id``, first match wins, else ``default``) and ordered **rules**: the first rule whose
``match`` holds for an alert (detector, severity, segment; a missing key matches anything) sends it
to that rule's channels. An alert no rule matches goes nowhere, and the notifier records that.

A mistake in the file stops the notifier at start with the file, line and field named, e.g.
``rules.yaml:14: rules[1].match.severity: 'SEVERE' is not a severity (LOW, MEDIUM, HIGH,
CRITICAL)``: routing is never half-valid at run time.

A channel's ``url``, ``path`` and header values may name environment variables as ``${NAME}``: a
token stays out of the file, and the container mesh's rules follow its ports (.env). A variable
that is not set is such a mistake too, named with its field.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from shared.errors import ConfigError
from shared.notifier_channels import Channel, FileChannel, WebhookChannel

#: The alert schema's severity symbols (schemas/alert; a unit test ties them together).
SEVERITIES = ("LOW", "MEDIUM", "HIGH", "CRITICAL")
DEFAULT_SEGMENT = "default"
#: ``${NAME}`` in a channel setting: an environment variable's value.
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class RulesError(ConfigError):
    """The routing file cannot be used; the message names the file, line and field."""


#: A webhook's numeric settings as its fields declare them: (key, minimum, whole number).
_NUMBERS = tuple(
    (f.name, f.metadata["minimum"], f.type == "int")
    for f in fields(WebhookChannel)
    if "minimum" in f.metadata
)


@dataclass(frozen=True)
class Match:
    """What a rule matches; None is "anything"."""

    detectors: frozenset[str] | None = None
    severities: frozenset[str] | None = None
    segments: frozenset[str] | None = None

    def holds(self, detector: str, severity: str, segment: str) -> bool:
        return (
            (self.detectors is None or detector in self.detectors)
            and (self.severities is None or severity in self.severities)
            and (self.segments is None or segment in self.segments)
        )


@dataclass(frozen=True)
class Rule:
    match: Match
    channels: tuple[str, ...]
    #: where it is in the file, for messages and `mesh status`
    line: int


@dataclass(frozen=True)
class Routing:
    channels: Mapping[str, Channel]
    segments: Mapping[str, tuple[str, ...]]
    rules: tuple[Rule, ...]

    def segment_of(self, customer_id: str) -> str:
        for name, patterns in self.segments.items():
            if any(fnmatch.fnmatchcase(customer_id, p) for p in patterns):
                return name
        return DEFAULT_SEGMENT

    def route(self, alert: Mapping[str, Any]) -> tuple[Rule | None, tuple[Channel, ...]]:
        """The first rule that matches ``alert`` (a decoded Alert) and its channels."""
        segment = self.segment_of(str(alert["customer_id"]))
        for rule in self.rules:
            if rule.match.holds(str(alert["detector"]), str(alert["severity"]), segment):
                return rule, tuple(self.channels[name] for name in rule.channels)
        return None, ()


def load_rules(path: Path, environ: Mapping[str, str] | None = None) -> Routing:
    """The routing of ``path``; :class:`RulesError` naming file, line and field otherwise."""
    try:
        text = path.read_text()
    except OSError as error:
        raise RulesError(
            f"cannot read the notifier's rules file {path}: {error.strerror}"
        ) from None
    return parse_rules(text, path.name, environ)


def parse_rules(
    text: str, source: str = "rules.yaml", environ: Mapping[str, str] | None = None
) -> Routing:
    """The routing ``text`` declares; ``${NAME}`` in channel settings comes from ``environ``
    (this process's environment by default)."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        raise RulesError(f"{where}: not YAML: {getattr(error, 'problem', error)}") from None
    return _Parser(source, os.environ if environ is None else environ).routing(root)


class _Parser:
    """Walks YAML's node tree (not the loaded values), so every message has its line."""

    def __init__(self, source: str, environ: Mapping[str, str]) -> None:
        self.source = source
        self.environ = environ

    def fail(self, node: yaml.Node | None, where: str, problem: str) -> RulesError:
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        return RulesError(f"{self.source}{line}: {where}: {problem}")

    # structure -------------------------------------------------------------------------------
    def mapping(
        self,
        node: yaml.Node | None,
        where: str,
        allowed: set[str] | None,
        required: frozenset[str] = frozenset(),
    ) -> dict[str, yaml.Node]:
        """The keys of a mapping node (``allowed=None``: any key) and their value nodes."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, where, "must be a mapping of keys to values")
        found: dict[str, yaml.Node] = {}
        for key, value in node.value:
            name = str(key.value)
            if allowed is not None and name not in allowed:
                raise self.fail(
                    key,
                    f"{where}.{name}" if where else name,
                    f"unknown key; expected one of {', '.join(sorted(allowed))}",
                )
            if name in found:
                raise self.fail(key, f"{where}.{name}" if where else name, "given twice")
            found[name] = value
        missing = sorted(required - set(found))
        if missing:
            raise self.fail(node, where or "the file", f"missing {', '.join(missing)}")
        return found

    def sequence(self, node: yaml.Node, where: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, where, "must be a list")
        return list(node.value)

    def text(self, node: yaml.Node, where: str) -> str:
        if (
            not isinstance(node, yaml.ScalarNode)
            or node.tag != "tag:yaml.org,2002:str"
            or not str(node.value).strip()
        ):
            raise self.fail(node, where, "must be a non-empty string")
        return str(node.value)

    def expanded(self, node: yaml.Node, where: str) -> str:
        """A non-empty string with each ``${NAME}`` replaced by that environment variable."""

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.environ:
                raise self.fail(node, where, f"${{{name}}} is not set in the environment")
            return self.environ[name]

        return _VARIABLE.sub(value, self.text(node, where))

    def number(
        self, node: yaml.Node, where: str, *, integer: bool = False, minimum: float = 0.0
    ) -> float:
        tags = (
            ("tag:yaml.org,2002:int",)
            if integer
            else ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
        )
        if not isinstance(node, yaml.ScalarNode) or node.tag not in tags:
            raise self.fail(node, where, "must be an integer" if integer else "must be a number")
        value = int(node.value) if integer else float(node.value)
        if value < minimum or (not integer and value != value):
            raise self.fail(node, where, f"must be {minimum:g} or more, not {node.value}")
        return value

    def strings(self, node: yaml.Node, where: str) -> list[tuple[yaml.Node, str]]:
        """A string or a list of strings."""
        items = self.sequence(node, where) if isinstance(node, yaml.SequenceNode) else [node]
        if not items:
            raise self.fail(node, where, "must not be empty")
        return [(item, self.text(item, where)) for item in items]

    # the file --------------------------------------------------------------------------------
    def routing(self, root: yaml.Node | None) -> Routing:
        if root is None:
            raise RulesError(f"{self.source}: empty: it needs channels and rules")
        top = self.mapping(
            root, "", {"channels", "segments", "rules"}, frozenset({"channels", "rules"})
        )
        channels = self.channels(top["channels"])
        segments = self.segments(top["segments"]) if "segments" in top else {}
        rules = tuple(
            self.rule(node, f"rules[{i}]", channels, segments)
            for i, node in enumerate(self.sequence(top["rules"], "rules"))
        )
        if not rules:
            raise self.fail(top["rules"], "rules", "must list at least one rule")
        return Routing(channels, segments, rules)

    def channels(self, node: yaml.Node) -> dict[str, Channel]:
        if not isinstance(node, yaml.MappingNode) or not node.value:
            raise self.fail(node, "channels", "must map channel names to their settings")
        found: dict[str, Channel] = {}
        for key, value in node.value:
            name = str(key.value)
            where = f"channels.{name}"
            kind = self.mapping(
                value,
                where,
                {"type", "url", "path", "headers", *(key for key, _, _ in _NUMBERS)},
                frozenset({"type"}),
            )
            found[name] = self.channel(name, where, kind)
        return found

    def channel(self, name: str, where: str, fields: dict[str, yaml.Node]) -> Channel:
        kind = self.text(fields["type"], f"{where}.type")
        if kind == "file":
            extra = sorted(set(fields) - {"type", "path"})
            if extra:
                raise self.fail(
                    fields[extra[0]],
                    f"{where}.{extra[0]}",
                    "not a setting of a file channel (type, path)",
                )
            if "path" not in fields:
                raise self.fail(fields["type"], where, "a file channel needs a path")
            return FileChannel(name, self.expanded(fields["path"], f"{where}.path"))
        if kind != "webhook":
            raise self.fail(
                fields["type"],
                f"{where}.type",
                f"unknown channel type {kind!r}; expected webhook or file",
            )
        if "url" not in fields:
            raise self.fail(fields["type"], where, "a webhook channel needs a url")
        url = self.expanded(fields["url"], f"{where}.url")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise self.fail(
                fields["url"], f"{where}.url", f"{url!r} is not an http(s) URL with a host"
            )
        if "path" in fields:
            raise self.fail(fields["path"], f"{where}.path", "not a setting of a webhook channel")
        settings: dict[str, Any] = {}
        for key, minimum, integer in _NUMBERS:
            if key in fields:
                value = self.number(fields[key], f"{where}.{key}", integer=integer, minimum=minimum)
                settings[key] = int(value) if integer else value
        if "headers" in fields:
            headers = self.mapping(fields["headers"], f"{where}.headers", None)
            settings["headers"] = {
                k: self.expanded(v, f"{where}.headers.{k}") for k, v in headers.items()
            }
        return WebhookChannel(name, url, **settings)

    def segments(self, node: yaml.Node) -> dict[str, tuple[str, ...]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, "segments", "must map segment names to customer_id patterns")
        found = {}
        for key, value in node.value:
            name = str(key.value)
            if name == DEFAULT_SEGMENT:
                raise self.fail(
                    key,
                    f"segments.{name}",
                    "'default' is every customer no segment matches: pick another name",
                )
            found[name] = tuple(text for _, text in self.strings(value, f"segments.{name}"))
        return found

    def rule(
        self,
        node: yaml.Node,
        where: str,
        channels: Mapping[str, Channel],
        segments: Mapping[str, tuple[str, ...]],
    ) -> Rule:
        fields = self.mapping(node, where, {"match", "channels"}, frozenset({"channels"}))
        match = Match()
        if "match" in fields:
            keys = self.mapping(
                fields["match"], f"{where}.match", {"detector", "severity", "segment"}
            )
            detectors = severities = named_segments = None
            if "detector" in keys:
                detectors = frozenset(
                    t for _, t in self.strings(keys["detector"], f"{where}.match.detector")
                )
            if "severity" in keys:
                severities = self.one_of(keys["severity"], f"{where}.match.severity", SEVERITIES,
                                         "{!r} is not a severity ({})")  # fmt: skip
            if "segment" in keys:
                known = sorted({*segments, DEFAULT_SEGMENT})
                named_segments = self.one_of(keys["segment"], f"{where}.match.segment", known,
                                             "no segment {!r} (segments: {})")  # fmt: skip
            match = Match(detectors, severities, named_segments)
        # Every channel named must exist; the rule keeps them in the file's order.
        self.one_of(fields["channels"], f"{where}.channels", sorted(channels),
                    "no channel {!r} (channels: {})")  # fmt: skip
        ordered = tuple(t for _, t in self.strings(fields["channels"], f"{where}.channels"))
        return Rule(match, ordered, node.start_mark.line + 1)

    def one_of(
        self, node: yaml.Node, where: str, allowed: Sequence[str], problem: str
    ) -> frozenset[str]:
        """A name or a list of names, each one of ``allowed``; ``problem`` formats the name
        that is not and the allowed ones."""
        items = self.strings(node, where)
        for item, text in items:
            if text not in allowed:
                raise self.fail(item, where, problem.format(text, ", ".join(allowed)))
        return frozenset(text for _, text in items)
