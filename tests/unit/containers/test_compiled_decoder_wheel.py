"""The Python image gets the compiled Avro decoder as a wheel built here, or goes without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hosting.containers import images


def test_without_cargo_the_image_goes_without_the_wheel_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(images.shutil, "which", lambda _: None)
    said: list[str] = []
    images.compiled_decoder_wheel(tmp_path / "wheels", said.append)
    assert list((tmp_path / "wheels").iterdir()) == []  # the Dockerfile's COPY still finds it
    assert len(said) == 1 and "fastavro" in said[0]
