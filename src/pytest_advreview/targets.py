"""What to review: the repository, its base, the plan files and the code change set.

Pure functions over git (through :mod:`pytest_advreview.git`), with no dependency on the
pytest config: the plugin passes in the resolved settings.  Costs stay flat in the number
of files: selecting among thousands of plans takes three git calls and reads no file.

Paths come back in two flavours, and each function says which: relative to the
repository top level (what git prints and what the reviewer, launched at the top level,
sees) or absolute :class:`~pathlib.Path` objects (what pytest collects).
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from . import leftout
from .git import (
    SHOWN_DIFF_OPTIONS,
    STATUS_V2_ARGS,
    GitError,
    StatusEntry,
    attribute_files,
    commit,
    converted_files,
    literal_pathspec,
    parse_status_v2_z,
    plain_diff_globals,
    quote_path,
    run_git,
    split_z,
)
from .models import ChangeSet, ChangeSetInfo, LeftOutFile

__all__ = [
    "BaseRefError",
    "GitRepoInfo",
    "NotTheChange",
    "PathResolver",
    "PlanSelection",
    "TargetError",
    "change_set",
    "change_set_info",
    "compile_glob",
    "lexical_key",
    "match_any",
    "plan_files",
    "repo_info",
    "resolve_base",
    "status_entries",
]

_PREFIX = "pytest-advreview"
#: Branches tried in order when neither an explicit base nor ``GITHUB_BASE_REF`` decides.
FALLBACK_BASES = ("origin/HEAD", "main", "master")
#: The repository's tracked files and its untracked ones that are not ignored.
_LISTED = ("ls-files", "-z", "--cached", "--others", "--exclude-standard")


class TargetError(Exception):
    """The targets cannot be determined; the message says why and what to do."""


class BaseRefError(TargetError):
    """The base cannot be used: it does not exist, or it cannot be diffed with ``HEAD``.

    Only what needs the base fails on it (the code item, scope ``changed``); a plan named
    on the command line is still reviewed.
    """


# -- the repository ------------------------------------------------------------------------


@dataclass(frozen=True)
class GitRepoInfo:
    """The git work tree that contains the directory pytest reviews.

    :param root: the work tree's top level (``git rev-parse --show-toplevel``).
    :param superproject: the superproject's work tree when ``root`` is a submodule.
    """

    root: Path
    superproject: Path | None = None

    @property
    def warning(self) -> str | None:
        """A header line for a submodule, whose changes are seen from inside only."""
        if self.superproject is None:
            return None
        return (
            f"advreview: {self.root} is a git submodule of {self.superproject}; "
            "plans and changes are taken from the submodule only"
        )


def _lines(data: bytes) -> list[str]:
    # rev-parse prints one value per line; only the newline is stripped, because a
    # directory name may end in a space.
    return [os.fsdecode(line) for line in data.split(b"\n")]


def repo_info(path: Path) -> GitRepoInfo | None:
    """Find the git work tree containing ``path``.

    :returns: ``None`` when ``path`` is not inside a git repository.
    :raises TargetError: ``path`` is in a bare repository or inside a ``.git`` directory
        (there is no work tree to review), or git refused to run (unsafe ownership, git
        missing); the message carries git's own words.
    """
    asked = ("rev-parse", "--is-bare-repository", "--is-inside-work-tree")
    proc = run_git(path, *asked, check=False, error=TargetError)
    if proc.returncode != 0:
        said = os.fsdecode(proc.stderr).strip()
        if "not a git repository" in said:
            return None
        raise TargetError(f"{_PREFIX}: cannot inspect the git repository at {path}: {said}")
    bare, inside = _lines(proc.stdout)[:2]
    if bare == "true":
        raise TargetError(
            f"{_PREFIX}: {path} is a bare repository: it has no work tree to review; "
            "run pytest inside a work tree (a clone, or `git worktree add`)"
        )
    if inside != "true":
        raise TargetError(
            f"{_PREFIX}: {path} is inside a .git directory, not a work tree; "
            "run pytest from the repository's work tree"
        )
    asked = ("rev-parse", "--show-toplevel", "--show-superproject-working-tree")
    out = run_git(path, *asked, error=TargetError).stdout
    lines = [line for line in _lines(out) if line]
    superproject = Path(lines[1]) if len(lines) > 1 else None
    return GitRepoInfo(root=Path(lines[0]), superproject=superproject)


def resolve_base(repo: Path, explicit: str | None, env: Mapping[str, str]) -> str | None:
    """The base of branch diffs and of plan scope ``changed``.

    ``explicit`` (``--advreview-base`` / ini ``advreview_base``) when given; else
    ``origin/$GITHUB_BASE_REF`` when that variable is set; else the first of
    ``origin/HEAD``, ``main``, ``master`` that git knows.  A base that is named (by
    either) and not in the clone is an error, never "no base".

    :returns: the ref as named (not its commit id), or ``None`` when nothing named a base
        and no fallback exists.
    :raises BaseRefError: the named base is not a commit git knows.
    """
    if explicit is not None:
        if commit(repo, explicit, error=TargetError) is None:
            raise BaseRefError(
                f"{_PREFIX}: the base {explicit!r} (--advreview-base / ini advreview_base) "
                f"is not a commit, branch or tag of the repository at {repo}; "
                f"{fetch_hint(repo, explicit)}pass another --advreview-base=REF"
            )
        return explicit
    github = env.get("GITHUB_BASE_REF", "").strip()
    if github:
        # A pull request names its base: a clone without it (a shallow CI checkout) must
        # not fall back to another branch or to "no base", which reviews nothing.
        ref = f"origin/{github}"
        if github.startswith("-") or commit(repo, ref, error=TargetError) is None:
            raise BaseRefError(
                f"{_PREFIX}: GITHUB_BASE_REF names the base {github!r}, but {ref} is not in "
                f"the clone at {repo}; {fetch_hint(repo, ref)}check out with fetch-depth: 0, "
                "or pass --advreview-base=REF"
            )
        return ref
    for ref in FALLBACK_BASES:
        if commit(repo, ref, error=TargetError) is not None:
            return ref
    return None


def _remotes(repo: Path) -> list[str]:
    proc = run_git(repo, "remote", check=False, error=TargetError)
    return [line for line in _lines(proc.stdout) if line] if proc.returncode == 0 else []


def fetch_hint(repo: Path, ref: str) -> str:
    """The "fetch it with `git fetch …`, or " that makes ``ref`` exist; "" if no remote can.

    ``git fetch origin origin/main`` asks the remote for a ref *it* calls
    ``origin/main`` and fails; the refspec must name the remote's branch and where it
    goes here.  A bare name (``main``, a tag) is fetched under the same name.
    """
    if ref.startswith("-") or not re.fullmatch(r"[\w./-]+", ref) or ".." in ref:
        return ""  # not a name a remote can have (a range, a revision expression)
    remotes = _remotes(repo)
    for remote in remotes:
        if ref.startswith(remote + "/") and len(ref) > len(remote) + 1:
            branch = ref[len(remote) + 1 :]
            spec = f"{branch}:refs/remotes/{remote}/{branch}"
            return f"fetch it with `{shlex.join(['git', 'fetch', remote, spec])}`, or "
    if "origin" in remotes:
        return f"fetch it with `{shlex.join(['git', 'fetch', 'origin', f'{ref}:{ref}'])}`, or "
    return ""


def status_entries(root: Path) -> list[StatusEntry]:
    """``git status`` of ``root`` (untracked files listed, no rename detection).

    Renames are reported as a deletion plus an addition, so each path is one entry and
    agrees with ``git diff --no-renames``.  Paths are relative to the top level.  The same
    command and parser as the mutation snapshots (:data:`~.git.STATUS_V2_ARGS`), so the
    two can never read ``git status`` differently.
    """
    _head, entries = parse_status_v2_z(run_git(root, *STATUS_V2_ARGS, error=TargetError).stdout)
    return entries


# -- paths ---------------------------------------------------------------------------------


class PathResolver:
    """``Path.resolve()`` for many files in few folders, at one ``lstat`` per file.

    ``realpath(folder/name)`` is ``realpath(folder)/name`` whenever ``name`` is not a
    symlink, so each folder is resolved once and remembered; a file that is a symlink
    (or that cannot be checked) is resolved in full.  Thousands of plans in a few dozen
    folders then cost thousands of ``lstat`` calls instead of one per path component.

    Create one per batch (a collection): folders and answers are remembered for the
    resolver's lifetime, so a path asked about again costs a dictionary lookup.
    """

    def __init__(self) -> None:
        self._folders: dict[str, str] = {}
        self._answers: dict[str, Path] = {}

    def __call__(self, path: Path) -> Path:
        """The same as ``path.resolve()`` (non-strict)."""
        # Strings, not Path objects: path arithmetic is most of the cost at this scale.
        text = os.fspath(path)
        if not os.path.isabs(text):
            text = os.path.join(os.getcwd(), text)
        known = self._answers.get(text)
        if known is not None:
            return known
        folder, name = os.path.split(text)
        # ``islink`` is False when the file cannot be checked, as for ``realpath``.
        if name in ("", ".", "..") or os.path.islink(text):
            answer = Path(text).resolve()
        else:
            real = self._folders.get(folder)
            if real is None:
                real = self._folders[folder] = str(Path(folder).resolve())
            answer = Path(os.path.join(real, name))
        self._answers[text] = answer
        return answer


# -- globs ---------------------------------------------------------------------------------


def _segment(part: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = part.find("]", i + 2 if part[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = part[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex for a ``/``-separated relative glob with :mod:`pathlib` semantics.

    ``*`` and ``?`` stay inside one path segment, ``[...]`` is a character class and a
    ``**`` segment matches zero or more folders (so ``docs/**/plans/*.md`` matches
    ``docs/plans/x.md``); a trailing ``**`` matches everything below.  Matching is
    case-sensitive, like :class:`~pathlib.PurePosixPath`.
    """
    parts = [p for p in pattern.replace("\\", "/").split("/") if p not in ("", ".")]
    regex = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            regex += ".*" if last else "(?:[^/]+/)*"
        else:
            regex += _segment(part) + ("" if last else "/")
    return re.compile(regex + r"\Z")


