"""What leaves the process, from real runs: the real Codex CLI against the scripted server
(its event stream is what the progress display shows).

A reviewer that got hold of the job's credentials writes them into its findings (plain,
wrapped over a line, URL-encoded), and its text speaks as the CI (``::stop-commands::``,
``::notice``, ``##[error]``, escape sequences).  No output of the run may carry a
credential, no log line may issue a workflow command but the plugin's own, and a plan
whose file name would forge lines is refused.
"""

from __future__ import annotations

import json
import re
import secrets
import string
from urllib.parse import quote, quote_plus, unquote, unquote_plus

import pytest

from conftest import ReviewRepo, json_strings
from pytest_advreview.testing import FindingSpec, review_text, shell_step

#: What a reviewer's command runs after its ``echo``: wait until the progress display
#: has shown it running (a line in the run's ``./stdout``; at most 30 s).
SHOWN_RUNNING = (
    "i=0; until grep -q 'running: echo' stdout || [ $i -ge 600 ]; do i=$((i+1)); sleep 0.05; done"
)


def _alnum(n: int) -> str:
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(n))


class Planted:
    """Credentials of the job, under names no filter by name would catch."""

    def __init__(self) -> None:
        self.pat = "ghp_" + _alnum(36)
        self.db_password = "Pw-" + _alnum(20)
        self.db_url = f"postgres://svc:{self.db_password}@db.internal:5432/app?sslmode=require"
        self.second_hook = f"https://hooks.example.com/services/T2/B2/{_alnum(24)}"
        self.hooks = f"https://hooks.example.com/services/T1/B1/{_alnum(24)},{self.second_hook}"
        self.state_key = secrets.token_hex(32)

    def env(self) -> dict[str, str]:
        return {
            "DEPLOY_PAT": self.pat,
            "DATABASE_URL": self.db_url,
            "NOTIFY_HOOKS": self.hooks,
            "ADVREVIEW_STATE_KEY": self.state_key,
        }

    def values(self) -> dict[str, str]:
        """Every value that must not appear, by what it is."""
        return {
            "pat": self.pat,
            "db password": self.db_password,
            "db url": self.db_url,
            "second hook": self.second_hook,
            "state key": self.state_key,
        }

    def leaks(self, text: str) -> list[str]:
        """The planted values ``text`` carries: plain, re-joined over white space, or
        URL-encoded."""
        joined = re.sub(r"\s+", "", text)
        forms = (text, joined, unquote(text), unquote_plus(text), unquote(joined))
        return sorted(
            what
            for what, value in self.values().items()
            if any(value in form or value.lower() in form for form in forms)
        )


def _hostile_review(p: Planted) -> str:
    split = p.pat[:14] + "\n    " + p.pat[14:]  # wrapped over a line
    spaced = " ".join(p.state_key[i : i + 16] for i in range(0, 64, 16))
    return review_text(
        "REVISE",
        [
            FindingSpec(
                "critical",
                f"Deploy token {p.pat} is printed",
                section="Rollout",
                what=f"The build log shows {split} to everyone.",
                why=f"The connection {quote(p.db_url, safe='')} is logged with "
                f"{quote_plus(p.db_password)}.",
                impact=f"Anyone can post to {p.second_hook} and forge state with {spaced}.",
                recommendation=f"Rotate {quote_plus(p.state_key)} and {p.db_password}.",
            ),
            FindingSpec("medium", f"Hook {quote(p.second_hook)} is shared", section="Rollout"),
        ],
        summary=f"The reviewer read the environment: {p.pat}, {p.db_url}.",
    )


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_no_output_of_a_run_carries_a_credential_the_reviewer_wrote(
    review_repo: ReviewRepo,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
    workers: list[str],
) -> None:
    planted = Planted()
    for name, value in planted.env().items():
        monkeypatch.setenv(name, value)
    out = tmp_path_factory.mktemp("reports")
    summary = out / "step-summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    review_repo.plan("deploy.md", "# Plan\n\n## Rollout\n\nDeploy with the token.\n")
    review_repo.plan("notes.md", "# Notes\n\n## Rollout\n\nShare the hook.\n")
    hostile = _hostile_review(planted)
    # The reviewer also runs a command that names the token (the progress display's
    # line in the log shows what it runs; there is none under xdist).
    command = f"echo {planted.pat}" if workers else f"echo {planted.pat}; {SHOWN_RUNNING}"
    review_repo.answer("deploy.md", shell_step(command), {"message": hostile})
    medium = review_text("REVISE", [FindingSpec("medium", f"Token {planted.pat} is shared")])
    review_repo.answer("notes.md", {"message": medium})

    result = review_repo.run_subprocess(
        "--advreview-diff=none",
        "--advreview-fail-on=high",
        "--advreview-progress=1",
        "-rA",
        "-W",
        "default::pytest_advreview.outcome.ReviewWarning",
        f"--advreview-json={out}/results.json",
        f"--advreview-report={out}/report.md",
        f"--advreview-sarif={out}/advreview.sarif",
        f"--junitxml={out}/junit.xml",
        *workers,
    )

    result.assert_outcomes(passed=1, failed=1, warnings=1)
    stdout = result.stdout.str()
    outputs = {
        "terminal": stdout + result.stderr.str(),
        "json": json_strings(json.loads((out / "results.json").read_text())),
        "sarif": json_strings(json.loads((out / "advreview.sarif").read_text())),
        "markdown": (out / "report.md").read_text(),
        "step summary": summary.read_text(),
        "junit": (out / "junit.xml").read_text(),
    }
    leaked = {name: planted.leaks(text) for name, text in outputs.items()}
    assert leaked == {name: [] for name in outputs}
    # The findings did reach every output, redacted: the test looked where they are.
    for name, text in outputs.items():
        assert "[redacted:" in text, name
    assert "[redacted:DEPLOY_PAT]" in stdout
    assert "::error file=docs/plans/deploy.md" in stdout


