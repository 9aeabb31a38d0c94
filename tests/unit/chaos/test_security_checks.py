"""The secure case's leak check finds a password wherever it shows up, and only there."""

from __future__ import annotations

from pathlib import Path

from chaos.security import _leaks


def test_a_password_in_any_text_is_a_leak_named_by_its_principal_and_place(tmp_path: Path) -> None:
    secret = tmp_path / "detector-echo.password"
    secret.write_text("hunter2-long-random\n")
    texts = {"the log": "login as detector-echo ok", "the status": '{"x": "hunter2-long-random"}'}
    assert _leaks(texts, [secret]) == ["the password of detector-echo is in the status"]
    assert _leaks({"the log": "nothing here"}, [secret]) == []
