"""The documentation site: it builds offline, its links hold, and its reference is SPECS.

``mkdocs build --strict`` with mkdocs.yml's ``validation`` settings fails on a link to a
page or anchor that does not exist and on a page left out of the nav: the build is the
link check. The options table of docs/options.md is generated from
``pytest_advreview.options.SPECS`` and must equal what the generator writes today.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GENERATOR = ROOT / "scripts" / "gen_options_doc.py"
#: A table cell boundary: a pipe the generator did not escape.
_CELL = re.compile(r"(?<!\\)\|")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_options_doc", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mkdocs_installed() -> None:
    """CI fails without mkdocs; a laptop that has not run scripts/setup since skips."""
    if importlib.util.find_spec("mkdocs") is None:
        message = "mkdocs is not installed; run scripts/setup"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message} (CI=true, so this is a failure, not a skip)", pytrace=False)
        pytest.skip(message)


def test_the_site_builds_offline_with_every_link_and_anchor_resolved(tmp_path: Path) -> None:
    _mkdocs_installed()
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, NO_COLOR="1"),
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr}"
    assert (tmp_path / "site" / "options" / "index.html").is_file()


def test_the_options_page_is_the_table_generated_from_specs() -> None:
    generator = _generator()
    committed = generator.PAGE.read_text(encoding="utf-8")
    assert generator.render(committed) == committed, (
        "docs/options.md is stale against options.SPECS; run scripts/gen-options-doc"
    )


def test_the_generated_table_has_one_row_per_spec() -> None:
    from pytest_advreview.options import SPECS

    rows = [line for line in _generator().table().splitlines()[2:] if line.startswith("| ")]
    assert len(rows) == len(SPECS) + 1  # and --adversarial-review, which is not a setting
    for spec, row in zip(SPECS, rows[1:], strict=True):
        option, env, ini, _default, _desc = (c.strip() for c in _CELL.split(row)[1:-1])
        assert env == (f"`{spec.env_var}`" if spec.env else "—"), row
        assert ini == (f"`{spec.ini_key}`" if spec.ini is not None else "—"), row
        if spec.cli is None:
            assert option == "—", row
        else:
            assert option.strip("`").split("=")[0] == spec.option, row


def test_the_generated_table_shows_description_markup_verbatim() -> None:
    # "docs/**/plans/**/*.md" in a description would be bold text, "__init__" bold "init".
    table = _generator().table()
    assert r"docs/\*\*/plans/\*\*/\*.md" in table
    assert r"\_\_init\_\_.py" in table


def test_the_readme_is_short_and_points_at_the_pages_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    pages = set(re.findall(r"/blob/main/docs/([\w-]+\.md)", text))
    assert pages, "the README links to no documentation page"
    missing = sorted(page for page in pages if not (ROOT / "docs" / page).is_file())
    assert missing == []
    # The README keeps this heading as the entry point; the section lives in docs/safety.md.
    assert "\n## Safety considerations\n" in text
    assert "/blob/main/docs/safety.md" in text
