"""The contracts page, the CLI and configuration pages and the README say what the code does.

The contracts used to live in a handbook outside the repository, which a user who cloned the project
could not open and nothing checked. docs/architecture.md holds them now, and these tests read it
(and docs/cli.md, docs/configuration.md, README.md) against the code itself: the topic
declaration, the `mesh` parser, the header names the services write, the settings catalogue. So a
change that adds, removes or reshapes a contract fails here until the page says so too. No broker,
no Spark: only the declarations are read.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

from control.cli.main import build_parser
from services.detector_runtime import changelog
from services.ingest.rules import RECORD_TYPES
from services.notifier import outputs, webhook
from shared import lineage
from shared.avro import single_object
from shared.avro.catalogue import Catalogue
from shared.dead_letters import DETECT, dead_letter_headers
from shared.kafka.topics import declared_topics
from shared.settings import PROJECT_ROOT, Settings
from shared.settings_catalogue import declared
from shared.tracing import headers as trace_headers

README = PROJECT_ROOT / "README.md"
DOCS = PROJECT_ROOT / "docs"
ARCHITECTURE = DOCS / "architecture.md"
CLI = DOCS / "cli.md"
CONFIGURATION = DOCS / "configuration.md"
#: Where the data plane's code writes headers.
HEADER_CODE = ("shared", "services", "tools")
VARIABLE = re.compile(r"\bMESH_[A-Z0-9_]*[A-Z0-9]\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")
DOCS_MENTION = re.compile(r"\bdocs/[\w.-]+\.md\b")
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def _section(path: Path, title: str) -> str:
    """The text under the level-2 heading ``## <title>``, up to the next level-2 heading."""
    lines = path.read_text().splitlines()
    start = lines.index(f"## {title}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])


def _table_rows(text: str) -> dict[str, list[str]]:
    """Markdown table rows whose first cell is a code span: that name -> the other cells."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in UNESCAPED_PIPE.split(line.strip().strip("|"))]
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def _commands(parser: argparse.ArgumentParser) -> list[list[str]]:
    """Every verb path the parser takes: ``[["up"], ..., ["broker", "start"], ...]``."""
    found: list[list[str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += [[name, *rest] for rest in _commands(sub)] or [[name]]
    return found


def _mentions_command(text: str, words: list[str]) -> bool:
    """``text`` has a code span that starts with ``mesh <words>`` (options may follow)."""
    return re.search(r"`mesh " + re.escape(" ".join(words)) + r"(?=[ `])", text) is not None


def _header_constants(folders: tuple[str, ...]) -> set[str]:
    """The values of the code's module-level ``*_HEADER = "..."`` string constants."""
    found: set[str] = set()
    for folder in folders:
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            for node in ast.parse(path.read_text()).body:
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)
                    and any(isinstance(t, ast.Name) and t.id.endswith("_HEADER")
                            for t in node.targets)
                ):  # fmt: skip
                    found.add(node.value.value)
    return found


