"""The GitHub Action (``action.yml``), run locally the way the runner would (real Codex CLI).

Each test builds a scratch repository (a base commit on ``main`` and a pull-request branch),
runs the action's steps with :class:`action_kit.LocalRunner` (``run:`` scripts under bash
with the runner's variables; the cache steps stood in for by copying the state folders)
and points the real Codex CLI at the scripted model server. A fresh ``RUNNER_TEMP`` for
every run: only what the cache steps carried survives, as on GitHub's runners.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from action_kit import ActionResult, GitHubAPI, LocalRunner, clean_env
from conftest import git
from pytest_advreview.constants import EXIT_REVIEW_ERRORS
from pytest_advreview.testing import (
    FindingSpec,
    ScriptedServer,
    approved_review,
    codex_provider_args,
    offline_env,
    revise_review,
)

pytestmark = pytest.mark.real_codex

ACTION = Path(__file__).resolve().parents[1]
REPO = "acme/widgets"
HIGH = FindingSpec("high", "Rollback restores a stale backup", section="Rollback")
PLAN = "# Plan\n\n1. Migrate.\n\n## Rollback\nRestore the backup.\n"
#: In every request of a plan review, resumed rounds included (their history repeats it),
#: and in no code review's request (which names the plans it leaves out).
PLAN_PROMPT = "Review the implementation plan in"
#: Files of the pull request that must never be imported or executed by the gate: each
#: leaves a marker file named after itself and then fails loudly.
TRAPS = {
    "conftest.py": "conftest",
    "tests/conftest.py": "tests-conftest",
    "tests/test_app.py": "test-module",
    "docs/__init__.py": "docs-package",
    "docs/plans/__init__.py": "plans-package",
    "pytest.py": "shadowing-pytest",
    "pytest_advreview/__init__.py": "shadowing-plugin",
}


def trap(marker: Path) -> str:
    return (
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('x')\n"
        f"raise RuntimeError('the gate imported {marker.name}')\n"
    )


class Scratch:
    """A pull request in a scratch repository, and the action run against it."""

    def __init__(
        self, root: Path, server: ScriptedServer, codex: Path, env: dict[str, str]
    ) -> None:
        self.root = root
        self.work = root / "work"
        self.server = server
        self.codex = codex
        self.env = env
        self.cache = root / "cache"
        self.runs = 0
        self.work.mkdir(parents=True)
        git(self.work, "init", "-q", "-b", "main")
        git(self.work, "config", "user.name", "Test")
        git(self.work, "config", "user.email", "test@example.invalid")
        git(self.work, "config", "commit.gpgsign", "false")
        self.write("README.md", "# widgets\n")
        self.write(".gitignore", "__pycache__/\n")
        self.base = self.commit("base")
        git(self.work, "checkout", "-q", "-b", "feature")

    def write(self, relpath: str, text: str) -> Path:
        path = self.work / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def commit(self, message: str) -> str:
        git(self.work, "add", "-A")
        git(self.work, "commit", "-qm", message)
        return git(self.work, "rev-parse", "HEAD").strip()

    def add_traps(self, *names: str) -> None:
        for relpath in names or tuple(TRAPS):
            self.write(relpath, trap(self.root / f"IMPORTED-{TRAPS[relpath]}"))

    def imported(self) -> list[str]:
        return sorted(p.name for p in self.root.glob("IMPORTED-*"))

    def fork_checkout(self, head: str) -> None:
        """Become the job's checkout of a fork's pull request at ``head``: the base only,
        the head reachable in the origin as ``refs/pull/7/head`` (fetched as data)."""
        origin = self.root / "origin.git"
        git(self.root, "clone", "-q", "--bare", str(self.work), str(origin))
        git(origin, "update-ref", "refs/pull/7/head", head)
        git(origin, "branch", "-D", "feature")
        workspace = self.root / "base-checkout"
        git(self.root, "clone", "-q", "--single-branch", "-b", "main", str(origin), str(workspace))
        self.work = workspace

    def answer(self, rules: list[dict[str, Any]]) -> None:
        self.server.set_script({"rules": rules, "default": {"message": approved_review()}})

    def pr_event(self, **pr: Any) -> dict[str, Any]:
        head = git(self.work, "rev-parse", "HEAD").strip()
        return {
            "action": "synchronize",
            "number": 7,
            "pull_request": {
                "number": 7,
                "user": {"login": "alice"},
                "author_association": "CONTRIBUTOR",
                "base": {"sha": self.base, "ref": "main", "repo": {"full_name": REPO}},
                "head": {"sha": head, "ref": "feature", "repo": {"full_name": REPO}},
                **pr,
            },
            "sender": {"login": "alice"},
        }

    def inputs(self, **extra: str) -> dict[str, str]:
        args = [f"--advreview-codex-config={v}" for v in codex_provider_args(self.server.url)]
        return {
            "python": sys.executable,
            "codex": str(self.codex),
            "model": "fake-model",
            "reasoning": "low",
            "pytest-args": shlex.join([*args, "--advreview-timeout=60"]),
            **extra,
        }

    def run(
        self,
        event: dict[str, Any] | None = None,
        event_name: str = "pull_request",
        env: dict[str, str] | None = None,
        sha: str | None = None,
        **inputs: str,
    ) -> ActionResult:
        self.runs += 1
        runner_temp = self.root / "runner-temp"
        # A fresh runner: only what the cache steps carry survives from the last run.
        shutil.rmtree(runner_temp, ignore_errors=True)
        runner = LocalRunner(
            action_path=ACTION,
            workspace=self.work,
            runner_temp=runner_temp,
            cache_store=self.cache,
            env={**self.env, **(env or {})},
            event_name=event_name,
            event=event if event is not None else self.pr_event(),
            run_id=1000 + self.runs,
            github={
                "repository": REPO,
                "actor": (env or {}).get("GITHUB_ACTOR", "alice"),
                "ref_name": "7/merge",
                "sha": sha or git(self.work, "rev-parse", "HEAD").strip(),
            },
        )
        return runner.run(self.inputs(**inputs))

    def plan_requests(self, name: str) -> list[Any]:
        return [
            r
            for r in self.server.response_requests
            if f"{PLAN_PROMPT} {name}" in json.dumps(r.body)
        ]


@pytest.fixture
def scratch(
    tmp_path: Path,
    hermetic_git: None,
    advreview_server: ScriptedServer,
    codex_executable: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Scratch:
    # A home of the runner's own, as on GitHub's runners: Codex starts its login shell
    # there, and this machine's profile (a Python version manager, say) has no part in it.
    env = offline_env(
        clean_env(),
        TMPDIR=str(tmp_path_factory.mktemp("codex-tmp")),
        HOME=str(tmp_path_factory.mktemp("runner-home")),
        # Nothing online: a run without the loopback GitHub API (github_api) reaches no
        # API at all (the commands step then warns and no command counts).
        GITHUB_API_URL="http://127.0.0.1:9",
    )
    for name in ("CODEX_HOME", "OPENAI_API_KEY", "CODEX_API_KEY"):
        env.pop(name, None)
    return Scratch(tmp_path, advreview_server, codex_executable, env)


def _json(result: ActionResult) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(result.outputs["json"]).read_text(encoding="utf-8"))
    return data


def test_revise_fails_keeps_its_state_and_the_next_push_resumes_at_round_2(
    scratch: Scratch, github_api: GitHubAPI
) -> None:
    plan = scratch.write("docs/plans/x.md", PLAN)
    scratch.add_traps()
    scratch.commit("plan and code")
    scratch.answer(
        [
            {
                "match": f"{PLAN_PROMPT} docs/plans/x.md",
                "in": "body",
                "steps": [{"message": revise_review(HIGH)}, {"message": approved_review()}],
            }
        ]
    )

    api = {"GITHUB_API_URL": github_api.url}
    first = scratch.run(env=api, comment="true")

    assert not first.ok
    assert ("review", 1) in first.ran
    assert first.outputs["outcome"] == "failed"
    assert (first.outputs["passed"], first.outputs["failed"], first.outputs["errored"]) == (
        "1",
        "1",
        "0",
    )  # the plan failed, the code change passed
    for name in ("json", "report", "sarif"):
        assert Path(first.outputs[name]).is_file(), name
    assert first.outputs["base"] == scratch.base
    assert first.outputs["head"] == git(scratch.work, "rev-parse", "HEAD").strip()
    # The step summary carries the markdown report with the finding.
    assert "Rollback restores a stale backup" in first.summary
    assert "docs/plans/x.md" in first.summary
    # The state was saved although the gate failed, and the save ran after the failure.
    assert [name for name, _ in first.ran][-2:] == [
        "Save review state and Codex sessions",
        "Comment on the pull request",
    ]
    assert len(list(scratch.cache.iterdir())) == 1
    assert scratch.imported() == []
    # The report became the pull request's comment, posted with the job's token.
    (posted,) = github_api.comments[7]
    comment = dict(posted)  # the stub updates its own copy in place
    assert comment["body"].startswith("<!-- pytest-advreview:report -->")
    assert "Rollback restores a stale backup" in comment["body"]
    assert github_api.calls[-1][0] == "POST"
    assert github_api.calls[-1][3] == "Bearer local-token"
    first_thread = scratch.plan_requests("docs/plans/x.md")[0].thread_id

    plan.write_text(PLAN.replace("Restore the backup.", "Dual-write, then switch readers."))
    scratch.commit("fix the rollback")
    second = scratch.run(env=api, comment="true")

    assert second.ok, second.log
    assert second.outputs["outcome"] == "passed"
    assert (second.outputs["passed"], second.outputs["failed"]) == ("2", "0")
    items = {item["record"]["key"]: item["record"] for item in _json(second)["items"]}
    assert len(items["docs/plans/x.md"]["rounds"]) == 2  # round 2, not a new round 1
    requests = scratch.plan_requests("docs/plans/x.md")
    assert len(requests) == 2
    assert requests[1].thread_id == first_thread  # resumed the stored thread
    assert "## Applied" in requests[1].last_user_text
    assert scratch.imported() == []
    # The same comment, updated: one report per pull request however many pushes.
    (updated,) = github_api.comments[7]
    assert updated["id"] == comment["id"]
    assert updated["body"] != comment["body"]
    assert github_api.calls[-1][0] == "PATCH"


def test_nothing_to_review_succeeds_with_a_notice(scratch: Scratch) -> None:
    scratch.add_traps("conftest.py")
    scratch.commit("a conftest on main")
    # The pull request's head is its base: nothing changed.
    scratch.base = git(scratch.work, "rev-parse", "HEAD").strip()

    result = scratch.run()

    assert result.ok, result.log
    assert result.outputs["outcome"] == "empty"
    assert result.outputs["failed"] == "0"
    assert "::notice::pytest-advreview: nothing to review" in result.log
    assert "nothing to review" in result.summary
    assert scratch.server.response_requests == []
    assert scratch.imported() == []


def test_deselected_reviews_are_not_nothing_to_review(scratch: Scratch) -> None:
    """pytest-args that deselect the review items: the gate did not run, it is not empty.

    (pytest alone says "no tests ran", exit 5, and the JSON report has no item: before
    the gate check the action took that for "nothing to review" and passed.)
    """
    scratch.write("docs/plans/x.md", PLAN)
    scratch.commit("a plan")
    scratch.answer(
        [
            {
                "match": f"{PLAN_PROMPT} docs/plans/x.md",
                "in": "body",
                "steps": [{"message": revise_review(HIGH)}],
            }
        ]
    )
    args = shlex.split(scratch.inputs()["pytest-args"])

    result = scratch.run(**{"pytest-args": shlex.join([*args, "-m", "not adversarial_review"])})

    assert not result.ok
    assert result.outputs["outcome"] == "error"
    assert result.steps["review"]["exit-code"] == str(EXIT_REVIEW_ERRORS)
    assert "pytest-advreview: GATE FAILED (CI=true" in result.log
    assert (
        "docs/plans/x.md::adversarial-review: expected the review to run (it was "
        "collected); pytest logged deselected" in result.log
    )
    assert "nothing to review" not in result.log
    assert scratch.server.response_requests == []


EVIL_PLUGIN = """\
from pathlib import Path

