"""The corpus format: one folder per case, its ``case.toml`` validated by pydantic.

A bad case is one :class:`CaseError` whose message names the file, the field and the fix
(the plugin reports it as one collection error); nothing of a corpus is guessed.
The case id is the folder's name.  docs/eval.md, "Writing cases", is the user's page.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from .._toml import tomllib
from ..models import Severity, WireModel

__all__ = [
    "CASE_FILE",
    "Case",
    "CaseError",
    "CaseFile",
    "CaseSeverity",
    "Corpus",
    "Defect",
    "load_case",
    "load_corpus",
]

#: The file that makes a folder a case.
CASE_FILE = "case.toml"
_SLUG = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_SLUG_RE = re.compile(_SLUG + r"\Z")
#: Folders of a corpus that are no case (caches, version control).
_SKIPPED = ("__pycache__",)


class CaseError(Exception):
    """A case (or a corpus) cannot be used; the message names the file, field and fix."""


class CaseSeverity(str, Enum):
    """The least severity a finding needs to catch a defect (``low``: any finding)."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        """Higher is worse, on the scale of :attr:`.models.Severity.rank` (low is 0)."""
        return 0 if self is CaseSeverity.LOW else Severity(self.value).rank


class Defect(WireModel):
    """One seeded defect: where it is, how bad at least, and the words that name it."""

    id: str = Field(pattern=_SLUG)
    category: str = Field(pattern=_SLUG)
    severity: CaseSeverity
    #: Plan defects: the heading text of the plan's section (without the ``#``).
    section: str | None = Field(default=None, min_length=1)
    #: Code defects: the path in the changed tree, and the first and last line there.
    file: str | None = Field(default=None, min_length=1)
    lines: tuple[int, int] | None = None
    description: str = Field(min_length=1)
    #: A catching finding must name at least one of them (case-insensitive), when given.
    keywords: tuple[str, ...] = ()

    @field_validator("lines")
    @classmethod
    def _ordered(cls, value: tuple[int, int] | None) -> tuple[int, int] | None:
        if value is not None and not 1 <= value[0] <= value[1]:
            raise ValueError("expected [first, last] with 1 <= first <= last")
        return value

    @field_validator("keywords")
    @classmethod
    def _words(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not word.strip() for word in value):
            raise ValueError("an empty keyword would match every finding")
        return value

    @field_validator("file")
    @classmethod
    def _relative(cls, value: str | None) -> str | None:
        return None if value is None else _inside("file", value)

    @model_validator(mode="after")
    def _located(self) -> Defect:
        if self.section is None and self.file is None:
            raise ValueError(
                "field `section` or `file`: a defect needs a location; give the plan "
                'section (section = "Rollout") or the changed file and its lines '
                '(file = "app/store.py", lines = [12, 18])'
            )
        if self.section is not None and self.file is not None:
            raise ValueError(
                "fields `section` and `file`: a defect has one location; keep the plan "
                "section or the file, and make the other one a defect of its own"
            )
        if self.file is not None and self.lines is None:
            raise ValueError(
                "field `lines`: a code defect needs its first and last line in the changed "
                "file; add lines = [first, last]"
            )
        if self.section is not None and self.lines is not None:
            raise ValueError(
                "field `lines`: lines belong to a code defect (`file`); a plan defect is "
                "located by its `section` only, remove `lines`"
            )
        return self


def _inside(field: str, value: str) -> str:
    """``value`` as a relative posix path that stays inside its folder."""
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts or "\\" in value or not path.parts:
        raise ValueError(
            f"field `{field}`: {value!r} must be a relative path inside the case "
            "(no leading /, no ..)"
        )
    return path.as_posix()


class CaseFile(WireModel):
    """The ``case.toml`` of one case."""

    kind: Literal["plan", "code", "code-vs-plan"]
    summary: str = Field(min_length=1)
    clean: bool = False
    plan: str | None = None
    base: str | None = None
    patch: str | None = None
    defect: tuple[Defect, ...] = ()

    @field_validator("plan", "base", "patch")
    @classmethod
    def _relative(cls, value: str | None) -> str | None:
        return None if value is None else _inside("plan/base/patch", value)

    @model_validator(mode="after")
    def _consistent(self) -> CaseFile:
        needs = {
            "plan": ("plan",),
            "code": ("base", "patch"),
            "code-vs-plan": ("plan", "base", "patch"),
        }[self.kind]
        examples = {"plan": '"plan.md"', "base": '"base"', "patch": '"change.patch"'}
        for name in ("plan", "base", "patch"):
            given = getattr(self, name) is not None
            if name in needs and not given:
                raise ValueError(
                    f"field `{name}`: a {self.kind} case needs it; add {name} = {examples[name]}"
                )
            if name not in needs and given:
                raise ValueError(
                    f"field `{name}`: a {self.kind} case has none; remove it (or change kind)"
                )
        if self.clean and self.defect:
            raise ValueError(
                "field `clean`: a clean case has no [[defect]]; remove the defects or set "
                "clean = false"
            )
        if not self.clean and not self.defect:
            raise ValueError(
                "field `defect`: a case with clean = false needs at least one [[defect]]; "
                "add one, or set clean = true for a control a good reviewer approves"
            )
        ids = [d.id for d in self.defect]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(
                f"field `defect.id`: {', '.join(twice)} given twice; make each id unique"
            )
        for number, defect in enumerate(self.defect):
            if self.kind == "plan" and defect.file is not None:
                raise ValueError(
                    f"field `defect[{number}].file`: a plan case's defects are located by "
                    "`section`; use the heading of the plan section"
                )
            if self.kind == "code" and defect.section is not None:
                raise ValueError(
                    f"field `defect[{number}].section`: a code case's defects are located "
                    "by `file` and `lines` in the changed tree"
                )
        return self


@dataclass(frozen=True)
class Case:
    """One loaded case: its id (the folder's name), folder, file and content digest."""

    id: str
    folder: Path
    spec: CaseFile
    #: sha256 of every file of the case folder (names and bytes): the case's version.
    digest: str
    #: sha256 of what the reviewer is shown (the kind and every file but ``case.toml``):
    #: kept transcripts are keyed by it, so a changed label re-scores without a model.
    reviewed: str

    @property
    def file(self) -> Path:
        """The case's ``case.toml``."""
        return self.folder / CASE_FILE


@dataclass(frozen=True)
class Corpus:
    """The cases of one corpus folder, in name order, and the corpus version."""

    root: Path
    cases: tuple[Case, ...]

    @property
    def version(self) -> str:
        """A digest of every case's digest: changes when any case changes."""
        feed = hashlib.sha256()
        for case in self.cases:
            feed.update(f"{case.id}\0{case.digest}\n".encode())
        return feed.hexdigest()[:16]


def _files(folder: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED)
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(dirpath) / name


def _digest(folder: Path, *, labels: bool = True, head: str = "") -> str:
    feed = hashlib.sha256(head.encode() + b"\0")
    for path in _files(folder):
        if not labels and path == folder / CASE_FILE:
            continue
        feed.update(path.relative_to(folder).as_posix().encode() + b"\0")
        feed.update(hashlib.sha256(path.read_bytes()).digest())
    return feed.hexdigest()


#: The fix to name for a pydantic error at a field (its last named part).
_FIXES = {
    "kind": 'set kind = "plan", "code" or "code-vs-plan"',
    "summary": 'add summary = "one line: what the case is"',
    "clean": "set clean = true or clean = false",
    "severity": 'set severity = "critical", "high", "medium" or "low"',
    "lines": "set lines = [first, last], 1 <= first <= last, lines of the changed file",
    "id": 'set id = "a-short-slug" (letters, digits, -, _ or .)',
    "category": 'set category = "auth", "data-integrity", "race", "rollback", '
    '"schema-drift", "error-handling" or "observability" (or a slug of your own)',
    "description": 'add description = "one line: the defect"',
    "keywords": 'set keywords = ["word", ...] with no empty word, or remove it',
}


def _field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _explain(path: Path, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        if not loc:
            problems.append(message)
            continue
        names = [p for p in loc if isinstance(p, str)]
        last = names[-1] if names else ""
        if error["type"] == "extra_forbidden":
            fix = "remove it or correct its spelling (docs/eval.md lists the fields)"
        elif error["type"] == "missing":
            fix = _FIXES.get(last, f"add {last}")
        else:
            fix = _FIXES.get(last, "see docs/eval.md, Writing cases")
        problems.append(f"field `{_field(loc)}`: {message}; fix: {fix}")
    return f"pytest-advreview: eval case {path}: " + "; ".join(problems)


def load_case(folder: Path) -> Case:
    """The case in ``folder``; :class:`CaseError` naming file, field and fix when bad."""
    path = folder / CASE_FILE
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CaseError(
            f"pytest-advreview: eval corpus folder {folder} has no {CASE_FILE}; add one "
            "(docs/eval.md, Writing cases) or move the folder out of the corpus"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"pytest-advreview: eval case {path} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CaseError(
            f"pytest-advreview: eval case {path} is not valid TOML ({exc}); fix its syntax"
        ) from None
    if not _SLUG_RE.match(folder.name):
        raise CaseError(
            f"pytest-advreview: eval case {path}: the folder name {folder.name!r} is the "
            "case id; rename it to letters, digits, -, _ or ."
        )
    try:
        spec = CaseFile.model_validate(raw)
    except ValidationError as exc:
        raise CaseError(_explain(path, exc)) from None
    for name, want in (("plan", "file"), ("patch", "file"), ("base", "folder")):
        given = getattr(spec, name)
        if given is None:
            continue
        target = folder / given
        found = target.is_file() if want == "file" else target.is_dir()
        if not found or target.is_symlink():
            raise CaseError(
                f"pytest-advreview: eval case {path}: field `{name}`: no {want} {given!r} in "
                f"{folder}; add it or correct the name"
            )
    shown = f"{spec.kind}\0{spec.plan}\0{spec.base}\0{spec.patch}"
    return Case(
        id=folder.name,
        folder=folder,
        spec=spec,
        digest=_digest(folder),
        reviewed=_digest(folder, labels=False, head=shown),
    )


def load_corpus(root: Path) -> Corpus:
    """Every case of the corpus at ``root`` (or the one case ``root`` is).

    :raises CaseError: no such folder, no case in it, or a bad case (the first, by name).
    """
    if not root.is_dir():
        raise CaseError(
            f"pytest-advreview: --advreview-eval={root}: no such folder; pass a corpus "
            "folder (one folder per case) or builtin"
        )
    if (root / CASE_FILE).is_file():
        return Corpus(root=root, cases=(load_case(root),))
    folders = sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and p.name not in _SKIPPED and not p.name.startswith(".")
    )
    if not folders:
        raise CaseError(
            f"pytest-advreview: --advreview-eval={root}: no case folder in it; add one folder "
            f"per case, each with a {CASE_FILE} (docs/eval.md)"
        )
    return Corpus(root=root, cases=tuple(load_case(folder) for folder in folders))
