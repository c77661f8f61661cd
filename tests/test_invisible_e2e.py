"""Invisible characters carry nothing out, from a real run (in-process scripted reviewer).

A reviewer that writes a credential of the job with an invisible character between each
two of its characters (zero-width space, soft hyphen, word joiner, a tag character, ...)
makes a text that every terminal and web page shows as the credential itself.  And a
reviewer's bidirectional controls (U+202E, U+2067) reorder what a CI log, a code-scanning
page or a JUnit viewer shows.  Every output of the run (the terminal, the JSON, markdown
and SARIF reports, JUnit XML, the step summary) must carry neither: the credential is
redacted, and every invisible character is shown escaped (``\\u200b``).
"""

from __future__ import annotations

import html
import json
import re
import secrets
import string

import pytest

from conftest import ReviewRepo, json_strings
from pytest_advreview.testing import FindingSpec, review_text

#: One of each kind: format characters, fillers, selectors, tags, a combining mark.
SEPARATORS = {
    "zero-width space": "\u200b",
    "zero-width non-joiner": "\u200c",
    "zero-width joiner": "\u200d",
    "left-to-right mark": "\u200e",
    "soft hyphen": "\u00ad",
    "word joiner": "\u2060",
    "invisible separator": "\u2063",
    "byte order mark": "\ufeff",
    "combining grapheme joiner": "\u034f",
    "Mongolian vowel separator": "\u180e",
    "Hangul filler": "\u3164",
    "variation selector": "\ufe0f",
    "variation selector supplement": "\U000e0100",
    "tag character": "\U000e0041",
    "combining acute accent": "\u0301",
}
BIDI = ("\u202e", "\u2067", "\u202a", "\u2066", "\u200f", "\u061c")
#: Every code point the reports must show escaped (not the combining mark: it is visible).
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff]"
)
#: What a reader of the output sees: invisible characters and combining marks dropped.
_UNSEEN = re.compile(_INVISIBLE.pattern[:-1] + "\u0300-\u036f]")


def _alnum(n: int) -> str:
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(n))


def _unescaped(text: str) -> str:
    """``text`` with the escapes the plugin shows undone (what a reader decodes)."""
    return re.sub(
        r"\\(?:x([0-9a-f]{2})|u([0-9a-f]{4})|U([0-9a-f]{8}))",
        lambda m: chr(int(next(g for g in m.groups() if g), 16)),
        text,
    )


def test_a_credential_split_by_invisible_characters_and_bidi_controls_reach_no_output(
    scripted_repo: ReviewRepo,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    token = "ghp_" + _alnum(36)
    monkeypatch.setenv("DEPLOY_PAT", token)
    out = tmp_path_factory.mktemp("reports")
    summary = out / "step-summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    split = "\n".join(f"- {kind}: {sep.join(token)}" for kind, sep in SEPARATORS.items())
    reordered = "".join(f"{c}evil{i}" for i, c in enumerate(BIDI))
    hostile = review_text(
        "REVISE",
        [
            FindingSpec(
                "critical",
                f"Deploy token {reordered} is printed",
                section="Rollout",
                what=f"The build log shows the token:\n{split}\n",
                why=f"Reordered {reordered} text.",
                impact="Anyone can push.",
                recommendation=f"Rotate {SEPARATORS['word joiner'].join(token)}.",
            )
        ],
        summary=f"The reviewer read the environment {SEPARATORS['soft hyphen'].join(token)}.",
    )
    scripted_repo.plan("deploy.md", "# Plan\n\n## Rollout\n\nDeploy with the token.\n")
    scripted_repo.answer("deploy.md", {"message": hostile})

    result = scripted_repo.run_subprocess(
        "--advreview-diff=none",
        "-rA",
        f"--advreview-json={out}/results.json",
        f"--advreview-report={out}/report.md",
        f"--advreview-sarif={out}/advreview.sarif",
        f"--junitxml={out}/junit.xml",
    )

    result.assert_outcomes(failed=1)
    outputs = {
        "terminal": result.stdout.str() + result.stderr.str(),
        "json": json_strings(json.loads((out / "results.json").read_text(encoding="utf-8"))),
        "sarif": json_strings(json.loads((out / "advreview.sarif").read_text(encoding="utf-8"))),
        "markdown": (out / "report.md").read_text(encoding="utf-8"),
        "step summary": summary.read_text(encoding="utf-8"),
        "junit": (out / "junit.xml").read_text(encoding="utf-8"),
    }
    problems: dict[str, list[str]] = {}
    for name, text in outputs.items():
        found = problems[name] = []
        # As a reader sees it, and with the shown escapes decoded: no credential.
        if token in _UNSEEN.sub("", text) or token in _UNSEEN.sub("", _unescaped(text)):
            found.append("the credential")
        # No character that shows nothing or reorders what is shown; each is escaped.
        raw = sorted({f"U+{ord(c):04X}" for c in _INVISIBLE.findall(text)})
        found.extend(f"raw {code}" for code in raw)
        shown = ("[redacted:DEPLOY_PAT]", "\\u202eevil0", "\\u2067evil1")
        found.extend(f"no {what}" for what in shown if what not in text)
    assert problems == {name: [] for name in outputs}
    junit = outputs["junit"]
    assert 'name="status" value="revise"' in junit  # the properties are there
    findings = re.search(r'name="findings" value="([^"]*)"', junit)
    assert findings is not None
    decoded = json.loads(html.unescape(findings.group(1)))  # as a consumer reads it
    assert _INVISIBLE.findall(json_strings(decoded)) == []