def match_any(path: str, patterns: Iterable[re.Pattern[str]]) -> bool:
    """True when the relative ``/``-separated ``path`` matches one of the compiled globs."""
    return any(p.match(path) for p in patterns)


# -- plans ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanSelection:
    """The plans chosen for review and how many the globs matched in all.

    :param selected: absolute paths, sorted.
    :param total: how many files the globs matched before the scope filter.
    :param summary: one human line for the report header ("0 of 12 plans changed against
        main; use advreview_plan_scope = all").
    :param keys: the repository-relative ``/`` path of each selected plan (its key in
        state and decisions), in the order of ``selected``.
    :param prefix: ``root`` relative to the repository top, ``/``-terminated ("" at the
        top and outside git): ``keys[i] == prefix + <selected[i] relative to root>``.
    :param outside: matched plan symlinks that lead out of the repository's files (not
        read, not selected; named in ``summary``).
    """

    selected: tuple[Path, ...]
    total: int
    summary: str
    keys: tuple[str, ...] = ()
    prefix: str = ""
    outside: tuple[str, ...] = ()


def _plural(n: int) -> str:
    return f"{n} plan" if n == 1 else f"{n} plans"


def _prefix(root: Path, top: Path) -> str:
    """``root`` relative to the top level, as a ``/``-terminated prefix ("" at the top)."""
    try:
        rel = root.resolve().relative_to(top.resolve())
    except ValueError:
        rel_str = run_git(root, "rev-parse", "--show-prefix", error=TargetError).stdout
        return _lines(rel_str)[0]
    return "" if rel == Path(".") else rel.as_posix() + "/"


