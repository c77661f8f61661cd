"""``--advreview-head=REF``: a pull request's head reviewed as data, with the base's gate.

A fork's pull request is reviewed from a checkout of the trusted base: pytest, its
configuration, conftest files, plugins and the decisions file are the base's.  The head
only supplies *data*: its plans and the change ``BASE...REF``, read from git objects.
For the reviewer to read them, REF is materialised once per run in a private, read-only
checkout outside the rootdir, and removed at the end (also after errors and Ctrl-C).

Why the checkout is a repository of its own (``git init`` borrowing the base's objects
through ``objects/info/alternates``) and not a ``git worktree`` of the base: Codex
resolves a linked worktree to its main repository when it decides whether a project is
trusted (measured on 0.171.0), so a head checked out as a worktree of a trusted base
repository would have its ``.codex/config.toml`` loaded -- the head configuring its own
reviewer (provider, instructions, MCP commands run outside the sandbox).  A fresh
repository in a random temporary directory is never trusted.

What is not run while materialising: hooks (``core.hooksPath`` is the null device), the
filter drivers that REF's ``.gitattributes`` could select among those configured on the
machine (git-lfs, for example: each is blanked in the private repository's config),
submodules.  Nothing in the checkout is imported by pytest: it lies outside the rootdir
and is never given to pytest as a path to collect; review items only *name* REF's paths.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import tempfile
import warnings
from pathlib import Path
from typing import NoReturn

import pytest

from .. import warnfilter
from ..git import GitError, commit, redirected, run_git
from ..models import WireModel
from .isolation import _rmtree

__all__ = [
    "HEAD_CODEX_CONFIG",
    "HEAD_KEY",
    "HOLDER_PREFIX",
    "HeadCheckout",
    "HeadError",
    "HeadWarning",
    "materialise",
    "remove",
]

_PREFIX = "pytest-advreview"
#: Prefix of the temporary directory that holds the head checkout.
HOLDER_PREFIX = "advreview-head-"
#: ``workerinput`` key of the head checkout the controller shares with xdist workers.
HEAD_KEY = "advreview_head"
#: Extra ``-c`` values of every Codex launch in a head run, after the gate's
#: (``runner/codex.py`` ``GATE_CODEX_CONFIG``: the head's ``AGENTS.md`` is data to
#: review, not instructions).  No web search: a query is a way out of the sandbox for
#: whatever an injected reviewer has read (measured on 0.171: the value removes the
#: ``web_search`` tool from the request).
HEAD_CODEX_CONFIG = ('web_search="disabled"',)
#: Driver settings blanked for every filter driver configured on the machine, so that a
#: ``filter=<driver>`` line in REF's ``.gitattributes`` runs nothing on checkout.
_FILTER_KEYS = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))


class HeadError(Exception):
    """REF cannot be reviewed (not a commit, no common history); the text says the fix."""


class HeadWarning(pytest.PytestWarning):
    """The head checkout could not be removed completely; the text names it."""


class HeadCheckout(WireModel):
    """The materialised head of one run; the controller sends it to the xdist workers.

    :param ref: REF as the user gave it.
    :param sha: REF's commit, resolved once: a push after the run started is not reviewed.
    :param base: the base as named (``--advreview-base``, else ``HEAD``, the checkout).
    :param base_sha: the base's commit.
    :param merge_base: the merge base of the two: ``BASE...REF`` starts there.
    :param path: top level of the private read-only checkout of ``sha``.
    :param holder: the temporary directory that contains ``path`` (removed at the end).
    """

    ref: str
    sha: str
    base: str
    base_sha: str
    merge_base: str
    path: str
    holder: str

    @property
    def header(self) -> str:
        """The report header line naming both commits."""
        return (
            f"advreview: head {self.ref} = {self.sha[:12]} reviewed as data against base "
            f"{self.base} = {self.base_sha[:12]} (merge base {self.merge_base[:12]}); "
            f"read-only checkout {self.path}"
        )

    @property
    def description(self) -> str:
        """The code change's phrase in the prompt."""
        return f"the changes of {self.ref} ({self.sha[:12]}) against {self.base}"


