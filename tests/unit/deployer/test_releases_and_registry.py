"""Releases are exact, immutable copies; the registry round-trips what is deployed."""

import json
from dataclasses import replace

from control.deploy.registry import RUNNING, STOPPED, Deployment, Registry
from control.deploy.releases import folder_digest, snapshot


def _detector_folder(root):
    folder = root / "source"
    (folder / "__pycache__").mkdir(parents=True)
    (folder / "manifest.yaml").write_text("name: x\n")
    (folder / "detector.py").write_text("print('v1')\n")
    (folder / "tables").mkdir()
    (folder / "tables" / "limits.yaml").write_text("EUR: 1\n")
    (folder / "__pycache__" / "detector.cpython-311.pyc").write_bytes(b"compiled")
    return folder


def test_a_release_copies_the_sources_and_leaves_compiled_files_behind(tmp_path):
    folder = _detector_folder(tmp_path)
    release = snapshot(folder, tmp_path / "releases", 1, "1.0.0")
    copied = sorted(
        str(p.relative_to(release.path)) for p in (tmp_path / "releases").rglob("*") if p.is_file()
    )
    assert copied == ["detector.py", "manifest.yaml", "tables/limits.yaml"]
    assert release.digest == folder_digest(folder)


def test_the_digest_changes_with_any_source_file_but_not_with_bytecode(tmp_path):
    folder = _detector_folder(tmp_path)
    before = folder_digest(folder)
    (folder / "__pycache__" / "other.pyc").write_bytes(b"more")
    assert folder_digest(folder) == before
    (folder / "tables" / "limits.yaml").write_text("EUR: 2\n")
    assert folder_digest(folder) != before


def test_a_release_does_not_change_when_the_source_is_edited_afterwards(tmp_path):
    folder = _detector_folder(tmp_path)
    release = snapshot(folder, tmp_path / "releases", 1, "1.0.0")
    (folder / "detector.py").write_text("print('v2')\n")
    assert (tmp_path / "releases" / "1-1.0.0" / "detector.py").read_text() == "print('v1')\n"
    assert release.digest != folder_digest(folder)


def test_the_registry_round_trips_a_deployment_and_numbers_releases(tmp_path):
    registry = Registry(tmp_path)
    folder = _detector_folder(tmp_path)
    assert registry.get("x") is None and registry.next_seq("x") == 1
    first = snapshot(folder, registry.releases_dir("x"), 1, "1.0.0")
    deployment = Deployment("x", str(folder), RUNNING, 2, first).with_event("deployed v1.0.0")
    registry.save(deployment)
    assert registry.get("x") == deployment
    assert registry.next_seq("x") == 2
    stopped = deployment.with_event("stopped", desired=STOPPED)
    registry.save(stopped)
    assert [d.desired for d in registry.all()] == [STOPPED]
    assert [event.split(" ", 2)[2] for event in registry.get("x").history] == [
        "deployed v1.0.0",
        "stopped",
    ]


def test_an_unreadable_deployment_file_is_ignored_not_fatal(tmp_path):
    registry = Registry(tmp_path)
    (registry.folder("broken")).mkdir(parents=True)
    (registry.folder("broken") / "deployment.json").write_text('{"name": "broken"}')
    assert registry.get("broken") is None and registry.all() == []


def test_a_scaled_count_round_trips_and_older_files_read_as_not_scaled(tmp_path):
    registry = Registry(tmp_path)
    source = _detector_folder(tmp_path)
    release = snapshot(source, registry.releases_dir("x"), 1, "1.0.0")
    scaled = Deployment("x", str(source), RUNNING, 3, release, scaled=True)
    registry.save(scaled)
    assert registry.get("x") == scaled and registry.get("x").scaled

    document = json.loads((registry.folder("x") / "deployment.json").read_text())
    del document["scaled"]  # as written before `mesh scale` existed
    (registry.folder("x") / "deployment.json").write_text(json.dumps(document))
    assert registry.get("x") == replace(scaled, scaled=False)