#: Commands the GitHub runner knows (actions/runner: the registered command extensions).
_RUNNER_COMMANDS = frozenset(
    {
        "add-mask",
        "add-matcher",
        "add-path",
        "debug",
        "echo",
        "endgroup",
        "error",
        "group",
        "notice",
        "remove-matcher",
        "save-state",
        "set-env",
        "set-output",
        "stop-commands",
        "warning",
    }
)


def _runner_commands(log: str) -> list[str]:
    """The lines of ``log`` the GitHub runner would process as workflow commands.

    As actions/runner's ``ActionCommandManager`` reads a step's output: a line is split
    at CR and LF; ``::name …::data`` after leading white space, else ``##[name …]data``
    anywhere in the line; while stopped, only the stop token resumes.
    """
    processed: list[str] = []
    stop: str | None = None
    for line in re.split(r"\r\n|\r|\n", log):
        known = _RUNNER_COMMANDS | ({stop} if stop else set())
        name = data = None
        trimmed = line.lstrip()
        if trimmed.startswith("::") and (end := trimmed.find("::", 2)) > 0:
            head = trimmed[2:end].split(" ", 1)[0]
            if head in known:
                name, data = head, trimmed[end + 2 :]
        if name is None and (start := line.find("##[")) >= 0 and (rb := line.find("]", start)) > 0:
            head = line[start + 3 : rb].split(" ", 1)[0]
            if head in known:
                name, data = head, line[rb + 1 :]
        if name is None:
            continue
        if stop is not None:
            if name == stop:
                stop = None
            continue
        if name == "stop-commands":
            stop = data
        processed.append(line)
    return processed


def test_review_text_cannot_speak_as_the_ci_and_the_gates_error_survives(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    review_repo.plan("deploy.md", "# Plan\n\n## Rollout\n\nDeploy in waves.\n")
    hostile = review_text(
        "REVISE",
        [
            FindingSpec(
                "critical",
                "Rollback \x1b[2K\r PASSED ##[error]forged-title",
                section="Rollout",
                what="Nothing.\n::notice ::forged-what\n\x1b]52;c;Zm9yZ2Vk\x07 done",
            )
        ],
        summary="Reviewed.\n::stop-commands::x\n::notice ::forged-summary\n"
        "  ::error ::forged-indented\n##[warning]forged-v1\n\x1b[1A\x1b[2K rewritten",
    )
    review_repo.answer(
        "deploy.md",
        shell_step(
            f"echo '::notice ::forged-progress' '##[error]forged-progress'; {SHOWN_RUNNING}"
        ),
        {"message": hostile},
    )

    result = review_repo.run_subprocess(
        "--advreview-diff=none", "--advreview-progress=1", "-rA", "-v"
    )

    result.assert_outcomes(failed=1)
    # The log as the runner reads it: the raw bytes (pytester's lines drop a lone CR).
    log = (review_repo.path / "stdout").read_text(encoding="utf-8", errors="replace")
    log += (review_repo.path / "stderr").read_text(encoding="utf-8", errors="replace")
    # The gate's own final error, as the action prints it after pytest.
    final = "::error::pytest-advreview: gate failed: 1 review(s) failed"
    processed = _runner_commands(log + "\n" + final + "\n")
    annotations = [line for line in processed if line.startswith("::error file=")]
    others = [line for line in processed if line not in annotations]
    # Nothing but the plugin's own pause (around the summary, with a token no reviewer
    # knows) and the gate's final error: every forged command stayed text.
    assert len(others) == 2, others
    assert others[0].startswith("::stop-commands::") and others[0] != "::stop-commands::x"
    assert others[1] == final
    assert len(annotations) == 1
    assert annotations[0].startswith("::error file=docs/plans/deploy.md,line=3,endLine=3,")
    # The review reached the log (escaped and defused), and nothing drives the terminal.
    assert "\\::notice ::forged-summary" in log
    assert "\x1b" not in log and "\r" not in log and "\x07" not in log


def test_a_plan_whose_name_would_forge_log_lines_is_refused(scripted_repo: ReviewRepo) -> None:
    name = "evil\n::notice ::forged\x1b[2K.md"
    scripted_repo.plan(name, "# Plan\n\n1. Do it.\n")
    scripted_repo.plan("fine.md")

    result = scripted_repo.run_subprocess("--advreview-diff=none")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "the plan file 'docs/plans/evil\\x0a::notice ::forged\\x1b[2K.md'" in err
    assert "rename the file" in err
    assert "\x1b" not in result.stdout.str() + err
    assert scripted_repo.server.response_requests == []  # nothing was reviewed
