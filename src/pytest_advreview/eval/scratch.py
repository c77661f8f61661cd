"""Each case's scratch repository, built as the gate would see the change.

* ``plan``: an initial commit (a README) on ``main``, then the plan committed on the
  branch ``change`` at :data:`PLAN_PATH` (a path the default ``advreview_plans`` globs
  select); the plan item reviews that file.
* ``code``: ``base/`` is the initial commit on ``main``; the patch is applied with
  ``git apply --index`` on the branch ``change`` and committed; the code item reviews the
  branch change ``main...HEAD``, with the change set and prompt the gate would build.
* ``code-vs-plan``: as ``code``, with the plan at :data:`PLAN_PATH` in the base commit;
  the change is reviewed against it.

The commits are made with a fixed author, committer and date, so a case's repository is
the same commit graph on every machine.  Nothing in the repository names the case or its
defects: the plan's file name and the commit messages are neutral (the digest of its content in
the change's message is what a scripted test server matches on).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import targets
from ..git import GitError, run_git
from ..material import TargetSpec
from .case import Case, CaseError

__all__ = ["PLAN_PATH", "Scratch", "build", "check_locations", "headings"]

#: Where a case's plan is committed in its scratch repository.
PLAN_PATH = "docs/plans/plan.md"
_BASE_BRANCH = "main"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "advreview eval",
    "GIT_AUTHOR_EMAIL": "eval@advreview.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "advreview eval",
    "GIT_COMMITTER_EMAIL": "eval@advreview.invalid",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
}
_ENV: dict[str, str | None] = {
    **_IDENTITY,
    "GIT_CONFIG_GLOBAL": os.devnull,
    **dict.fromkeys(("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")),
}


@dataclass(frozen=True)
class Scratch:
    """A built case: its repository and the target the review item reviews there."""

    root: Path
    spec: TargetSpec


def _git(repo: Path, *args: str) -> None:
    # Nothing of the user's git configuration (hooks, signing, templates) may change it.
    run_git(repo, *args, nosystem=True, env=_ENV)


def _commit(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--no-verify", "--allow-empty", "-m", message)


def build(case: Case, repo: Path) -> Scratch:
    """Build ``case``'s repository in the empty folder ``repo``.

    :raises CaseError: the patch does not apply, or a defect's location is not there
        (:func:`check_locations`); the message names the case file and the fix.
    """
    spec = case.spec
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q", "-b", _BASE_BRANCH)
    if spec.base is not None:
        shutil.copytree(case.folder / spec.base, repo, dirs_exist_ok=True, symlinks=True)
    else:
        (repo / "README.md").write_text("# project\n", encoding="utf-8")
    plan = repo / PLAN_PATH
    if spec.plan is not None and spec.kind == "code-vs-plan":
        plan.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(case.folder / spec.plan, plan)
    _commit(repo, "Initial commit")
    _git(repo, "checkout", "-q", "-b", "change")
    if spec.kind == "plan":
        assert spec.plan is not None
        plan.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(case.folder / spec.plan, plan)
    else:
        assert spec.patch is not None
        try:
            _git(
                repo,
                "apply",
                "--index",
                "--whitespace=nowarn",
                str((case.folder / spec.patch).resolve()),
            )
        except GitError as exc:
            raise CaseError(
                f"pytest-advreview: eval case {case.file}: field `patch`: {spec.patch} does "
                f"not apply to {spec.base}/ with git apply ({exc.stderr.strip()}); write it "
                "with `git diff` against the base tree"
            ) from None
    _commit(repo, f"Change\n\nadvreview-eval-case: {case.reviewed[:16]}\n")
    if spec.kind == "plan":
        target = TargetSpec(kind="plan", key=PLAN_PATH, path=plan)
    else:
        exclude = [plan] if spec.kind == "code-vs-plan" else []
        change = targets.change_set(repo, "branch", _BASE_BRANCH, exclude)
        if change is None:
            raise CaseError(
                f"pytest-advreview: eval case {case.file}: field `patch`: {spec.patch} "
                "changes nothing; write the change under review as a diff of the base tree"
            )
        against = plan if spec.kind == "code-vs-plan" else None
        target = TargetSpec(kind="code", key="code-review", change=change, against_plan=against)
    scratch = Scratch(root=repo, spec=target)
    check_locations(case, scratch)
    return scratch


_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$")


def headings(text: str) -> list[str]:
    """The ATX heading texts of a markdown document (code fences skipped)."""
    found, fence = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            continue
        match = None if fence else _HEADING.match(line)
        if match:
            found.append(match.group(1).strip())
    return found


def check_locations(case: Case, scratch: Scratch) -> None:
    """Every defect's location exists in the built repository.

    :raises CaseError: a section that is no heading of the plan, a file that is not in
        the change, or lines past the file's end.
    """
    plan_text = None
    if case.spec.plan is not None:
        plan_text = (case.folder / case.spec.plan).read_text(encoding="utf-8")
    change = scratch.spec.change
    for number, defect in enumerate(case.spec.defect):
        where = f"pytest-advreview: eval case {case.file}: field `defect[{number}]"
        if defect.section is not None:
            found = headings(plan_text or "")
            if defect.section.strip() not in found:
                raise CaseError(
                    f"{where}.section`: {defect.section!r} is no heading of the plan "
                    f"(headings: {', '.join(found) or 'none'}); use the heading text without #"
                )
            continue
        assert defect.file is not None and defect.lines is not None
        if change is None or defect.file not in change.files:
            files = ", ".join(change.files) if change is not None else "none"
            raise CaseError(
                f"{where}.file`: {defect.file} is not a file the change touches "
                f"(changed: {files}); name a changed file"
            )
        count = len((scratch.root / defect.file).read_bytes().splitlines())
        if defect.lines[1] > count:
            raise CaseError(
                f"{where}.lines`: {list(defect.lines)} is past the end of {defect.file} "
                f"({count} lines after the patch); give lines of the changed file"
            )
