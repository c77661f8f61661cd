"""Mutation testing of the gate's modules with mutmut 3 (run by scripts/mutants).

Each module is measured on its own, in its own work folder .mutants/NAME/ (a copy of
src/, tests/ and pyproject.toml with a [tool.mutmut] section for that module): mutmut
mutates only that module and runs, for each mutant, only the tests of the module's own
test files (scripts/mutants.toml) that reached the mutated function, in-process.

The score of a module is killed / (mutants - equivalent): timeouts count as killed (the
tests noticed, by not finishing), "no tests" as survivors (nothing guards the code).
Equivalent mutants are listed in scripts/mutants.toml with their reason and matched by
the changed line, so a list that went stale is reported, never silently applied.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from pytest_advreview._toml import tomllib

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "scripts" / "mutants.toml"
WORK = ROOT / ".mutants"
PACKAGE = Path("src") / "pytest_advreview"
# At most two mutants at a time: the machine is shared, and every child runs pytest.
MAX_CHILDREN = int(os.environ.get("MUTANTS_MAX_CHILDREN", "2"))
FLOOR = 90.0


@dataclass
class Result:
    name: str
    seconds: float = 0.0
    killed: int = 0
    timeout: int = 0
    survived: list[str] = field(default_factory=list)
    equivalent: list[str] = field(default_factory=list)
    other: dict[str, int] = field(default_factory=dict)
    stale: list[dict[str, str]] = field(default_factory=list)
    error: str = ""

    @property
    def counted(self) -> int:
        # ``survived`` holds the "no tests" and other statuses too (``other`` counts them).
        return self.killed + self.timeout + len(self.survived)

    @property
    def score(self) -> float:
        return 100.0 * (self.killed + self.timeout) / self.counted if self.counted else 0.0


def load_config() -> dict[str, object]:
    with CONFIG.open("rb") as f:
        return tomllib.load(f)


def prepare(name: str, module: dict[str, object]) -> Path:
    """A fresh work folder for one module: a full measurement, not mutmut's cache of an
    earlier run (which would keep verdicts of tests that have since changed)."""
    work = WORK / name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", work / "src", ignore=skip)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    # A folder (``parse/``) mutates every module in it.
    given = str(module["path"])
    path = str(PACKAGE / given)
    only = f"{path}/*" if given.endswith("/") else path
    tests = [str(t) for t in module["tests"]]  # type: ignore[attr-defined]
    missing = [t for t in tests if t.startswith("tests/") and not (ROOT / t).exists()]
    for t in missing:
        print(f"{name}: no {t} yet, measured without it")
    tests = [t for t in tests if t not in missing]
    section = {
        "source_paths": ["src"],
        "only_mutate": [only],
        # The fast tests: the real Codex CLI runs in a subprocess no mutant reaches.
        "pytest_add_cli_args_test_selection": [*tests, "-m", "not real_codex and not ecosystem"],
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-p", "no:xdist"],
    }
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    text += "\n[tool.mutmut]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in section.items())
    (work / "pyproject.toml").write_text(text, encoding="utf-8")
    return work


def function_of(mutant: str) -> str:
    """`pytest_advreview.outbound.x_redact__mutmut_3` -> `redact`;
    `...xǁRedactorǁapply__mutmut_2` -> `Redactor.apply`."""
    mangled = mutant.rpartition(".")[2].partition("__mutmut_")[0]
    if "ǁ" in mangled:
        _, cls, method = mangled.split("ǁ", 2)
        return f"{cls}.{method}"
    return mangled.removeprefix("x_")


def mutated_lines(diff: str) -> str:
    return "\n".join(
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    )


def collect(name: str, work: Path, equivalents: list[dict[str, str]]) -> Result:
    os.chdir(work)
    from mutmut.configuration import reset_config
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    reset_config()
    result = Result(name)
    mine = [e for e in equivalents if e["module"] == name]
    matched: set[int] = set()
    for meta in sorted((work / "mutants").rglob("*.py.meta")):
        source = meta.relative_to(work / "mutants").with_suffix("")
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        for mutant, code in sorted(codes.items()):
            status = status_by_exit_code[code]
            if status == "killed":
                result.killed += 1
                continue
            if status == "timeout":
                result.timeout += 1
                continue
            diff = get_diff_for_mutant(mutant, path=source)
            changed = mutated_lines(diff)
            hit = [
                i
                for i, e in enumerate(mine)
                if e["function"] == function_of(mutant) and e["mutated"].strip() == changed
            ]
            if hit:
                matched.update(hit)
                result.equivalent.append(mutant)
            elif status == "survived":
                result.survived.append(mutant)
                print(f"\n# {mutant}: survived\n{diff}")
            else:
                result.other[status] = result.other.get(status, 0) + 1
                result.survived.append(mutant)
                print(f"\n# {mutant}: {status}\n{diff}")
    result.stale = [e for i, e in enumerate(mine) if i not in matched]
    os.chdir(ROOT)
    return result


def run(name: str, module: dict[str, object], equivalents: list[dict[str, str]]) -> Result:
    start = time.monotonic()
    work = prepare(name, module)
    log = work / "mutmut.log"
    where = log.relative_to(ROOT)
    print(f"== {name}: mutmut run ({MAX_CHILDREN} children), log in {where}", flush=True)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("CI", None)  # local defaults: under CI=true missing tools fail instead of skipping
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "mutmut", "run", "--max-children", str(MAX_CHILDREN)],
            cwd=work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode != 0 or not list((work / "mutants").rglob("*.py.meta")):
        result = Result(name, error=f"mutmut exited {done.returncode}; see {log.relative_to(ROOT)}")
        print(log.read_text(errors="replace")[-3000:])
    else:
        result = collect(name, work, equivalents)
    result.seconds = time.monotonic() - start
    return result


def table(results: list[Result]) -> str:
    rows = [
        "| Module | Killed | Timeout | Survived | Equivalent | Score | Time |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        if r.error:
            rows.append(f"| {r.name} | error: {r.error} | | | | | {r.seconds:.0f} s |")
            continue
        survived = str(len(r.survived))
        if r.other:
            survived += " (" + ", ".join(f"{n} {s}" for s, n in sorted(r.other.items())) + ")"
        rows.append(
            f"| {r.name} | {r.killed} | {r.timeout} | {survived} | {len(r.equivalent)} "
            f"| {r.score:.1f} % | {f'{r.seconds:.0f} s' if r.seconds else '-'} |"
        )
    return "\n".join(rows)


def main() -> int:
    config = load_config()
    modules: dict[str, dict[str, object]] = config["modules"]  # type: ignore[assignment]
    equivalents: list[dict[str, str]] = config.get("equivalent", [])  # type: ignore[assignment]
    parser = argparse.ArgumentParser(prog="scripts/mutants", description=__doc__.splitlines()[0])
    parser.add_argument(
        "modules", nargs="*", metavar="MODULE", help=f"any of: {' '.join(modules)} (default: all)"
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="only report the last run's results (in .mutants/), e.g. after editing the "
        "equivalent mutants",
    )
    args = parser.parse_args()
    unknown = [m for m in args.modules if m not in modules]
    if unknown:
        parser.error(f"unknown module {', '.join(unknown)}: choose from {' '.join(modules)}")
    results = []
    for name in args.modules or list(modules):
        if args.report:
            done = (WORK / name / "mutants").is_dir()
            results.append(
                collect(name, WORK / name, equivalents)
                if done
                else Result(name, error="not run yet")
            )
        else:
            results.append(run(name, modules[name], equivalents))
        print(table(results[-1:]).splitlines()[-1], flush=True)  # each row as it is known
    print()
    print(table(results))
    for r in results:
        for e in r.stale:
            print(
                f"stale equivalent in {r.name} ({e['function']}: {e['mutated']!r}): "
                "no such surviving mutant"
            )
    failed = [r.name for r in results if r.error or r.score < FLOOR]
    if failed:
        print(f"below {FLOOR:.0f} %: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