Path({marker!r}).write_text("x")


class Approver:
    name = "approver"
    supports_resume = False

    def can_resume(self, session_id):
        return False

    def dispatch(self, request):
        raise RuntimeError("never reached: the gate must not use this reviewer")


def pytest_advreview_make_reviewer(config, name):
    return Approver()
"""


def test_the_pull_request_cannot_configure_its_own_gate(scratch: Scratch) -> None:
    # The base: strict settings, plans where the team keeps them.
    scratch.write(
        "pyproject.toml",
        '[tool.pytest.ini_options]\nadvreview_fail_on = "medium"\n'
        'advreview_plans = ["design/**/*.md"]\n',
    )
    scratch.base = scratch.commit("gate settings")
    git(scratch.work, "branch", "-f", "main", "HEAD")
    # The pull request: a plan that draws a high finding, and everything that would let
    # it pass: a lower fail-on, no plan globs, its own plugin in addopts, a conftest hook
    # that approves, and variables an earlier step could have written to $GITHUB_ENV.
    scratch.write("design/x.md", PLAN)
    scratch.write(
        "pyproject.toml",
        "[tool.pytest.ini_options]\n"
        'advreview_fail_on = "critical"\n'
        "advreview_plans = []\n"
        'addopts = ["-p", "evil_plugin", "--advreview-fail-on=critical"]\n'
        'advreview_reviewer = "approver"\n',
    )
    scratch.write(
        "evil_plugin.py", EVIL_PLUGIN.format(marker=str(scratch.root / "IMPORTED-evil-plugin"))
    )
    scratch.write(
        "conftest.py", EVIL_PLUGIN.format(marker=str(scratch.root / "IMPORTED-evil-conftest"))
    )
    scratch.commit("lower the bar")
    scratch.answer(
        [
            {
                "match": f"{PLAN_PROMPT} design/x.md",
                "in": "body",
                "steps": [{"message": revise_review(HIGH)}],
            }
        ]
    )

    result = scratch.run(
        env={
            "ADVREVIEW_FAIL_ON": "critical",
            "ADVREVIEW_REVIEWER": "approver",
            "PYTEST_ADDOPTS": "-p evil_plugin",
            "PYTEST_PLUGINS": "evil_plugin",
            "PYTHONPATH": str(scratch.work),
        }
    )

    assert not result.ok
    assert result.outputs["outcome"] == "failed"
    assert result.outputs["failed"] == "1"
    # The real reviewer (Codex against the scripted server) reviewed the plan, under the
    # base's globs and fail-on.
    assert len(scratch.plan_requests("design/x.md")) == 1
    record = next(
        item["record"] for item in _json(result)["items"] if item["record"]["key"] == "design/x.md"
    )
    assert record["fail_on"] == "medium"
    assert record["max_severity"] == "high"
    assert _json(result)["settings"]["reviewer"] == "codex"
    assert scratch.imported() == []


def test_merge_group_reviews_against_the_queue_base(scratch: Scratch) -> None:
    scratch.write("docs/plans/x.md", PLAN)
    head = scratch.commit("plan")
    scratch.answer([])  # everything approved
    event = {"merge_group": {"base_sha": scratch.base, "head_sha": head, "base_ref": "main"}}

    # Two reviews side by side: the plugin and xdist are the only plugins loaded.
    result = scratch.run(event=event, event_name="merge_group", workers="2")

    assert result.ok, result.log
    assert result.outputs["outcome"] == "passed"
    assert (result.outputs["base"], result.outputs["head"]) == (scratch.base, head)
    assert "created: 2/2 workers" in result.log
    assert _json(result)["settings"]["base"] == scratch.base
    assert len(scratch.plan_requests("docs/plans/x.md")) == 1


def test_fork_and_dependabot_pull_requests_are_skipped_with_a_notice(scratch: Scratch) -> None:
    scratch.write("docs/plans/x.md", PLAN)
    scratch.commit("plan")
    fork = scratch.pr_event()
    fork["pull_request"]["head"]["repo"]["full_name"] = "mallory/widgets"

    skipped = scratch.run(event=fork)

    assert skipped.ok
    assert skipped.outputs["outcome"] == "skipped"
    assert "::notice::pytest-advreview: skipped: pull request from a fork" in skipped.log
    assert "review" not in dict(skipped.ran)
    dependabot = scratch.pr_event(user={"login": "dependabot[bot]"})
    bot = scratch.run(event=dependabot, env={"GITHUB_ACTOR": "dependabot[bot]"})
    assert bot.outputs["outcome"] == "skipped", bot.log
    # A human who pushes to a Dependabot branch is reviewed.
    human = scratch.run(event=dependabot)
    assert "review" in dict(human.ran)
    assert scratch.server.response_requests  # the plan went to the reviewer


def test_pull_request_target_without_approval_is_not_reviewed_and_fails(
    scratch: Scratch,
) -> None:
    scratch.write("docs/plans/x.md", PLAN)
    scratch.commit("plan")
    event = scratch.pr_event()
    event["pull_request"]["head"]["repo"]["full_name"] = "mallory/widgets"
    event["action"] = "synchronize"

    result = scratch.run(event=event, event_name="pull_request_target")

    assert not result.ok
    assert result.outputs["outcome"] == "not-approved"
    assert "must apply the label 'advreview'" in result.log
    assert [name for name, _ in result.ran] == ["install", "prepare"]
    assert scratch.server.response_requests == []


@pytest.fixture
def github_api() -> Iterator[GitHubAPI]:
    """The loopback GitHub API: a maintainer with write access, a triager with read."""
    with GitHubAPI(REPO) as api:
        api.permissions.update(maintainer="write", triager="read")
        yield api


def test_pull_request_target_reviews_the_labelled_sha_as_data(
    scratch: Scratch, github_api: GitHubAPI
) -> None:
    # The fork's pull request: a plan that draws a high finding, and a conftest that would
    # approve everything. A push after the label replaces the plan with one the reviewer
    # approves; it must not be reviewed under the old approval.
    scratch.write("docs/plans/x.md", PLAN)
    scratch.add_traps("conftest.py")
    labelled = scratch.commit("fork: plan")
    scratch.write("docs/plans/x.md", "# Plan\n\nPUSHED-AFTER-THE-LABEL\n")
    pushed = scratch.commit("fork: push after the label")
    # The job's checkout: the trusted base only; the head's commits are not in it.
    scratch.fork_checkout(pushed)
    workspace = scratch.work
    scratch.answer(
        [
            {
                "match": "PUSHED-AFTER-THE-LABEL",
                "in": "body",
                "steps": [{"message": approved_review()}],
            },
            {
                "match": f"{PLAN_PROMPT} docs/plans/x.md",
                "in": "body",
                "steps": [{"message": revise_review(HIGH)}],
            },
        ]
    )
    event = scratch.pr_event(
        author_association="NONE",
        head={"sha": labelled, "ref": "feature", "repo": {"full_name": "mallory/widgets"}},
    )
    event.update(action="labeled", label={"name": "advreview"})

    by_triager = scratch.run(
        event={**event, "sender": {"login": "triager"}},
        event_name="pull_request_target",
        env={"GITHUB_API_URL": github_api.url},
    )
    assert by_triager.outputs["outcome"] == "not-approved"
    assert "who has read permission" in by_triager.log
    assert scratch.server.response_requests == []

    result = scratch.run(
        event={**event, "sender": {"login": "maintainer"}},
        event_name="pull_request_target",
        env={"GITHUB_API_URL": github_api.url},
    )

    assert not result.ok
    assert result.outputs["outcome"] == "failed", result.log
    assert result.outputs["head"] == labelled
    records = {item["record"]["key"]: item["record"] for item in _json(result)["items"]}
    record = records["docs/plans/x.md"]
    assert record["max_severity"] == "high"
    requests = scratch.plan_requests("docs/plans/x.md")
    assert requests
    assert not any("PUSHED-AFTER-THE-LABEL" in json.dumps(r.body) for r in requests)
    assert scratch.imported() == []

    # A workflow that checks out the pull request's head under pull_request_target is the
    # classic "pwn request": the action refuses to run there.
    base = git(workspace, "rev-parse", "HEAD").strip()
    git(workspace, "checkout", "-q", labelled)
    misused = scratch.run(
        event={**event, "sender": {"login": "maintainer"}},
        event_name="pull_request_target",
        env={"GITHUB_API_URL": github_api.url},
        sha=base,
    )
    assert misused.outputs["outcome"] == "error"
    assert "reviews from the base checkout" in misused.log
    assert [name for name, _ in misused.ran] == ["install", "prepare"]


def test_a_state_committed_to_the_pull_request_is_not_the_gates_state(scratch: Scratch) -> None:
    plan = f"{PLAN_PROMPT} docs/plans/x.md"
    scratch.write("docs/plans/x.md", PLAN)
    scratch.commit("plan")
    scratch.answer([{"match": plan, "in": "body", "steps": [{"message": approved_review()}]}])
    assert scratch.run().ok
    # The pull request commits the approved state as its own .pytest_cache (what a run
    # with the project's configuration would read), and the gate's cache is empty.
    state = scratch.root / "runner-temp" / "advreview" / "state"
    if state.is_dir():  # (a gate that kept its state in the checkout left it there already)
        shutil.copytree(state, scratch.work / ".pytest_cache")
    git(scratch.work, "add", "-f", ".pytest_cache")
    scratch.commit("bring an approval along")
    shutil.rmtree(scratch.cache)
    scratch.answer([{"match": plan, "in": "body", "steps": [{"message": revise_review(HIGH)}]}])

    result = scratch.run()

    assert result.outputs["outcome"] == "failed"
    assert len(scratch.plan_requests("docs/plans/x.md")) == 2  # reviewed again, not cached