def _changed_paths(root: Path, base: str | None) -> set[str]:
    """Top-level-relative paths added or modified against ``base`` or not yet committed."""
    changed = {e.path for e in status_entries(root) if e.untracked or "D" not in e.xy}
    if base is not None:
        changed.update(_branch_names(root, base, "--diff-filter=AM"))
    return changed


def plan_files(
    root: Path,
    globs: Sequence[str],
    scope: Literal["changed", "all"] | str,
    base: str | None,
    *,
    repo: GitRepoInfo | Literal["detect"] | None = "detect",
) -> PlanSelection:
    """Select the plan files to review.

    In a git work tree the candidates are the tracked and untracked, not ignored files
    under ``root`` (``git ls-files``), matched against ``globs`` (relative to ``root``,
    :func:`compile_glob` semantics).  Scope ``changed`` keeps those added or modified
    against ``base`` (``git diff --diff-filter=AM BASE...HEAD``) plus staged, unstaged and
    untracked ones (``git status``).  No file is read or hashed here.

    Outside git the globs are applied to the file system and every match is selected:
    without history there is no "changed".

    :param root: rootdir; globs and the summary are relative to it.
    :param scope: ``changed`` or ``all``.
    :param base: from :func:`resolve_base`; ``None`` limits ``changed`` to uncommitted.
    :param repo: the work tree, ``None`` outside git; detected when not given.
    :raises BaseRefError: ``base`` cannot be diffed with ``HEAD`` (no merge base).
    :raises TargetError: git failed.
    """
    if repo == "detect":
        repo = repo_info(root)
    compiled = [compile_glob(g) for g in globs]
    root_abs = root.resolve()
    # (root-relative "/" path, absolute path) of every match, sorted; strings where
    # possible, because Path arithmetic dominates at thousands of plans.
    matched: list[tuple[str, Path]]
    outside: list[str] = []
    if repo is None:
        prefix = ""
        # Each real file once: a symlinked folder (a loop included) reaches the same
        # file under many names.
        found: dict[Path, Path] = {}
        for g in globs:
            for p in root_abs.glob(g.replace("\\", "/").lstrip("/")):
                if p.is_file():
                    found.setdefault(p.resolve(), p)
        matched = []
        for real in sorted(found):
            try:
                matched.append((real.relative_to(root_abs).as_posix(), real))
            except ValueError:  # a symlink out of root: not this project's plan
                outside.append(found[real].relative_to(root_abs).as_posix())
    else:
        prefix = _prefix(root, repo.root)
        out = run_git(root, *_LISTED, error=TargetError).stdout
        listed = split_z(out)
        rels = sorted({p for p in listed if match_any(p, compiled)})
        matched = _real_plans(root_abs, repo.root, prefix, rels, listed, outside)
    total = len(matched)
    note = _outside_note(outside)
    if total == 0:
        shown = ", ".join(globs) if globs else "no globs"
        summary = f"no plan files match advreview_plans ({shown}){note}"
        return PlanSelection((), 0, summary, outside=tuple(outside))
    if scope == "all" or repo is None:
        summary = (
            f"{_plural(total)} (advreview_plan_scope = all)"
            if scope == "all"
            else f"not a git repository: reviewing all {_plural(total)}"
        )
        return _selection(matched, total, summary + note, prefix, outside)
    changed = {p[len(prefix) :] for p in _changed_paths(root, base) if p.startswith(prefix)}
    kept = [(rel, path) for rel, path in matched if rel in changed]
    n = len(kept)
    if base is None:
        summary = f"{n} of {_plural(total)} changed (uncommitted only: no base branch found)"
    else:
        summary = f"{n} of {_plural(total)} changed against {base}"
    if n == 0:
        summary += "; use advreview_plan_scope = all"
    return _selection(kept, total, summary + note, prefix, outside)


