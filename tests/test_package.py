"""The package as a package index would get it: built, checked, and what it ships.

Builds an sdist and a wheel from the repository's files (tracked, and untracked but not
ignored) offline, with the venv's own setuptools (``--no-isolation``), checks both with
``twine check --strict``, and reads what they contain.
"""

from __future__ import annotations

import configparser
import email.parser
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import pytest_advreview
from conftest import git

ROOT = Path(__file__).resolve().parents[1]
REPO_URL = "https://github.com/pytest-advreview/pytest-advreview"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``dist/`` with the sdist and the wheel, built from a copy of the repository files."""
    source = tmp_path_factory.mktemp("source")
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for rel in filter(None, listed.split("\0")):
        if (ROOT / rel).is_file():
            (source / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, source / rel)
    out = tmp_path_factory.mktemp("dist")
    build = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return out


def _one(dist: Path, pattern: str) -> Path:
    (found,) = dist.glob(pattern)
    return found


def _metadata(dist: Path) -> email.message.Message:
    with zipfile.ZipFile(_one(dist, "*.whl")) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(wheel.read(name).decode())


def test_twine_check_strict_passes(dist: Path) -> None:
    files = sorted(str(p) for p in dist.iterdir())
    assert len(files) == 2  # the sdist and the wheel
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("PASSED") == 2


def test_the_wheel_ships_the_mit_license(dist: Path) -> None:
    with zipfile.ZipFile(_one(dist, "*.whl")) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        shipped = wheel.read(name).decode()
    assert shipped == (ROOT / "LICENSE").read_text()
    assert shipped.startswith("MIT License\n\nCopyright (c) 2026 the pytest-advreview authors")
    meta = _metadata(dist)
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]


def test_the_version_has_one_source(dist: Path) -> None:
    meta = _metadata(dist)
    assert meta["Version"] == pytest_advreview.__version__
    assert _one(dist, "*.tar.gz").name == f"pytest_advreview-{pytest_advreview.__version__}.tar.gz"
    project = (ROOT / "pyproject.toml").read_text().split("[project]", 1)[1].split("\n[", 1)[0]
    assert not re.search(r"^version\s*=", project, re.M)  # no second copy to forget
    assert 'dynamic = ["version"]' in project


def test_metadata_has_urls_classifiers_and_the_pytest_floor(dist: Path) -> None:
    meta = _metadata(dist)
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert set(urls) >= {"Homepage", "Changelog", "Issues", "Security"}
    assert all(url.startswith(REPO_URL) for url in urls.values())
    classifiers = set(meta.get_all("Classifier") or [])
    for python in ("3.10", "3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {python}" in classifiers
    assert {"Framework :: Pytest", "Typing :: Typed"} <= classifiers
    assert meta["Requires-Python"] == ">=3.10"
    # The floor the version matrix tests is the floor the metadata promises.
    floor = re.search(r'PYTEST_MIN = "([^"]+)"', (ROOT / "noxfile.py").read_text())
    assert floor is not None
    assert f"pytest>={floor.group(1)}" in (meta.get_all("Requires-Dist") or [])
    assert meta["Description-Content-Type"] == "text/markdown"


def test_the_wheel_declares_both_pytest_plugins_and_they_load(dist: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(_one(dist, "*.whl")) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
        entry_points = configparser.ConfigParser(delimiters=("=",))
        entry_points.read_string(wheel.read(name).decode())
        wheel.extractall(tmp_path / "site")
    assert dict(entry_points["pytest11"]) == {
        "advreview": "pytest_advreview.plugin",
        # The doctor's plugin, by its import name: -p with that name loads it once.
        "pytest_advreview.doctorplugin": "pytest_advreview.doctorplugin",
    }
    # The unpacked wheel first on the path is the wheel installed: pytest finds both
    # plugins through its metadata, whatever else the environment has installed.
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    run = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--help"]
    both, without_doctor = (
        subprocess.run(
            [*run, *extra], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )
        for extra in ((), ("-p", "no:pytest_advreview.doctorplugin"))
    )
    assert both.returncode == without_doctor.returncode == 0, both.stderr + without_doctor.stderr
    assert "--adversarial-review" in both.stdout
    assert both.stdout.count("--advreview-doctor ") == 1
    # The doctor's options come from its own entry point, not the review plugin's.
    assert "--adversarial-review" in without_doctor.stdout
    assert "--advreview-doctor" not in without_doctor.stdout


def test_the_sdist_ships_no_tests_it_could_not_run(dist: Path) -> None:
    with tarfile.open(_one(dist, "*.tar.gz")) as sdist:
        names = [n.split("/", 1)[1] for n in sdist.getnames() if "/" in n]
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/", "examples/"))]
    for wanted in ("LICENSE", "README.md", "CHANGELOG.md", "SECURITY.md", "pyproject.toml"):
        assert wanted in names
    assert "src/pytest_advreview/py.typed" in names
    assert "docs/advreview-results.schema.json" in names


_LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("name", ["README.md", "CHANGELOG.md", "SECURITY.md"])
def test_links_work_on_a_package_index_page(name: str) -> None:
    # A package index shows the README without the repository around it: a relative
    # link (docs/ci.md, #anchor) leads nowhere there.
    text = (ROOT / name).read_text(encoding="utf-8")
    relative = [t for t in _LINK.findall(text) if not re.match(r"https?://|mailto:", t)]
    assert relative == [], f"{name}: use {REPO_URL}/blob/main/PATH or {REPO_URL}#anchor"


def test_the_wheel_and_the_sdist_ship_the_bundled_eval_corpus(dist: Path) -> None:
    corpus = ROOT / "src" / "pytest_advreview" / "eval" / "corpus"
    listed = git(ROOT, "ls-files", "-z", "--", str(corpus))
    files = {
        Path(rel).relative_to("src").as_posix()
        for rel in filter(None, listed.split("\0"))
        if not rel.endswith(".pyc")
    }
    assert any(f.endswith("/case.toml") for f in files)
    with zipfile.ZipFile(_one(dist, "*.whl")) as wheel:
        assert files <= set(wheel.namelist())
    with tarfile.open(_one(dist, "*.tar.gz")) as sdist:
        shipped = {"/".join(n.split("/")[2:]) for n in sdist.getnames()}
    assert files <= shipped
