"""Unit tests of prompts: the bodies, their variants and the prompt version."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from pytest_advreview import prompts
from pytest_advreview.constants import SESSION_MARKER
from pytest_advreview.models import ChangeSet, OutputFormat, ReviewQuality
from pytest_advreview.parse import ReviewerFinding, ReviewerOutput, analyse
from pytest_advreview.prompts import (
    PROMPT_VERSION,
    PreviousRound,
    code_prompt,
    fresh_exec_prompt,
    plan_diff,
    plan_prompt,
    rereview_prompt,
    with_marker,
)

BASE_BLOCKS = (
    "role",
    "operating_stance",
    "task",
    "attack_surface",
    "finding_bar",
    "scope_exclusions",
    "calibration",
    "output_format",
)
ADDED_BLOCKS = ("reviewer_behavior", "language")
LAST_LINE_RULE = (
    "Choose exactly one. The LAST line of your response must be one of:\n"
    "VERDICT: APPROVED\nVERDICT: REVISE\n</output_format>"
)
ABSTRACTION = "Judge the plan at its declared level of abstraction."
PLAN_ITEMS = (
    "- Completeness: does the implementation cover all plan steps?",
    "- Deviations: where does the code differ from the plan? Are deviations justified?",
    "- Missing: what from the plan is not yet implemented?",
)


def change(count: int = 2) -> ChangeSet:
    return ChangeSet(
        files=tuple(f"src/mod_{i}.py" for i in range(count)),
        description="unstaged + staged changes",
        diff_commands=("git diff", "git diff --cached"),
    )


def block(prompt: str, tag: str) -> str:
    """The text between ``<tag>`` and ``</tag>``; fails when the block is missing."""
    match = re.search(rf"^<{tag}>\n(.*?)\n</{tag}>$", prompt, re.DOTALL | re.MULTILINE)
    assert match, f"<{tag}> block missing"
    return match.group(1)


ALL_BODIES = {
    "plan": lambda: plan_prompt("docs/plan.md"),
    "code": lambda: code_prompt(change()),
    "code-unlisted": lambda: code_prompt(change(51)),
    "code-vs-plan": lambda: code_prompt(change(), against_plan="docs/plan.md"),
}


@pytest.mark.parametrize("name", ALL_BODIES)
def test_every_body_has_the_base_and_added_blocks(name: str) -> None:
    body = ALL_BODIES[name]()
    for tag in BASE_BLOCKS + ADDED_BLOCKS:
        block(body, tag)
    assert body.endswith(LAST_LINE_RULE + "\n")
    assert "Do not create, edit, delete, commit, or apply fixes to project files." in body
    assert "If a command unexpectedly changes files, stop and report it." in body
    assert "{" not in body  # no placeholder left behind


def test_plan_prompt_keeps_the_plan_body() -> None:
    body = plan_prompt("docs/plan.md")
    assert block(body, "task") == "Review the implementation plan in docs/plan.md."
    assert "You are a senior adversarial reviewer of implementation plans." in block(body, "role")
    assert "- Rollback — can this be safely reverted if it fails halfway?" in body
    assert "2. Why is this plan vulnerable? (cite specific section)" in block(body, "finding_bar")
    assert "- **Section:** which part of the plan" in block(body, "output_format")
    assert "Summary: one paragraph — what this plan does" in body


def test_abstraction_calibration_is_in_plan_prompts_only() -> None:
    assert ABSTRACTION in block(plan_prompt("p.md"), "calibration")
    assert ABSTRACTION not in code_prompt(change())
    assert ABSTRACTION not in code_prompt(change(), against_plan="p.md")


def test_code_prompt_lists_up_to_fifty_files_one_per_line() -> None:
    task = block(code_prompt(change(50)), "task")
    assert task.startswith("Review the code changes in this repo. Changed files:\n\n")
    listed = "\n".join(f"src/mod_{i}.py" for i in range(50))
    assert f"\n\n{listed}\n\n" in task
    assert task.endswith("to see the full diffs.")


def test_code_prompt_with_fifty_one_files_has_no_file_list() -> None:
    task = block(code_prompt(change(51)), "task")
    assert "src/mod_" not in task
    assert "Changed files" not in task
    assert task.endswith(
        "Run `git diff` and `git diff --cached` to see changed files and full diffs."
    )


def test_code_prompt_uses_the_description_and_the_diff_commands() -> None:
    task = block(code_prompt(change()), "task")
    assert "Changes include: unstaged + staged changes.\n" in task
    assert "Run `git diff` and `git diff --cached` to see the full diffs." in task


@pytest.mark.parametrize("count", [2, 51])
def test_a_changed_attributes_file_is_named_in_the_task_after_the_commands(count: int) -> None:
    changed = change(count).model_copy(
        update={"attributes": (".gitattributes", "a/.gitattributes")}
    )
    task = block(code_prompt(changed), "task")
    run, warning = task.split("\nWARNING: ", 1)
    assert run.endswith("diffs.")  # after the commands it is about
    assert warning.startswith(
        "this change adds, edits or deletes git attributes (.gitattributes, a/.gitattributes)."
    )
    assert "use those commands, not a plain `git diff`" in warning
    assert "review\nthe attribute change itself" in warning


def test_files_git_rewrites_are_named_with_the_advice_to_read_them() -> None:
    changed = change().model_copy(update={"converted": ("src/mod_0.py",)})
    task = block(code_prompt(changed), "task")
    assert "\nWARNING: git rewrites these files when it reads them from the working tree" in task
    assert task.endswith("not the bytes that run: src/mod_0.py. Read each of these files itself.")


def test_a_change_without_attributes_has_no_attributes_warning() -> None:
    body = code_prompt(change())
    assert "WARNING" not in body and "attributes" not in body


def test_code_prompt_keeps_the_code_body() -> None:
    body = code_prompt(change())
    assert "You are a senior adversarial code reviewer." in block(body, "role")
    assert "- Race conditions: TOCTOU, concurrent access, deadlocks" in body
    assert "Severity: critical (data loss/security) > high (bug in prod)" in body
    assert "- **File:** path/to/file.ext lines N-M" in block(body, "output_format")


def test_code_vs_plan_prompt_names_the_plan_and_adds_three_items() -> None:
    body = code_prompt(change(), against_plan="docs/plan.md")
    assert block(body, "task").startswith(
        "Review the code changes in this repo against the implementation plan in "
        "docs/plan.md. Changed files:"
    )
    surface = block(body, "attack_surface")
    assert surface.endswith("\n".join(PLAN_ITEMS))
    plain = block(code_prompt(change()), "attack_surface")
    assert not any(item in plain for item in PLAN_ITEMS)


def test_code_vs_plan_prompt_without_file_list_names_the_plan() -> None:
    task = block(code_prompt(change(51), against_plan="p.md"), "task")
    assert task.startswith(
        "Review the code changes in this repo against the implementation plan in p.md.\n"
    )


@pytest.mark.parametrize(
    "path", ["docs/my plan.md", 'docs/it\'s "quoted".md', "docs/$HOME/`x`.md", "docs/{x}.md"]
)
def test_paths_and_file_names_are_inserted_literally(path: str) -> None:
    assert f"Review the implementation plan in {path}.\n" in plan_prompt(path)
    body = code_prompt(
        ChangeSet(files=(path,), description="d", diff_commands=("git diff",)), against_plan=path
    )
    assert f"against the implementation plan in {path}. Changed files:\n\n{path}\n" in body


def test_language_block_names_the_language_and_keeps_the_literals_english() -> None:
    language = block(plan_prompt("p.md", language="Russian"), "language")
    assert language.startswith("Respond in the operator's language: Russian.\n")
    for literal in ("[severity: critical|high|medium]", "VERDICT: APPROVED", "VERDICT: REVISE"):
        assert f"- {literal}" in language


GERMAN_PROSE = {
    "What can go wrong": "Die Migration bricht nach der Hälfte ab.",
    "Why vulnerable": "Es gibt keine Transaktion um Schritt 2.",
    "Impact": "Halbe Daten in der Produktion.",
    "Recommendation": "Schritt 2 in eine Transaktion legen.",
}


@pytest.mark.parametrize("kind", ["plan", "code"])
def test_a_review_in_another_language_with_the_prompted_labels_parses_whole(kind: str) -> None:
    # The prompt and the parser must agree: every label the output format asks for is
    # one the language block keeps English, and a review written that way (German
    # prose after English labels) keeps its location and its four answers.
    if kind == "plan":
        body = plan_prompt("docs/plans/p.md", language="Deutsch")
    else:
        body = code_prompt(change(), language="Deutsch")
    output, language = block(body, "output_format"), block(body, "language")
    labels = re.findall(r"^- \*\*(.+?):\*\*", output, re.MULTILINE)
    assert len(labels) == 6
    for label in labels:
        assert f"**{label}:**" in language
    for header in ("Summary", "Findings", "Verdict"):
        assert header in language
    where = {"Section": "Schritt 2", "File": "src/mod_0.py lines 3-9", "Confidence": "0.7"}
    fields = [f"- **{label}:** {GERMAN_PROSE.get(label) or where[label]}" for label in labels]
    text = "\n".join(
        [
            "## Summary",
            "",
            "Der Plan migriert die Benutzertabelle.",
            "",
            "## Findings",
            "",
            "### [severity: high] Teilweise Migration",
            *fields,
            "",
            "## Verdict",
            "",
            "VERDICT: REVISE",
        ]
    )
    analysis = analyse(text)
    assert analysis.drift is None
    assert analysis.quality is ReviewQuality.VALID
    (finding,) = analysis.review.findings
    assert finding.location is not None
    if kind == "plan":
        assert finding.location.section == "Schritt 2"
    else:
        assert (finding.location.file, finding.location.line_start) == ("src/mod_0.py", 3)
    assert finding.what_can_go_wrong == GERMAN_PROSE["What can go wrong"]
    assert finding.why_vulnerable == GERMAN_PROSE["Why vulnerable"]
    assert finding.impact == GERMAN_PROSE["Impact"]
    assert finding.recommendation == GERMAN_PROSE["Recommendation"]
    assert finding.confidence == 0.7


@pytest.mark.parametrize("name", ["plan", "code", "code-vs-plan"])
def test_json_variant_asks_for_the_schema_without_the_last_line_rule(name: str) -> None:
    if name == "plan":
        body = plan_prompt("p.md", output_format=OutputFormat.JSON)
    else:
        against = "p.md" if name == "code-vs-plan" else None
        body = code_prompt(change(), against_plan=against, output_format=OutputFormat.JSON)
    output = block(body, "output_format")
    assert "single JSON object that matches the provided output schema" in output
    assert "LAST line" not in body
    assert "VERDICT:" not in body
    fields = [*ReviewerOutput.model_fields, *ReviewerFinding.model_fields]
    assert all(f'"{name}"' in output for name in fields)
    assert "every JSON key" in block(body, "language")


def test_output_format_may_be_given_as_a_string() -> None:
    as_text = plan_prompt("p.md", output_format="json")  # type: ignore[arg-type]
    assert as_text == plan_prompt("p.md", output_format=OutputFormat.JSON)


# --------------------------------------------------------------------------------------
# Re-review and fresh exec


def test_rereview_prompt_has_the_structured_sections_in_order() -> None:
    text = rereview_prompt(
        applied=["AR-1a2b3c: added the rollback step"],
        rescoped=["AR-4d5e6f: narrowed to the write path"],
        rejected=["AR-777777: the lock already exists in db.py:12"],
        language="German",
    )
    assert text.startswith("I've evaluated the findings.\n\n## Applied\n")
    order = [
        "## Applied\n- AR-1a2b3c: added the rollback step\n",
        "## Re-scoped\n- AR-4d5e6f: narrowed to the write path\n",
        "## Rejected with reasoning\n- AR-777777: the lock already exists in db.py:12\n",
        "## Specific asks for re-review\n1. Are my rejections technically valid?\n"
        "2. Did the applied/re-scoped fixes resolve the original findings?\n"
        "3. Did the fixes introduce new issues?\n",
        "Respond in the operator's language: German.",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert text.splitlines()[-1] == "End with VERDICT: APPROVED or VERDICT: REVISE"


def test_rereview_prompt_marks_empty_sections_none() -> None:
    text = rereview_prompt(applied=[], rescoped=[], rejected=["", "  "])
    for heading in ("## Applied", "## Re-scoped", "## Rejected with reasoning"):
        assert f"{heading}\n- (none)\n" in text


def test_rereview_prompt_keeps_multi_line_items_inside_their_bullet() -> None:
    text = rereview_prompt(applied=[], rescoped=[], rejected=["AR-1: wrong\nbecause X"])
    assert "## Rejected with reasoning\n- AR-1: wrong\n  because X\n" in text


def test_rereview_prompt_json_variant_reminds_of_the_schema() -> None:
    text = rereview_prompt(applied=["x"], rescoped=[], rejected=[], output_format=OutputFormat.JSON)
    assert "VERDICT:" not in text
    assert text.rstrip().endswith('with "verdict" set to "APPROVED" or "REVISE".')


def test_fresh_exec_prompt_orders_body_rounds_and_current_state() -> None:
    body = plan_prompt("p.md")
    rounds = [
        PreviousRound(number=1, review="## Summary\nfirst\nVERDICT: REVISE", decisions="AR-1 ok"),
        PreviousRound(number=2, review="second review", decisions="AR-2 rejected: no"),
    ]
    text = fresh_exec_prompt(body, previous_rounds=rounds, current_state="The plan now has X.")
    assert text.startswith(body.rstrip("\n") + "\n\n## Previous review rounds\n")
    order = [
        "## Previous review rounds",
        "### Round 1",
        "## Summary\nfirst\nVERDICT: REVISE",
        "AR-1 ok",
        "### Round 2",
        "second review",
        "AR-2 rejected: no",
        "## Current state of the artifact\n\nThe plan now has X.",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert text.endswith("The plan now has X.\n")


def test_fresh_exec_prompt_without_rounds_says_none() -> None:
    text = fresh_exec_prompt("BODY", previous_rounds=[], current_state="state")
    assert "## Previous review rounds\n\n- (none)\n\n## Current state" in text


def test_with_marker_puts_the_session_marker_on_the_first_line() -> None:
    text = with_marker("BODY\nmore", "1711872000-48217593", "a1b2")
    first, rest = text.split("\n", 1)
    assert first == SESSION_MARKER.format(review_id="1711872000-48217593", attempt_id="a1b2")
    assert first == "<!-- ADVERSARIAL-REVIEW-SESSION: 1711872000-48217593-a1b2 -->"
    assert rest == "BODY\nmore"


# --------------------------------------------------------------------------------------
# Prompt version


def test_prompt_version_is_a_short_hash_over_the_templates() -> None:
    assert re.fullmatch(r"[0-9a-f]{12}", PROMPT_VERSION)
    assert prompts._version(prompts._TEMPLATES) == PROMPT_VERSION


def test_prompt_version_is_stable_across_interpreters() -> None:
    code = "from pytest_advreview.prompts import PROMPT_VERSION; print(PROMPT_VERSION)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == PROMPT_VERSION


def test_prompt_version_changes_when_any_template_changes() -> None:
    templates = list(prompts._TEMPLATES)
    for index in range(len(templates)):
        changed = [*templates]
        changed[index] += " "
        assert prompts._version(changed) != PROMPT_VERSION
    # Moving text from one template to the next changes it too.
    moved = [templates[0] + templates[1][:1], templates[1][1:], *templates[2:]]
    assert prompts._version(moved) != PROMPT_VERSION


@pytest.mark.parametrize("fmt", [OutputFormat.MARKDOWN, OutputFormat.JSON])
def test_the_verdict_rule_asks_for_revise_whenever_a_finding_is_listed(fmt: OutputFormat) -> None:
    # The gate treats APPROVED next to a finding at or above fail-on as drift (retried,
    # then an error).  The earlier rule ("approve if no findings or all low severity;
    # revise if any high/critical") left a medium-only review open to APPROVED, which at the
    # default fail-on=medium would turn an honest review into an error.
    body = prompts.plan_prompt("docs/plans/x.md", output_format=fmt)
    assert "all low severity" not in body
    assert "revise if any high/critical" not in body
    if fmt is OutputFormat.MARKDOWN:
        assert "revise if you list any finding (critical, high or medium)" in body
    else:
        assert '"REVISE" if it lists any finding' in body
    verdict = ReviewerOutput.model_json_schema()["properties"]["verdict"]
    assert verdict["description"] == (
        "APPROVED only if findings is empty; REVISE if it lists any finding"
    )


PLAN_PATH = "docs/plans/x.md"  # where the diff headers say the plan is


# -- plan_diff -------------------------------------------------------------------------------


def test_plan_diff_is_a_unified_diff() -> None:
    diff = plan_diff("a\nb\nc\n", "a\nB\nc\n", path=PLAN_PATH)
    assert diff.splitlines() == [
        f"--- a/{PLAN_PATH}",
        f"+++ b/{PLAN_PATH}",
        "@@ -1,3 +1,3 @@",
        " a",
        "-b",
        "+B",
        " c",
    ]


def test_plan_diff_of_equal_texts_is_empty() -> None:
    assert plan_diff("same\n", "same\n", path=PLAN_PATH) == ""


def test_plan_diff_shows_a_missing_final_newline() -> None:
    diff = plan_diff("a", "a\n", path=PLAN_PATH)
    assert "\\ No newline at end of file" in diff
    assert "-a" in diff and "+a" in diff


def test_plan_diff_truncates_by_lines() -> None:
    old = "".join(f"line {i}\n" for i in range(500))
    new = "".join(f"LINE {i}\n" for i in range(500))
    diff = plan_diff(old, new, path=PLAN_PATH, max_lines=50)
    lines = diff.splitlines()
    assert len(lines) == 51
    total = 3 + 1000  # headers, hunk header, 500 removed, 500 added
    assert lines[-1] == (
        f"[diff truncated: {total - 50} of {total} lines not shown; "
        f"+500 -500 lines in total; read {PLAN_PATH} for the full text]"
    )


def test_plan_diff_truncates_by_characters() -> None:
    new = "x" * 5000 + "\n" + "y" * 5000 + "\n"
    diff = plan_diff("short\n", new, path=PLAN_PATH, max_chars=7000)
    assert "y" * 100 not in diff
    assert diff.endswith(f"read {PLAN_PATH} for the full text]")
    assert "+2 -1 lines in total" in diff


def test_plan_diff_not_truncated_when_it_fits() -> None:
    assert "truncated" not in plan_diff("a\n", "b\n", path=PLAN_PATH, max_lines=7)