def _real_plans(
    root_abs: Path,
    top: Path,
    prefix: str,
    rels: Sequence[str],
    listed: Sequence[str],
    outside: list[str],
) -> list[tuple[str, Path]]:
    """The matched paths that are plan files of this repository, each real file once.

    git lists a symlink as itself and never walks through a symlinked folder, so the
    only aliases are file symlinks.  A symlink to another listed file of the repository
    is that file (one item, under the file's own name when the globs match it too); a
    symlink to anything else (outside the repository, an ignored file, ``.git``) is not
    a plan of this repository and is named in ``outside``, never read.  One ``lstat``
    per match, as the ``isfile`` it replaces; ``--cached`` still lists files deleted
    from the work tree, and those are dropped here.
    """
    base_text = os.fspath(root_abs)
    regular: list[tuple[str, Path]] = []
    links: list[tuple[str, str]] = []
    for rel in rels:
        text = os.path.join(base_text, rel)
        try:
            mode = os.lstat(text).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode):
            regular.append((rel, Path(text)))
        elif stat.S_ISLNK(mode):
            links.append((rel, text))
    if not links:
        return regular
    top_text = os.fspath(top.resolve())
    listed_set = set(listed)
    # What the links point at, as keys (top-relative): a listed file, or not a plan.
    seen = {prefix + rel for rel, _ in regular}
    found = list(regular)
    for rel, text in links:
        real = os.path.realpath(text)
        inside = os.path.relpath(real, top_text).replace(os.sep, "/")
        if inside.startswith("../") or inside == ".." or not os.path.isfile(real):
            outside.append(rel)
            continue
        # ``ls-files`` listed the files under ``root`` (relative to it); a target
        # elsewhere in the repository is asked about on its own.
        under_root = inside.startswith(prefix) and inside[len(prefix) :] in listed_set
        if not under_root and not _listed_at_top(top, inside):
            outside.append(rel)
            continue
        if inside in seen:
            continue  # the real file is reviewed under its own name, or another link's
        seen.add(inside)
        found.append((rel, Path(text)))
    return sorted(found)


def _listed_at_top(top: Path, key: str) -> bool:
    """``key`` (top-relative) is a tracked or untracked-not-ignored file of the repository."""
    out = run_git(top, *_LISTED, "--", literal_pathspec(key), error=TargetError).stdout
    return key in split_z(out)


def _outside_note(outside: Sequence[str]) -> str:
    if not outside:
        return ""
    shown = ", ".join(outside[:5]) + (f" and {len(outside) - 5} more" if len(outside) > 5 else "")
    return (
        f"; not reviewed: {len(outside)} plan symlink(s) pointing outside the repository's "
        f"files ({shown}): commit the plan itself instead of a link"
    )


def _selection(
    matched: Sequence[tuple[str, Path]],
    total: int,
    summary: str,
    prefix: str,
    outside: Sequence[str] = (),
) -> PlanSelection:
    return PlanSelection(
        selected=tuple(path for _, path in matched),
        total=total,
        summary=summary,
        keys=tuple(prefix + rel for rel, _ in matched),
        prefix=prefix,
        outside=tuple(outside),
    )


# -- the change set ------------------------------------------------------------------------


def _toplevel(root: Path) -> Path:
    out = run_git(root, "rev-parse", "--show-toplevel", error=TargetError).stdout
    return Path(_lines(out)[0])


