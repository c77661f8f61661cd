"""What the reviewer wrote is posted as text, never as HTML or an image GitHub renders.

Observed on 1803125: in the inline review (``comment: review``) a finding's text was
posted as live HTML, so a ``<details>`` hid the finding behind a summary of its own
("Approved") and an ``<img>`` or ``![](…)`` loaded a remote image; the markdown report
escaped the same text.  Each body the Action posts is parsed here as GitHub parses it
(CommonMark) and may hold no HTML but the gate's own markers and the ``<code>`` of a
quieted mention.  The posting goes through the loopback GitHub API of the Action tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from action_kit import GitHubAPI
from pytest_advreview.models import Finding, IgnoredCommand, Waiver
from pytest_advreview.outbound import inert_html
from pytest_advreview.rendered import html_and_images
from pytest_advreview.report.collect import ItemResult
from pytest_advreview.report.files import Anchors
from pytest_advreview.report.markdown import render_markdown
from pytest_advreview.report.rdjson import build_rdjson
from pytest_advreview.settings import Settings
from test_action import REPO
from test_pr_review_action import FILES, REVIEWS, Step, _code, _codes

HIDDEN = "<details><summary>Approved: nothing to fix</summary>\n\nThe retry pays twice.\n</details>"
IMAGES = '<img src="https://tracker.test/a.png"> and ![seen](https://tracker.test/b.png)'
#: A backslash-escaped backtick opens no code span for GitHub, but a plain reading of the
#: line pairs it with the next backtick and takes the HTML between for code.
ESCAPED_TICK = "see \\`<details><summary>fine</summary>` here"
_OWN = re.compile(r"(?:<!-- advreview:[a-z]+ [0-9A-Za-z-]+ -->\n?)+|</?code>")


@pytest.fixture
def github_api() -> Iterator[GitHubAPI]:
    with GitHubAPI(REPO) as api:
        api.files[7] = FILES
        yield api


@pytest.fixture
def step(tmp_path: Path, github_api: GitHubAPI) -> Step:
    return Step(tmp_path, github_api)


def _foreign(body: str) -> list[str]:
    return [part for part in html_and_images(body) if _OWN.fullmatch(part) is None]


def _hostile(title: str, line: int, **extra: Any) -> Finding:
    return _code(title, line, what_can_go_wrong=HIDDEN, recommendation=IMAGES, **extra)


def test_the_line_comments_and_the_review_body_render_no_html_of_the_reviewer(
    step: Step, github_api: GitHubAPI
) -> None:
    on_lines = _hostile("<details><summary>ok</summary>", 5, suggestion="x = List<int>()")
    outside = _hostile("![pixel](https://tracker.test/c.png) @octocat", 40)
    tricky = _code(ESCAPED_TICK, 6)
    clean = _code("Unchecked", 7, recommendation="use `Optional<str>` here")

    assert step.run([_codes(on_lines, outside, tricky, clean)]) == 0

    assert github_api.invalid == []
    ((path, review),) = step.posts()
    assert path == REVIEWS
    bodies = [review["body"], *(c["body"] for c in review["comments"])]
    assert len(bodies) == 4
    for body in bodies:
        assert _foreign(body) == [], body
        assert "tracker.test" not in "".join(html_and_images(body))
    first, second, third = review["comments"]
    # The finding is there to read: its text shown, not hidden in a collapsed block.
    assert "The retry pays twice." in first["body"]
    assert "&lt;details>&lt;summary>Approved: nothing to fix&lt;/summary>" in first["body"]
    # The suggestion is the replacement code: verbatim; a clean code span stays verbatim.
    assert "```suggestion\nx = List<int>()\n```" in first["body"]
    assert "`Optional<str>`" in third["body"]
    # Where GitHub reads no code span, the body is built again with code escaped too.
    assert "\\`&lt;details>&lt;summary>fine&lt;/summary>`" in second["body"]
    # The mention notifies nobody, the image in the review body loads nothing.
    assert "<code>@octocat</code>" in review["body"]
    assert "!\\[pixel](https://tracker.test/c.png)" in review["body"]


def test_a_waivers_reply_renders_no_html_of_its_reason(step: Step, github_api: GitHubAPI) -> None:
    finding = _code("Waived", 5)
    assert step.run([_codes(finding)]) == 0
    waiver = Waiver(finding=finding.id, by="@maintainer", reason=HIDDEN, source="command")
    github_api.calls.clear()

    assert step.run([_codes(finding, waived=(waiver,))], head="2" * 40) == 0

    ((path, reply),) = step.posts()
    assert path.endswith("/replies")
    assert _foreign(reply["body"]) == []
    assert "**Waived** by @maintainer: &lt;details>" in reply["body"]


@pytest.mark.parametrize(
    "text",
    [
        HIDDEN,
        IMAGES,
        ESCAPED_TICK,
        "<!-- advreview:finding AR-000000 -->",
        "```\n<details>\n```",
        "a\n\n<pre>\n\nhidden\n\n</pre>",
        "[![x](https://tracker.test/d.png)](https://example.test)",
        "<code><img src=x></code>",
    ],
)
def test_the_rdjson_messages_render_no_html_of_the_reviewer(text: str, tmp_path: Path) -> None:
    # reviewdog posts each message as a comment of its own.
    finding = _code("t", 5, what_can_go_wrong=text, recommendation=text)
    record = _codes(finding)
    rd = build_rdjson([ItemResult(record, "failed")], Anchors(tmp_path))
    (diagnostic,) = rd.diagnostics
    assert _foreign(diagnostic.message) == [], diagnostic.message


def test_the_markdown_report_shows_the_same_text_escaped() -> None:
    # The report comment: the reviewer's text in every field, the verbatim review too.
    finding = _hostile(ESCAPED_TICK + HIDDEN, 5)
    waiver = Waiver(finding=finding.id, by="@m", reason=HIDDEN + IMAGES, source="command")
    record = _codes(finding, waived=(waiver,)).model_copy(
        update={
            "ignored": (IgnoredCommand(text=HIDDEN, by="@x", why=IMAGES),),
            "warnings": (HIDDEN,),
        }
    )
    report = render_markdown(Settings(), [ItemResult(record, "failed")], verbatim=True)
    own = re.compile(
        r"<details>\n<summary>Review, round 1 \(initial review\), verbatim</summary>\n|</details>\n"
    )
    assert [part for part in html_and_images(report) if own.fullmatch(part) is None] == []


def test_inert_html_keeps_code_spans_unless_strict() -> None:
    assert inert_html("a <b> `List<int>` ![i](u)") == "a &lt;b> `List<int>` !\\[i](u)"
    assert inert_html("`List<int>`", strict=True) == "`List&lt;int>`"
