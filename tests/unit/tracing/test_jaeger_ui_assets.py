"""The trace viewer's files as Jaeger will serve them, and which UI folder the local Jaeger gets.

Jaeger's query service serves ``static/`` of its assets folder as files and ``index.html`` for
every other path, after rewriting two lines of it (its version, and the base href under a base
path): the viewer has to keep those lines and everything it loads under ``static/``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import yaml

from hosting.servers.jaeger import VIEWER, LocalJaeger, default_ui_assets, render_config
from shared.settings import Settings

# The patterns of Jaeger v1.76's cmd/query/app/static_handler.go that must match index.html.
JAEGER_VERSION_PATTERN = re.compile(r"JAEGER_VERSION *= *DEFAULT_VERSION;")
BASE_HREF_PATTERN = re.compile(r'<base href="/"')


def _viewer_files() -> list[Path]:
    return [path for path in VIEWER.rglob("*") if path.is_file()]


def test_index_loads_only_files_under_static_that_exist() -> None:
    page = (VIEWER / "index.html").read_text()
    referenced = re.findall(r'(?:src|href)="([^"#]+)"', page)
    loaded = [ref for ref in referenced if ref != "/"]  # "/" is the <base href>

    assert sorted(loaded) == ["static/trace-viewer.css", "static/trace-viewer.js"]
    assert all((VIEWER / ref).is_file() for ref in loaded)


def test_viewer_names_no_external_url() -> None:
    for path in _viewer_files():
        assert not re.search(r"(?:https?:)?//[\w.-]+\.\w", _code(path)), path


def _code(path: Path) -> str:
    """A file's text without its comments' prose: only what the browser would fetch counts."""
    text = path.read_text()
    if path.suffix == ".html":
        return re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def test_index_keeps_the_lines_jaeger_rewrites() -> None:
    page = (VIEWER / "index.html").read_text()

    assert len(JAEGER_VERSION_PATTERN.findall(page)) == 1
    assert len(BASE_HREF_PATTERN.findall(page)) == 1


def test_local_jaeger_serves_the_viewer_when_the_cache_has_no_ui_build(tmp_path: Path) -> None:
    settings = replace(Settings.from_env(), cache=tmp_path / "cache", home=tmp_path / "home")

    assert default_ui_assets(settings) == VIEWER
    assert LocalJaeger(settings).ui_assets == VIEWER


def test_a_ui_build_in_the_cache_takes_precedence(tmp_path: Path) -> None:
    settings = replace(Settings.from_env(), cache=tmp_path / "cache", home=tmp_path / "home")
    build = settings.cache / "jaeger" / "ui"
    build.mkdir(parents=True)
    (build / "index.html").write_text("<!doctype html><title>Jaeger UI</title>")

    assert default_ui_assets(settings) == build
    config = yaml.safe_load(render_config(1, 2, ui_assets=LocalJaeger(settings).ui_assets))
    assert config["extensions"]["jaeger_query"]["ui"] == {"assets_path": str(build)}


def test_no_index_anywhere_leaves_jaeger_its_placeholder(tmp_path: Path) -> None:
    settings = replace(Settings.from_env(), cache=tmp_path / "cache")

    assert default_ui_assets(settings, viewer=tmp_path / "no-viewer") is None