def _relative_excludes(
    top: Path, exclude: Collection[str | os.PathLike[str]], resolve: PathResolver
) -> set[str]:
    rels: set[str] = set()
    top_abs = top.resolve()
    for item in exclude:
        if isinstance(item, str) and not os.path.isabs(item):
            rels.add(item.replace(os.sep, "/"))  # already relative: no Path arithmetic
            continue
        path = Path(item)
        if path.is_absolute():
            try:
                rels.add(resolve(path).relative_to(top_abs).as_posix())
            except ValueError:
                continue  # outside the repository: cannot be part of its change set
        else:
            rels.add(path.as_posix())
    return rels


def _command(base: str, excluded: Iterable[str]) -> str:
    specs = [shlex.quote(literal_pathspec(p, exclude=True)) for p in sorted(excluded)]
    return base + (" -- " + " ".join(specs) if specs else "")


def _shown_diff(root: Path, *args: str) -> str:
    """The ``git diff`` command line the reviewer is told to run, shell-quoted.

    It shows the bytes git stores, not what the branch's ``.gitattributes`` or
    ``.gitmodules`` make of them (:data:`~.git.SHOWN_DIFF_OPTIONS`,
    :func:`~.git.plain_diff_globals`): a branch that marks its ``.py`` files ``-diff``
    would otherwise show the reviewer "Binary files … differ" while the cache key hashes
    the code.  The reviewer runs it at the top level, as the plugin does.
    """
    try:
        globals_ = plain_diff_globals(root)
    except GitError as exc:
        raise TargetError(f"{_PREFIX}: {exc}") from None
    return shlex.join(["git", *globals_, "diff", *SHOWN_DIFF_OPTIONS, *args])


def _branch_error(root: Path, base: str, exc: GitError) -> BaseRefError:
    """Why ``BASE...HEAD`` cannot be diffed, told apart by cause, each with its own fix.

    A shallow clone (its history stops before the fork point) and unrelated histories
    (no commit in common at all) both say "no merge base"; only the first is fixed by
    fetching more history.
    """
    said = f"{_PREFIX}: cannot diff {base}...HEAD in {root}: {exc.stderr or exc}"
    shallow = run_git(root, "rev-parse", "--is-shallow-repository", check=False, error=TargetError)
    if _lines(shallow.stdout)[0] == "true":
        return BaseRefError(
            f"{said}; this is a shallow clone, and its history stops before {base} and "
            "HEAD meet: fetch the full history with `git fetch --unshallow` (in GitHub "
            "Actions: actions/checkout with fetch-depth: 0), or pass "
            "--advreview-diff=uncommitted"
        )
    merge_base = run_git(root, "merge-base", base, "HEAD", check=False, error=TargetError)
    if merge_base.returncode == 1 and not merge_base.stderr.strip():
        return BaseRefError(
            f"{said}; {base} and HEAD have unrelated histories (no commit in common), so "
            "there is no branch change to review against it: pass the branch this work "
            "started from with --advreview-base=REF, or --advreview-diff=uncommitted"
        )
    return BaseRefError(
        f"{said}; pass another --advreview-base=REF, or --advreview-diff=uncommitted"
    )


#: Data files tools write next to the code (coverage.py, pytest-cov, ``coverage
#: combine``): never the author's change, matched by file name in any folder.
_TOOL_DATA = re.compile(r"\.coverage(\..+)?\Z")


@dataclass(frozen=True)
class NotTheChange:
    """Files that are never part of the code change, and never switch its mode.

    :param always: the decisions file (top-relative): in every mode and state, committed
        included; its entries reach the reviewer as decisions, not as code.
    :param written: what the run and its tools write into the working tree (report files,
        JUnit/report-log/HTML files of this run, the pytest cache folder, as top-relative
        files or ``/``-terminated folders), plus coverage data by name: left out while
        untracked or unstaged.  Staged or committed, they are the author's and stay in.
    """

    always: frozenset[str] = frozenset()
    written: tuple[str, ...] = ()

    def left_out(self, path: str, kind: str) -> bool:
        """Whether ``path`` is no part of the change when ``kind`` shows it (``staged``,
        ``unstaged``, ``untracked`` or ``branch``)."""
        if path in self.always:
            return True
        if kind not in ("unstaged", "untracked"):
            return False
        name = path.rpartition("/")[2]
        return bool(_TOOL_DATA.match(name)) or any(
            path == w or (w.endswith("/") and path.startswith(w)) for w in self.written
        )

    @classmethod
    def of(
        cls,
        top: Path,
        decisions: str | os.PathLike[str] | None,
        written: Iterable[str | os.PathLike[str]],
        *,
        rootdir: Path,
    ) -> NotTheChange:
        """From absolute paths (``written``: a folder given with a trailing ``/``)."""
        keys = {k for k in [lexical_key(decisions, top, rootdir)] if k is not None}
        found = []
        for path in written:
            key = lexical_key(path, top, rootdir)
            if key is not None:
                found.append(key + "/" if os.fspath(path).endswith("/") else key)
        return cls(always=frozenset(keys), written=tuple(found))