def _resolve(repo: Path, ref: str, base: str | None) -> tuple[str, str, str, str]:
    """REF's commit, the base's name and commit, and their merge base."""
    shown = shlex.quote(ref)
    sha = commit(repo, ref)
    if sha is None:
        raise HeadError(
            f"{_PREFIX}: --advreview-head={ref}: {ref!r} is not a commit, branch or tag of "
            f"the repository at {repo}; fetch the pull request's head first (e.g. "
            "`git fetch origin pull/<number>/head`, or `git fetch origin <sha>`) and pass "
            f"its commit id: --advreview-head=<sha> (tried `git rev-parse --verify {shown}`)"
        )
    base_name = base if base is not None else "HEAD"
    base_sha = commit(repo, base_name)
    if base_sha is None:
        raise HeadError(
            f"{_PREFIX}: the base {base_name!r} of --advreview-head={ref} is not a commit of "
            f"the repository at {repo}; check out the base commit (a repository with at "
            "least one commit) or pass --advreview-base=REF"
        )
    proc = run_git(repo, "merge-base", base_sha, sha, check=False)
    merge_base = os.fsdecode(proc.stdout).strip()
    if proc.returncode != 0 or not merge_base:
        raise HeadError(
            f"{_PREFIX}: --advreview-head={ref} ({sha[:12]}) has no history in common with "
            f"the base {base_name} ({base_sha[:12]}) in {repo}, so there is no BASE...REF "
            "change to review: a shallow clone lacks the merge base, or REF belongs to "
            "another project; fetch the full history (actions/checkout fetch-depth: 0, "
            "then `git fetch origin pull/<number>/head`) or pass another --advreview-base=REF"
        )
    return sha, base_name, base_sha, merge_base


def materialise(repo: Path, ref: str, base: str | None, *, rootdir: Path) -> HeadCheckout:
    """Resolve REF and check it out, read-only, in a private temporary repository.

    :param repo: top level of the base checkout (the trusted repository).
    :param ref: the user's ``--advreview-head``.
    :param base: ``--advreview-base`` / ini ``advreview_base``; ``None`` for ``HEAD``.
    :param rootdir: pytest's rootdir; the checkout must lie outside it, or pytest could
        collect REF's files.
    :raises HeadError: REF or the base is not a commit, they share no history, the
        temporary directory is inside the rootdir, ``GIT_DIR`` or another variable
        redirects git, or git failed; nothing is left behind.
    """
    redirecting = redirected()
    if redirecting:
        # git would run every command of the checkout against that repository instead:
        # REF's files would be checked out into the user's work tree.
        raise HeadError(
            f"{_PREFIX}: --advreview-head cannot run while {redirecting} (inside a git "
            "hook?): git would check REF out into that repository; unset them"
        )
    try:
        sha, base_name, base_sha, merge_base = _resolve(repo, ref, base)
    except GitError as exc:
        raise HeadError(f"{_PREFIX}: --advreview-head={ref}: {exc}") from None
    holder = Path(tempfile.mkdtemp(prefix=HOLDER_PREFIX)).resolve()
    if holder.is_relative_to(rootdir.resolve()):
        shutil.rmtree(holder, ignore_errors=True)
        raise HeadError(
            f"{_PREFIX}: --advreview-head needs a temporary directory outside the rootdir "
            f"{rootdir}, but {holder.parent} is inside it (TMPDIR?): pytest could then "
            "collect the head's files and import its conftest.py; point TMPDIR elsewhere"
        )
    checkout = HeadCheckout(
        ref=ref,
        sha=sha,
        base=base_name,
        base_sha=base_sha,
        merge_base=merge_base,
        path=str(holder / (repo.name or "head")),
        holder=str(holder),
    )
    try:
        _check_out(repo, checkout)
    except BaseException as exc:
        # Ctrl-C included: a half-built checkout must not outlive this call.  Its removal
        # failing under a warnings filter that makes that an error is said after the
        # reason the checkout failed, not instead of it (Ctrl-C stays Ctrl-C).
        left = ""
        try:
            remove(checkout)
        except HeadError as not_removed:
            left = f"\n{not_removed}"
        if isinstance(exc, (GitError, OSError)):
            raise HeadError(
                f"{_PREFIX}: could not check out --advreview-head={ref} ({sha[:12]}): {exc}{left}"
            ) from None
        raise
    return checkout


