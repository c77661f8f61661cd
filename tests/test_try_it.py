"""docs/try-it.md, followed as written: its commands are read from the page itself.

The playground server (``python -m pytest_advreview.testing serve``) and the pytest runs
are separate processes, as in the page's two terminals; the reviews go through the real
Codex CLI to the server on 127.0.0.1.  Only the install block is not run (it needs the
network): it is checked to name the pinned Codex version.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, init_repo, start_interruptible
from pytest_advreview.constants import CODEX_INSTALL_COMMAND
from pytest_advreview.testing.playground import DEFAULT_PORT

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "try-it.md"
_BLOCK = re.compile(r"^```(sh|text)\n(.*?)^```", re.S | re.M)
_EXPORT = re.compile(r"^\s*(export \S+=.*)$", re.M)


def _blocks(language: str) -> list[str]:
    return [
        body for lang, body in _BLOCK.findall(PAGE.read_text(encoding="utf-8")) if lang == language
    ]


def _normal(lines: list[str]) -> list[str]:
    """The export lines with what differs between machines and starts left out."""
    out = [re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", line) for line in lines]
    return [re.sub(r"^export CODEX_HOME=.*$", "export CODEX_HOME=HOME", line) for line in out]


class Terminal:
    """The page's second terminal: a shell in the project with the pasted exports."""

    def __init__(self, project: Path, env: dict[str, str], exports: list[str]) -> None:
        self.project, self.env, self.exports = project, env, exports

    def run(self, block: str) -> subprocess.CompletedProcess[str]:
        script = "\n".join([*self.exports, block])
        return subprocess.run(
            ["bash", "-c", script],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


def _serve(
    block: str, port: int, env: dict[str, str], cwd: Path
) -> tuple[subprocess.Popen[str], list[str], str]:
    """Start the page's serve command (on ``port``); the export lines and all it printed
    up to its closing line (read here: once stopped, the rest of its output is read past
    this reader's buffer)."""
    proc = start_interruptible(
        ["bash", "-c", f"exec {block.strip()} --port {port}"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    exports: list[str] = []
    printed = ""
    while "ends the playground" not in printed:
        line = proc.stdout.readline()
        if not line:
            proc.wait()
            pytest.fail(f"serve ended before it printed its settings:\n{printed}")
        printed += line
        found = _EXPORT.match(line)
        if found:
            exports.append(found.group(1))
    return proc, exports, printed


def _stop(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C, as the page says; the server's remaining output."""
    proc.send_signal(signal.SIGINT)
    try:
        out = proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out
    return out


def test_the_page_goes_from_install_to_a_revise_and_an_approved_review(
    tmp_path: Path, codex_executable: Path
) -> None:
    install, serve_revise, review, serve_approve, fix, cleanup = _blocks("sh")
    (sample,) = _blocks("text")
    # The install block names the pinned Codex, installed the way every message says.
    assert "pip install" in install
    assert CODEX_INSTALL_COMMAND in install
    assert serve_revise.strip().endswith("serve --revise high")
    assert serve_approve.strip().endswith("serve --approve")
    assert "--adversarial-review --advreview-only" in review

    project = init_repo(tmp_path / "project")
    (project / "test_app.py").write_text("def test_app():\n    assert True\n")
    # A test of the project's own that cannot even be collected: --advreview-only keeps
    # it from stopping the review.
    (project / "test_broken.py").write_text("import not_installed_anywhere\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "app")
    temp = tmp_path / "tmp"  # the playground's Codex home and pytest's folders
    temp.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"OPENAI_API_KEY", "CODEX_API_KEY", "CI", "GITHUB_ACTIONS", "PYTEST_ADDOPTS"}
        and not k.startswith(("CODEX_", "ADVREVIEW_"))
    }
    path = [str(Path(sys.executable).parent), str(codex_executable.parent), env.get("PATH", "")]
    # The clean-up removes the per-user state key: this test's own, never the machine's.
    state_home = tmp_path / "state-home"
    env.update(TMPDIR=str(temp), PATH=os.pathsep.join(path), XDG_STATE_HOME=str(state_home))

    # 2. The server (port 0 here: tests run side by side), printing what the page shows.
    server, exports, _ = _serve(serve_revise, 0, env, tmp_path)
    port = int(re.search(r"127\.0\.0\.1:(\d+)", "\n".join(exports)).group(1))  # type: ignore[union-attr]
    try:
        shown = [line.strip() for line in sample.strip().splitlines()]
        assert _normal(exports) == _normal(shown)
        assert f"127.0.0.1:{DEFAULT_PORT}/v1" in sample
        assert f"CODEX_HOME={temp}" in exports[1]
        terminal = Terminal(project, env, exports)

        # 3. REVISE: the plan fails with the scripted finding.
        first = terminal.run(review)
        out = first.stdout + first.stderr
        assert first.returncode == 1, out
        assert "[severity: high] Playground finding: no rollback step" in out
        assert "1 failed" in out
    finally:
        served = _stop(server)
    assert "request(s) answered" in served

    # 4. The same port again, so the pasted lines stay valid; the fixed plan is approved.
    server, again, closing = _serve(serve_approve, port, env, tmp_path)
    try:
        assert again == exports
        second = terminal.run(fix)
        out = second.stdout + second.stderr
        assert second.returncode == 0, out
        assert "approved (passed) — round 2" in out
        # Once more: the stored verdict stands, nothing is sent.
        third = terminal.run(review.strip().splitlines()[-1])
        assert third.returncode == 0, third.stdout
        assert "no reviewer call was made" in third.stdout
    finally:
        _stop(server)

    # 5. Clean up: everything the playground made is gone, and the server's closing line
    # names the variables the page unsets.
    (unset,) = [line for line in cleanup.splitlines() if line.startswith("unset ")]
    assert f"`{unset}` ends the playground" in closing
    assert {line.split()[1].split("=")[0] for line in exports} == set(unset.split()[1:])
    playground = temp / f"advreview-playground-{os.getuid()}"
    key = state_home / "pytest-advreview" / "state.key"
    assert playground.is_dir()
    assert key.is_file()
    assert (project / ".pytest_cache" / "d" / "advreview").is_dir()
    assert terminal.run(cleanup).returncode == 0
    assert not (project / "docs" / "plans" / "try-advreview.md").exists()
    assert not playground.exists()
    assert not key.exists()
    assert not (project / ".pytest_cache" / "d" / "advreview").exists()
    assert git(project, "status", "--porcelain") == ""


# -- the serve command's own arguments ----------------------------------------------------


def _serve_cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_advreview.testing", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        ((), 2, "one of the arguments --approve --revise --script is required"),
        (("--revise", "low"), 2, "invalid choice: 'low' (choose from"),
        (("--approve", "--revise", "high"), 2, "not allowed with argument"),
        (("--approve", "--port", "70000"), 2, "expected a port from 0 to 65535"),
        (("--script", "missing.json"), 2, "serve: cannot read missing.json"),
        (("--script", "not-json.json"), 2, "serve: not-json.json is not JSON"),
        (("--script", "bad-rules.json"), 2, "'rules' must be a list"),
    ],
)
def test_bad_serve_arguments_are_one_usage_line_not_a_traceback(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    status: int,
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "not-json.json").write_text("{rules")
    (tmp_path / "bad-rules.json").write_text('{"rules": 3}')
    proc = _serve_cli(*args, tmp_path=tmp_path)
    assert proc.returncode == status
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_a_busy_port_names_the_fix(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _serve_cli("--approve", "--port", str(port), tmp_path=tmp_path)
    assert proc.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "pass --port N, or --port 0 for any free port" in proc.stderr


def test_a_script_file_answers_and_is_named(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"rules": [], "default": {"message": "VERDICT: APPROVED"}}')
    server, exports, _ = _serve(
        f"{sys.executable} -m pytest_advreview.testing serve --script {script}",
        0,
        {**os.environ, "TMPDIR": str(tmp_path)},
        tmp_path,
    )
    _stop(server)
    assert exports[0] == "export ADVREVIEW_FAKE_KEY=advreview-fake-key"