def lexical_key(path: str | os.PathLike[str] | None, top: Path, rootdir: Path) -> str | None:
    """``path`` (absolute) relative to the top level ``top`` as a ``/`` path, ``None``
    outside the repository.

    Lexical below ``rootdir``: a link on the way is not followed (a link named like the
    decisions file is left out of the change itself, never the file it points at; the
    base commit is asked for the very path the setting names, not where a link the branch
    committed leads).  Only ``rootdir`` (where pytest runs) is resolved, as git resolves
    the top.
    """
    if path is None:
        return None
    text = os.path.normpath(os.fspath(path))
    below = os.path.relpath(text, os.path.normpath(rootdir))
    if below != ".." and not below.startswith(".." + os.sep):
        text = os.path.normpath(os.path.join(os.path.realpath(rootdir), below))
    key = os.path.relpath(text, os.path.realpath(top))
    if key in (".", "..") or key.startswith(".." + os.sep) or os.path.isabs(key):
        return None
    return key.replace(os.sep, "/")


def _uncommitted(
    root: Path, excluded: set[str], outside: NotTheChange, drop: Callable[[str], bool]
) -> ChangeSet | None:
    every = status_entries(root)
    commands = {
        "unstaged": _shown_diff(root),
        "staged": _shown_diff(root, "--cached"),
        "untracked": "git ls-files --others --exclude-standard",
    }
    filtered: set[str] = set()

    def left_out(path: str, kind: str) -> bool:
        if path in excluded or outside.left_out(path, kind):
            return True
        if drop(path):
            filtered.add(path)
            return True
        return False

    found = {
        kind: [e.path for e in every if getattr(e, kind) and not left_out(e.path, kind)]
        for kind in commands
    }
    if not any(found.values()):
        return None
    changes = [kind for kind in ("unstaged", "staged") if found[kind]]
    description = " + ".join(changes) + " changes" if changes else ""
    if found["untracked"]:
        description = f"{description} + untracked files" if description else "untracked files"
    # Only name a left-out path in a command when that command would have shown it.
    diff_commands = tuple(
        _command(command, (e.path for e in every if getattr(e, kind) and left_out(e.path, kind)))
        for kind, command in commands.items()
        if found[kind]
    )
    files = sorted({path for paths in found.values() for path in paths})
    return ChangeSet(
        files=tuple(files),
        description=description,
        diff_commands=diff_commands,
        attributes=attribute_files([e.path for e in every]),
        converted=_converted(root, found["unstaged"]),
        filtered=tuple(sorted(filtered)),
        submodules=submodule_changes(root, files, None),
        left_out=_left_out(root, filtered, old="HEAD", new=None),
    )


def _left_out(
    root: Path, filtered: Collection[str], *, old: str, new: str | None
) -> tuple[LeftOutFile, ...]:
    """What the prompt says of the files ``advreview_exclude`` left out (:mod:`.leftout`).

    :param old: ``HEAD`` (uncommitted: none where the branch is unborn) or ``BASE...HEAD``
        (the merge base of a branch change).
    """
    if not filtered:
        return ()
    top = _toplevel(root)
    verify = ("rev-parse", "--verify", "--quiet", f"{old}^{{commit}}")
    start = run_git(top, *verify, check=False, error=TargetError)
    if "..." in old:
        start = run_git(top, "merge-base", *old.split("..."), check=False, error=TargetError)
    commit = _lines(start.stdout)[0] if start.returncode == 0 else None
    return leftout.describe(top, filtered, old=commit or None, new=new)


def _converted(root: Path, unstaged: Sequence[str]) -> tuple[str, ...]:
    """The unstaged files whose diff shows text git rewrote from the work tree's bytes.

    Where git has ``--attr-source``, the diff commands read no attributes and show the
    bytes themselves: nothing to name.  Only the unstaged diff reads the work tree.
    """
    try:
        if any(g.startswith("--attr-source=") for g in plain_diff_globals(root)):
            return ()
        return converted_files(_toplevel(root), unstaged)
    except GitError as exc:
        raise TargetError(f"{_PREFIX}: {exc}") from None


#: Most commits of a submodule's own log named in the prompt per pointer change.
SUBMODULE_LOG_LINES = 50
_NO_COMMIT = "0" * 40