def _check_out(repo: Path, checkout: HeadCheckout) -> None:
    path = Path(checkout.path)
    # An empty template: no sample hooks, nothing from init.templateDir.
    run_git(Path(checkout.holder), "init", "--quiet", "--template=", str(path))
    git_dir = path / ".git"
    common = Path(os.fsdecode(run_git(repo, "rev-parse", "--git-common-dir").stdout).strip())
    if not common.is_absolute():
        common = (repo / common).resolve()
    # The base's objects, borrowed, not copied: REF and the base may be any commits git
    # has (a fetched pull/N/head has no branch).
    info = git_dir / "objects" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "alternates").write_text(f"{common / 'objects'}\n", encoding="utf-8")
    if (common / "shallow").is_file():
        shutil.copyfile(common / "shallow", git_dir / "shallow")
    settings = [
        ("core.hooksPath", os.devnull),
        ("core.fsmonitor", "false"),
        ("submodule.recurse", "false"),
        *_blank_filters(path),
    ]
    for key, value in settings:
        run_git(path, "config", "--local", key, value)
    run_git(path, "checkout", "--quiet", "--detach", checkout.sha)
    _read_only(path)
    # chmod changed every file's ctime: refresh the index once, so that each snapshot's
    # `git status` compares stat data instead of hashing the whole tree.
    run_git(path, "update-index", "-q", "--refresh", check=False)


def _blank_filters(path: Path) -> list[tuple[str, str]]:
    """Settings that disable every filter driver configured on this machine."""
    proc = run_git(path, "config", "--name-only", "--get-regexp", r"^filter\.", check=False)
    drivers: dict[str, None] = {}
    for line in os.fsdecode(proc.stdout).splitlines():
        name = line[len("filter.") :].rpartition(".")[0]
        if name:
            drivers.setdefault(name, None)
    return [(f"filter.{name}.{key}", value) for name in drivers for key, value in _FILTER_KEYS]


def _read_only(path: Path) -> None:
    """Remove every write bit below ``path`` (``.git`` excepted); links are not followed.

    chmod follows a symlink, so a link in REF pointing at a file of this machine would
    make that file read-only: links are skipped.  (A reviewer is the files' owner and could
    chmod them back; under ``workspace-write`` a write is then a reported mutation.)
    """
    for folder, dirs, files in os.walk(path):
        here = Path(folder)
        if here == path:
            dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*files, *dirs]:
            target = here / name
            if not target.is_symlink():
                os.chmod(target, stat.S_IMODE(target.lstat().st_mode) & ~0o222)
    os.chmod(path, stat.S_IMODE(path.stat().st_mode) & ~0o222)


def remove(checkout: HeadCheckout) -> None:
    """Delete the checkout and its holder (read-only folders included); warn if it stays."""
    holder = Path(checkout.holder)
    _rmtree(holder)
    if holder.exists():
        # Under a warnings filter that makes it an error: a HeadError with the text and the
        # filter line (shown as a message at collection and at the session's end).
        with warnfilter.reported(_head_error):
            warnings.warn(
                HeadWarning(
                    f"{_PREFIX}: the head checkout {holder} could not be removed completely;"
                    f" remove it with `chmod -R u+w {shlex.quote(str(holder))} && rm -rf "
                    f"{shlex.quote(str(holder))}`"
                ),
                stacklevel=2,
            )


def _head_error(text: str) -> NoReturn:
    raise HeadError(text)