def _dead_letter_names_in_code(folders: tuple[str, ...]) -> set[str]:
    """Every ``mesh.error.*`` string in the code, wherever a service spells one (the Spark jobs
    build theirs as columns, outside :func:`dead_letter_headers`)."""
    names: set[str] = set()
    for folder in folders:
        for path in (PROJECT_ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and re.fullmatch(
                    r"mesh\.error\.[a-z.]+", str(node.value)
                ):
                    names.add(node.value)
    return names


def test_topics_table_lists_every_declared_topic_with_its_partitions_and_cleanup() -> None:
    """A topic added to, removed from or resized in infra/topics.yaml is a contract change:
    users size consumers and retention by this table, so it must follow the declaration."""
    specs = {spec.name: spec for spec in declared_topics(Settings.from_env({}))}
    rows = _table_rows(_section(ARCHITECTURE, "Topics"))
    declared_as = {
        name: [str(spec.partitions), spec.config.get("cleanup.policy", "delete")]
        for name, spec in specs.items()
    }
    documented_as = {name: cells[:2] for name, cells in rows.items()}
    assert [name for name in declared_as if name not in documented_as] == []  # rows to add
    assert [name for name in documented_as if name not in declared_as] == []  # rows to drop
    assert {n: (documented_as[n], declared_as[n]) for n in declared_as
            if documented_as[n] != declared_as[n]} == {}  # fmt: skip


def test_cli_pages_name_every_mesh_verb_and_no_verb_that_is_gone() -> None:
    """The verbs are what operators type; a verb the parser gained must be documented, and a
    documented verb the parser lost would send a reader to an error."""
    parser = build_parser()
    commands = _commands(parser)
    verbs = {words[0] for words in commands}
    for page in (_section(ARCHITECTURE, "Command line (`mesh`)"), CLI.read_text()):
        assert [" ".join(w) for w in commands if not _mentions_command(page, w)] == []
        named = set(re.findall(r"`mesh ([a-z][a-z-]*)", page))
        assert sorted(named - verbs) == []


def test_headers_section_names_every_header_the_code_writes() -> None:
    """Receivers of dead letters, alerts and webhooks parse these names; each one the code
    defines (a constant, a dead-letter header, a ``*_HEADER``) must be in the contract."""
    example = dead_letter_headers(stage=DETECT, exc=ValueError("x"), topic="t", partition=0,
                                  offset=0, instance_id="i", detector="d")  # fmt: skip
    names = {
        trace_headers.TRACEPARENT,
        trace_headers.TRACESTATE,
        *lineage.LINEAGE_HEADERS,
        lineage.SOURCE_TIMESTAMP_HTTP_HEADER,
        changelog.SOURCE_TOPIC,
        changelog.SOURCE_OFFSET,
        outputs.CHANNEL_HEADER,
        webhook.IDEMPOTENCY_HEADER,
        *(name for name, _ in example),
        *_header_constants(HEADER_CODE),
        *_dead_letter_names_in_code(HEADER_CODE),
    }
    assert "mesh.error.stage" in names and "mesh.error.attempts" in names  # both scans ran
    section = _section(ARCHITECTURE, "Headers")
    assert sorted(name for name in names if f"`{name}`" not in section) == []


def test_raw_records_section_names_every_field_of_each_raw_type() -> None:
    """Customers build their JSON from this section; a field a schema gains or drops changes
    what ingest accepts (``ingest_time`` is ingest's own, not the customer's)."""
    catalogue = Catalogue.load(Settings.from_env({}).schemas_dir)
    section = _section(ARCHITECTURE, "Raw records")
    missing = [
        f"{record_type}.{field['name']}"
        for record_type, declaration in RECORD_TYPES.items()
        for field in catalogue.get(declaration.schema).parsed["fields"]
        if field["name"] != "ingest_time" and f"`{field['name']}`" not in section
    ]
    assert missing == []
    assert [t for t in RECORD_TYPES if f"`raw.{t}`" not in section] == []


def test_wire_format_section_gives_the_framing_the_code_writes() -> None:
    """Other implementations decode our messages from this description alone."""
    section = " ".join(_section(ARCHITECTURE, "Wire format").split())  # as read, not as wrapped
    assert f"`{single_object.MARKER.hex(' ').upper()}`" in section
    assert f"{single_object.FINGERPRINT_SIZE}-byte CRC-64-AVRO fingerprint" in section


def test_configuration_page_names_every_declared_setting_and_no_undeclared_one() -> None:
    """docs/configuration.md is where a reader looks a variable up; one missing there is a
    setting nobody finds, and a name the catalogue does not declare is one the code ignores."""
    variables = {item.variable for item in declared()}
    page = set(VARIABLE.findall(CONFIGURATION.read_text()))
    assert sorted(variables - page) == []
    undeclared = {
        path.name: sorted(set(VARIABLE.findall(path.read_text())) - variables)
        for path in (CONFIGURATION, ARCHITECTURE, CLI, README)
    }
    assert {name: found for name, found in undeclared.items() if found} == {}


def test_relative_links_and_docs_mentions_point_at_existing_files() -> None:
    """Reference text moved out of the README into docs/; a link or a `docs/x.md` mention left
    pointing at a page that is not there is a dead end for the reader."""
    dead: list[str] = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        text = page.read_text()
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#", 1)[0]).exists():
                dead.append(f"{page.name}: ]({target})")
        dead += [f"{page.name}: {m}" for m in DOCS_MENTION.findall(text)
                 if not (PROJECT_ROOT / m).exists()]  # fmt: skip
    assert dead == []


def test_readme_links_every_docs_page_from_its_index() -> None:
    """The README is short because the rest is in docs/; a page not in its index is one a
    newcomer never finds."""
    index = _section(README, "Where to read more")
    assert [p.name for p in sorted(DOCS.glob("*.md")) if f"](docs/{p.name})" not in index] == []