def submodule_changes(root: Path, files: Collection[str], since: str | None) -> tuple[str, ...]:
    """Each submodule pointer change among ``files``, as the prompt names it.

    ``path: OLD -> NEW``, then the submodule's own ``git log --oneline OLD..NEW`` where its
    history is in the clone (at most :data:`SUBMODULE_LOG_LINES` lines), else a line that
    says it is not.  ``since``: the branch's base (``BASE...HEAD``); ``None``: the work tree
    against ``HEAD`` (staged and unstaged), where the new commit is the one checked out in
    the submodule.  A diff shows only ``Subproject commit`` lines: without this the
    reviewer sees two hashes and none of the code between them.
    """
    top = _toplevel(root)
    diff = ["diff", "--raw", "-z", "--no-abbrev", "--no-renames", "--ignore-submodules=none"]
    diff.append(f"{since}...HEAD" if since is not None else "HEAD")
    wanted = set(files)
    if not wanted:
        return ()
    # No pathspecs: a change set of many thousand files would not fit on a command line.
    proc = run_git(top, *diff, check=False)
    if proc.returncode != 0:
        return ()
    parts = proc.stdout.split(b"\0")
    lines: list[str] = []
    for meta, raw in zip(parts[::2], parts[1::2], strict=False):
        fields = meta.decode("ascii", "replace").lstrip(":").split()
        path = os.fsdecode(raw)
        if len(fields) < 4 or "160000" not in fields[:2] or path not in wanted:
            continue
        old, new = fields[2], fields[3]
        folder = top / path
        # Only a folder with its own .git: elsewhere git would answer for this repository.
        here = (folder / ".git").exists()
        if here:
            checked_out = run_git(folder, "rev-parse", "--verify", "-q", "HEAD", check=False)
            here = checked_out.returncode == 0
            if here and new == _NO_COMMIT:
                new = checked_out.stdout.decode("ascii", "replace").strip()
        status = fields[4] if len(fields) > 4 else "M"
        shown_old = "(none: added)" if status.startswith("A") else old
        shown_new = "(none: removed)" if status.startswith("D") else new
        if new == _NO_COMMIT and not status.startswith("D"):
            shown_new = "(not checked out here: the commit is unknown)"
        lines.append(f"{quote_path(path)}: {shown_old} -> {shown_new}")
        if _NO_COMMIT in (old, new):
            continue
        log = (
            run_git(folder, "log", "--oneline", "--no-decorate", f"{old}..{new}", check=False)
            if here
            else None
        )
        if log is None or log.returncode != 0:
            lines.append(
                "  (the submodule's history between these commits is not in this clone: "
                "review the pointer change as an unseen change of dependency)"
            )
            continue
        commits = os.fsdecode(log.stdout).splitlines()
        more = len(commits) - SUBMODULE_LOG_LINES
        lines += [f"  {c}" for c in commits[:SUBMODULE_LOG_LINES]]
        if more > 0:
            lines.append(f"  ... and {more} more commits (git -C {shlex.quote(path)} log)")
        if not commits:
            lines.append("  (no commit of NEW is new: the pointer moved back or sideways)")
    return tuple(lines)


def _branch_names(root: Path, base: str, *options: str) -> list[str]:
    """The top-level-relative paths ``git diff BASE...HEAD`` names (renames: two paths)."""
    diff = (
        "diff",
        "--name-only",
        "-z",
        "--no-renames",
        # A submodule that the branch's .gitmodules marks `ignore = all` is still listed.
        "--ignore-submodules=none",
        *options,
        f"{base}...HEAD",
        "--",
    )
    try:
        return split_z(run_git(root, *diff).stdout)
    except GitError as exc:
        raise _branch_error(root, base, exc) from None


def _branch(
    root: Path, base: str, excluded: set[str], outside: NotTheChange, drop: Callable[[str], bool]
) -> ChangeSet | None:
    names = _branch_names(root, base)
    excluded = excluded | {p for p in names if outside.left_out(p, "branch")}
    filtered = {p for p in names if p not in excluded and drop(p)}
    excluded |= filtered
    files = sorted({p for p in names if p not in excluded})
    if not files:
        return None
    command = _command(_shown_diff(root, f"{base}...HEAD"), (p for p in names if p in excluded))
    return ChangeSet(
        files=tuple(files),
        description=f"branch changes vs {base}",
        diff_commands=(command,),
        base=base,
        attributes=attribute_files(names),
        filtered=tuple(sorted(filtered)),
        submodules=submodule_changes(root, files, base),
        left_out=_left_out(root, filtered, old=f"{base}...HEAD", new="HEAD"),
    )


