"""The doctor's rows about the user's own setup: CODEX_HOME, and whether the model answers.

Before, ``pytest --advreview-doctor`` checked only the Codex contract against its own
scripted server: with the model server stopped, or no provider configured at all, every
row passed and the first review then waited in silence.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pytest_advreview.doctor import DoctorRow, ModelCheck
from pytest_advreview.testing import ScriptedServer, codex_provider_args


def _model(rows: list[DoctorRow]) -> DoctorRow:
    (found,) = [r for r in rows if r.name == "model"]
    return found


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return codex_home


def test_a_running_server_passes_and_a_stopped_one_fails_with_the_runners_message(
    home: Path,
) -> None:
    with ScriptedServer({"default": {"http_status": 404}}) as server:
        url = server.url
        config = tuple(codex_provider_args(url))
        up = _model(ModelCheck(config).rows("codex"))
        assert up.status == "PASS", up
        assert url in up.observed
        assert server.requests, "the doctor made no request to the provider"
    down = _model(ModelCheck(config).rows("codex"))
    assert down.status == "FAIL"
    assert down.failed  # required: the doctor's exit status is 1
    assert down.observed.startswith(f"cannot reach the model at {url} (connection refused)")
    assert "is the server running?" in down.observed


def test_a_provider_in_config_toml_is_asked_too(home: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (home / "config.toml").write_text(
        'model_provider = "local"\n[model_providers.local]\nname = "local"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\n',
        encoding="utf-8",
    )
    row = _model(ModelCheck().rows("codex"))
    assert row.status == "FAIL"
    assert f"http://127.0.0.1:{port}/v1 (connection refused)" in row.observed


def test_no_provider_is_a_warning_and_under_online_a_failure(home: Path) -> None:
    offline = _model(ModelCheck().rows("codex"))
    assert (offline.status, offline.failed) == ("WARN", False)
    assert "no model provider is configured for Codex" in offline.observed
    online = _model(ModelCheck(online=True).rows("codex"))
    assert (online.status, online.failed) == ("FAIL", True)


@pytest.mark.parametrize("make", ["missing", "file"])
def test_codex_home_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: str) -> None:
    target = tmp_path / "codex-home"
    if make == "file":
        target.write_text("")
    monkeypatch.setenv("CODEX_HOME", str(target))
    (row,) = [r for r in ModelCheck().rows("codex") if r.name == "codex-home"]
    assert row.status == "FAIL"
    expected = {"missing": "does not exist", "file": "is not a folder"}
    assert expected[make] in row.observed
    assert f"CODEX_HOME={target}" in row.observed


@pytest.mark.real_codex
def test_the_doctor_exits_1_when_the_model_is_down(
    pytester: pytest.Pytester, codex_executable: Path, home: Path
) -> None:
    with ScriptedServer({"default": {"http_status": 404}}) as server:
        url = server.url
    result = pytester.runpytest(
        "--advreview-doctor",
        f"--advreview-codex={codex_executable}",
        *[f"--advreview-codex-config={v}" for v in codex_provider_args(url)],
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"FAIL model — cannot reach the model at {url} (connection*"])


def test_a_built_in_provider_is_not_asked_without_online(home: Path) -> None:
    row = _model(ModelCheck(("model_provider=oss",)).rows("codex"))
    assert row.status == "PASS"
    assert row.observed == (
        "the built-in provider 'oss' (--advreview-codex-config); not asked without "
        "--advreview-doctor-online"
    )