def change_set(
    root: Path,
    mode: Literal["auto", "uncommitted", "branch", "none"] | str,
    base: str | None,
    exclude: Collection[str | os.PathLike[str]] = (),
    *,
    resolver: PathResolver | None = None,
    ci: bool = False,
    outside: NotTheChange = NotTheChange(),
    drop: Callable[[str], bool] = lambda path: False,
) -> ChangeSet | None:
    """The code change to review, as the code prompts describe it.

    ``uncommitted``: staged, unstaged and untracked files (one ``git status``), described
    as "unstaged changes", "staged changes" or "unstaged + staged changes" (plus
    "untracked files"), with only the diff commands that have content.  ``branch``:
    ``git diff --name-only BASE...HEAD``, described as "branch changes vs BASE".
    ``auto``: uncommitted when there is any, else branch when a base is known; under CI
    (``ci``) branch only, because there the working tree holds nobody's edits, only what
    the checkout and earlier steps left (renormalised line endings, build artifacts), and
    reviewing that instead of the branch would pass a change nobody reviewed.

    :param root: a directory of the work tree; file names are relative to its top level.
    :param exclude: files reviewed as plan items (absolute, or relative to the top level);
        they are left out of ``files`` and excluded from the diff commands by pathspec, so
        a branch that only edits plans has no change set.
    :param resolver: resolves the absolute ``exclude`` paths (pass the one that resolved
        them already, e.g. during collection, to reuse its answers).
    :param ci: the run is a CI run (:attr:`.trust.run.Trust.in_ci`): ``auto`` means ``branch``, and
        without a base there is no change set (never the working tree's).
    :param outside: files that are no part of the change (:class:`NotTheChange`): left
        out like ``exclude``, so the decisions file or a coverage data file never turns
        ``auto`` into uncommitted mode.
    :returns: ``None`` when nothing is left to review (or ``mode`` is ``none``).  The
        change set has ``base`` only in branch mode.
    :raises BaseRefError: ``branch`` without a base, or git cannot diff against the base.
    """
    if mode == "none":
        return None
    excluded = _relative_excludes(_toplevel(root), exclude, resolver or PathResolver())
    if mode == "uncommitted" or (mode == "auto" and not ci):
        found = _uncommitted(root, excluded, outside, drop)
        if found is not None or mode == "uncommitted":
            return found
    if base is None:
        if mode == "branch":
            raise BaseRefError(
                f"{_PREFIX}: --advreview-diff=branch needs a base, and none of "
                f"origin/$GITHUB_BASE_REF, {', '.join(FALLBACK_BASES)} exists in {root}; "
                "pass --advreview-base=REF or set ini advreview_base"
            )
        return None
    return _branch(root, base, excluded, outside, drop)


def _quoted(paths: Iterable[str]) -> tuple[str, ...]:
    # The header and the reports are text: names as git prints them ("caf\\351.py").
    return tuple(quote_path(p) for p in paths)


def change_set_info(
    root: Path,
    change: ChangeSet | None,
    requested: str,
    base: str | None,
    *,
    ci: bool,
    note: str | None = None,
) -> ChangeSetInfo:
    """What the code item reviews, named for the header and the reports.

    Branch mode names the base ref, its commit, the merge base the diff starts from and
    ``HEAD``; uncommitted mode names ``HEAD`` as its base (the working tree is the head).

    :param change: from :func:`change_set` (``None``: nothing to review).
    :param requested: the ``--advreview-diff`` setting.
    :param base: from :func:`resolve_base`.
    :param ci: :attr:`.trust.run.Trust.in_ci` of the run.
    :param note: why there is no change set, when the caller knows better than git.
    """
    head = commit(root, "HEAD", error=TargetError)
    if change is None:
        if note is None:
            if requested == "none":
                note = "--advreview-diff=none"
            elif requested == "uncommitted":
                note = "no uncommitted change"
            elif base is not None:
                note = f"no code change against {base} (plans are reviewed as plan items)"
            elif ci:
                note = (
                    "under CI --advreview-diff=auto reviews only BASE...HEAD, and no base was "
                    "found; pass --advreview-base=REF (and fetch its history)"
                )
            else:
                note = "no uncommitted change and no base found"
        return ChangeSetInfo(
            requested=requested, ci=ci, mode="none", base=base, head_commit=head, note=note
        )
    if change.base is None:
        return ChangeSetInfo(
            requested=requested,
            ci=ci,
            mode="uncommitted",
            base="HEAD" if head else None,
            base_commit=head,
            head_commit=None,
            files=len(change.files),
            description=change.description,
            attributes=_quoted(change.attributes),
            converted=_quoted(change.converted),
            filtered=_quoted(change.filtered),
        )
    merge = run_git(root, "merge-base", change.base, "HEAD", check=False, error=TargetError)
    return ChangeSetInfo(
        requested=requested,
        ci=ci,
        mode="branch",
        base=change.base,
        base_commit=commit(root, change.base, error=TargetError),
        merge_base=_lines(merge.stdout)[0] if merge.returncode == 0 else None,
        head_commit=head,
        files=len(change.files),
        description=change.description,
        attributes=_quoted(change.attributes),
        filtered=_quoted(change.filtered),
    )
