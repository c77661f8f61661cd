"""The cache key of a verdict: everything that decides what a reviewer says about a target.

A stored verdict is reused only when nothing that could change it has changed.  This
module is the one place that says what that is:

* **the reviewer** (:func:`reviewer_identity`): the backend and everything that selects
  or instructs the model behind it.  For ``command`` the command line; for Codex the
  model, reasoning, sandbox, approvals, every ``--advreview-codex-config`` value
  (provider, base URL, …), the ``-c`` values a gate adds (``GATE_CODEX_CONFIG``), the
  Codex ``config.toml`` and global ``AGENTS.md`` that the run's ``CODEX_HOME`` holds,
  ``OPENAI_BASE_URL``; for Claude Code its ``--advreview-claude-model``, the
  ``settings.json`` and ``CLAUDE.md`` of its ``CLAUDE_CONFIG_DIR``, ``ANTHROPIC_BASE_URL`` and
  ``ANTHROPIC_MODEL``; and for every backend the output format, the review language and
  the prompt version.  A change starts a new review.
* **the content** (:func:`plan_digest`, :func:`code_digest`): the prompt body and every
  byte reviewed.  For a plan its bytes; for the code change every changed byte, untracked,
  binary and symlinked files included, and the work tree of every changed submodule or
  nested repository (``git diff`` alone shows only ``Subproject commit …-dirty``).  A
  change is the next round.
* **the decisions** (:func:`cache_key`): a decision not sent before is the next round.

The reviewer identity is stored as one digest per component (never the values: a
``-c`` value may carry a token), so a message can say which one changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .git import (
    STATUS_V2_ARGS,
    GitError,
    commit,
    literal_pathspec,
    parse_status_v2_z,
    plain_diff_globals,
    run_git,
)
from .models import ChangeSet, Decision
from .options import default
from .prompts import PROMPT_VERSION
from .trust import run as trust

if TYPE_CHECKING:
    from .settings import Settings

__all__ = [
    "IDENTITY_SETTINGS",
    "NOT_IDENTITY_SETTINGS",
    "CacheKey",
    "CacheKeyError",
    "cache_key",
    "change_set_hash",
    "code_digest",
    "plan_digest",
    "plan_hash",
    "reviewer_identity",
]


class CacheKeyError(Exception):
    """The content of a target could not be read to key its verdict (git failed)."""


#: Settings that decide what the reviewer says, per backend (``*``: every backend).
IDENTITY_SETTINGS: Final[Mapping[str, frozenset[str]]] = {
    "*": frozenset(
        {
            *("reviewer", "output_format", "language"),
            # Several samples and verification (docs/confirmation.md): only when set.
            *("samples", "sample_reviewers", "verify", "verify_demotes", "verifier"),
        }
    ),
    "command": frozenset({"command"}),
    # env_allow: what the reviewer's tools see (a test it runs may pass or fail by it).
    "codex": frozenset({"model", "reasoning", "sandbox", "approvals", "codex_config", "env_allow"}),
    "claude": frozenset({"claude_model"}),
}

#: Identity settings keyed only away from their default (:func:`reviewer_identity`).
_ONLY_SET: Final = frozenset(
    {"samples", "sample_reviewers", "verify", "verify_demotes", "verifier"}
)

#: Settings that never change a verdict, and why (a test checks that every field of
#: ``Settings`` is in exactly one of the two tables, so a new setting must be placed).
NOT_IDENTITY_SETTINGS: Final[Mapping[str, str]] = {
    "enabled": "turns the plugin on",
    # Which binary runs is the doctor's to check; the model, provider and configuration
    # it reviews with are keyed.  (The benchmark fills a cache with a fake codex on
    # purpose; a wrapper script that adds its own -c values is not visible here.)
    "codex": "the executable's path: what it reviews with is keyed",
    "claude": "the executable's path: what it reviews with is keyed",
    "sandbox_explicit": "only decides whether the sandbox hint is printed",
    "approvals_why": "only explains the approvals in the header (approvals itself is keyed)",
    "timeout": "an attempt that runs out is an error, never a verdict",
    "connect_timeout": "an attempt that cannot reach the model is an error, never a verdict",
    "review_timeout": "a review that runs out is an error, never a verdict",
    "pull_request": "waivers and grants are judged per run against it, never cached",
    "gate_ignored": "what the header says the gate did not use; the settings used are keyed",
    "gate_where": "where the gate's settings came from, for the header",
    "max_rounds": "applied to the stored rounds on every run",
    "fail_on": "the stored review is judged again under this run's threshold",
    "pre_existing": "decides the outcome of a pre-existing finding from the stored review "
    "and the diff; the reviewer is asked the same",
    "isolation": "the reviewer sees a mirror of the same content",
    "report": "a report file",
    "sarif": "a report file",
    "rdjson": "a report file",
    "json_report": "a report file",
    "budget_tokens": "decides whether a review starts, not what it says",
    "budget_money": "decides whether a review starts, not what it says",
    "budget_scope": "decides whether a review starts, not what it says",
    "max_change_files": "decides whether a review starts, not what it says",
    "max_change_lines": "decides whether a review starts, not what it says",
    "prices": "turns the tokens into money in the reports, not what a review says",
    "fresh": "ignores the stored state altogether",
    "progress": "only what the terminal shows while reviews run",
    "jobs": "how many reviews run at once, not what any of them says",
    "diff": "chooses the change set, whose content is keyed",
    "base": "chooses the change set, whose content is keyed",
    "against_plan": "the plan's text and path are keyed as content",
    "plans": "chooses the plans, whose content is keyed",
    "plan_scope": "chooses the plans, whose content is keyed",
    "commands": "a person's waivers and decisions, applied after the review; a decision "
    "the reviewer is sent is keyed as a decision",
    "exclude": "chooses the change set, whose content is keyed",
    "path_instructions": "the instructions that apply are part of the prompt body, keyed",
    "decisions": "the decisions' content is keyed, not the file's path",
    "allow_untracked": "mutation policy, checked on every review",
    "github": "a report",
    "strict_exit": "the exit status (the Codex settings of the gate it makes: codex_gate)",
    "shard": "chooses which items this job reviews",
    "lead": "the lead's edits and decisions reach the reviewer as content and decisions",
    "lead_command": "the lead's edits and decisions are keyed, not who made them",
    "lead_model": "the lead's edits and decisions are keyed, not who made them",
    "lead_patch": "a report file",
    "lead_code": "decides whether the lead may edit code; its edits are keyed as content",
    "head": "the head's content and the prompt's untrusted-data frame are keyed as content",
    "eval": "chooses the eval corpus; an eval run stores no verdict",
    "eval_epochs": "how often each eval case is reviewed",
    "eval_report": "a report file",
    "eval_baseline": "a report file to compare with",
    "eval_transcripts": "where eval transcripts are kept",
    "eval_rescore": "whether an eval run asks the reviewer at all",
    "eval_min_recall": "an eval threshold, applied to the scores",
    "eval_max_false_block": "an eval threshold, applied to the scores",
    "eval_max_flip": "an eval threshold, applied to the scores",
}

#: Files under ``CODEX_HOME`` that select the provider or instruct the model.
_CODEX_HOME_FILES: Final = ("config.toml", "AGENTS.md", "AGENTS.override.md")
#: Environment variables that Codex reads to choose where requests go.
_CODEX_ENV: Final = ("OPENAI_BASE_URL",)
#: Files under ``CLAUDE_CONFIG_DIR`` that choose Claude Code's model (``settings.json``'s
#: ``model``) or instruct it.
_CLAUDE_HOME_FILES: Final = ("settings.json", "CLAUDE.md")
#: Environment variables that Claude Code reads to choose its model and endpoint.
_CLAUDE_ENV: Final = ("ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL")
_MISSING: Final = "missing"
#: ``hashlib`` ``update`` of the digest being built.
_Feed = Callable[[bytes], object]


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except FileNotFoundError:
        return _MISSING
    except OSError as exc:
        # Unreadable now, maybe readable later: never equal to a readable file's digest.
        return f"unreadable:{exc.errno}"


def reviewer_identity(
    settings: Settings,
    environ: Mapping[str, str] | None = None,
    run_trust: trust.Trust | None = None,
) -> dict[str, str]:
    """Component name -> digest of everything that identifies the reviewer of this run.

    Computed once per run.  A backend other than ``codex`` and ``command`` (a plugin's)
    gets every setting of both, because the plugin may use any of them.

    :param environ: where ``CODEX_HOME`` and ``OPENAI_BASE_URL`` are read (``os.environ``).
    :param run_trust: the run's trust (:func:`.trust.run.of_run`): whether it gates.
    """
    env = os.environ if environ is None else environ
    backend = settings.reviewer
    # Every backend that reviews: the reviewer's and each sample's (a plugin's: all).
    backends = {backend, *settings.sample_reviewers, *filter(None, [settings.verifier])}
    fields = IDENTITY_SETTINGS["*"].union(
        *(
            IDENTITY_SETTINGS.get(name, frozenset().union(*IDENTITY_SETTINGS.values()))
            for name in backends
        )
    )
    identity = {
        name: _digest(getattr(settings, name))
        for name in sorted(fields)
        # At their defaults (one review) these leave the identity as it was before they
        # existed: an upgrade does not re-review every stored verdict.
        if not (name in _ONLY_SET and getattr(settings, name) == default(name))
    }
    identity["prompt_version"] = PROMPT_VERSION
    if backends & {"codex"} or backends - IDENTITY_SETTINGS.keys():
        from .runner.codex import GATE_CODEX_CONFIG

        # Under a gate the reviewer gets no project instructions from the checkout.
        if run_trust is None:  # a direct call: the environment given decides
            run_trust = trust.decide(env, strict_exit=settings.strict_exit, head=settings.head)
        gate = run_trust.gated
        identity["codex_gate"] = _digest(GATE_CODEX_CONFIG if gate else [])
        home_text = env.get("CODEX_HOME", "").strip()
        home = Path(home_text) if home_text else Path.home() / ".codex"
        for name in _CODEX_HOME_FILES:
            identity[f"codex_home/{name}"] = _file_digest(home / name)
        for var in _CODEX_ENV:
            identity[f"env/{var}"] = _digest(env.get(var))
    if "claude" in backends:
        home_text = env.get("CLAUDE_CONFIG_DIR", "").strip()
        claude_home = Path(home_text) if home_text else Path.home() / ".claude"
        for name in _CLAUDE_HOME_FILES:
            identity[f"claude_home/{name}"] = _file_digest(claude_home / name)
        for var in _CLAUDE_ENV:
            identity[f"env/{var}"] = _digest(env.get(var))
    return identity


@dataclass(frozen=True)
class CacheKey:
    """The key a stored verdict is checked against (see the module docstring)."""

    #: Component -> digest of the reviewer's identity (:func:`reviewer_identity`).
    reviewer: dict[str, str]
    #: Digest of the full content reviewed (:func:`plan_digest` / :func:`code_digest`).
    content: str
    #: This target's entries of the decisions file; any not sent before is a new round.
    decisions: tuple[Decision, ...] = ()


def cache_key(
    identity: Mapping[str, str], content: str, decisions: Sequence[Decision] = ()
) -> CacheKey:
    """The cache key of one target in this run.

    :param identity: :func:`reviewer_identity` of the run.
    :param content: :func:`plan_digest` or :func:`code_digest` of the target.
    :param decisions: the target's entries of the decisions file.
    """
    return CacheKey(reviewer=dict(identity), content=content, decisions=tuple(decisions))


# -- content -------------------------------------------------------------------------------

_CHUNK = 1 << 20


def plan_hash(path: Path) -> str:
    """sha256 (hex) of a plan's bytes, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def plan_digest(path: Path, prompt_body: str) -> str:
    """The content key of a plan item: the prompt body and the plan's bytes."""
    digest = hashlib.sha256(b"plan\0")
    digest.update(prompt_body.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(plan_hash(path).encode())
    return digest.hexdigest()


def code_digest(root: Path, change: ChangeSet, prompt_body: str, plan_text: str = "") -> str:
    """The content key of the code item: the prompt, every changed byte, the plan.

    :param root: a directory of the work tree.
    :param plan_text: the plan a code-vs-plan review is against ("" otherwise).
    :raises CacheKeyError: git failed.
    """
    digest = hashlib.sha256(b"code\0")
    digest.update(prompt_body.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(change_set_hash(root, change).encode() + b"\0plan\0")
    digest.update(plan_text.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


#: What the reviewer's diff commands show (targets._shown_diff), as a full binary patch:
#: attributes, textconv, external diff drivers and a branch's ``.gitmodules`` ``ignore``
#: never change what is hashed.
_DIFF = (
    "diff",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--binary",
    "--no-renames",
    "--ignore-submodules=none",
)
#: Nested repositories inside nested repositories are followed this deep.
_MAX_DEPTH = 8


def _git(cwd: Path, *args: str, check: bool = True) -> bytes:
    try:
        return run_git(cwd, *args, check=check).stdout
    except GitError as exc:
        raise CacheKeyError(f"pytest-advreview: cannot read the change to review: {exc}") from None


def _diff(cwd: Path, *args: str) -> bytes:
    """``git diff`` with the global options of the reviewer's diff commands."""
    try:
        globals_ = plain_diff_globals(cwd)
    except GitError as exc:
        raise CacheKeyError(f"pytest-advreview: cannot read the change to review: {exc}") from None
    return _git(cwd, *globals_, *_DIFF, *args)


def _is_repo(path: Path) -> bool:
    """A submodule's or nested repository's work tree (not a symlink to one)."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and os.path.lexists(path / ".git")


def _hash_entry(path: Path, feed: _Feed, depth: int) -> None:
    """Feed what is at ``path`` into ``digest``: bytes, link target or a repo's state."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        feed(b"missing\0")
        return
    except OSError as exc:
        feed(f"unreadable:{exc.errno}\0".encode())
        return
    if stat.S_ISLNK(info.st_mode):
        # What git would store: the link's text, not the file it points at.
        feed(b"link\0" + os.fsencode(os.readlink(path)) + b"\0")
    elif stat.S_ISDIR(info.st_mode):
        if _is_repo(path):
            feed(b"repo\0")
            _repo_state(path, feed, depth + 1)
        else:
            feed(b"dir\0")
    else:
        try:
            feed(b"file\0" + plan_hash(path).encode() + b"\0")
        except OSError as exc:
            feed(f"unreadable:{exc.errno}\0".encode())


def _repo_state(repo: Path, feed: _Feed, depth: int) -> None:
    """A submodule's (or nested repository's) commit and every uncommitted byte in it."""
    if depth > _MAX_DEPTH:
        feed(b"too-deep\0")
        return
    head = _git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False).strip()
    feed(b"head\0" + head + b"\0")
    _uncommitted(repo, feed, None, depth)


def _uncommitted(repo: Path, feed: _Feed, files: Sequence[str] | None, depth: int) -> None:
    """``git diff HEAD``, the bytes of every changed or untracked file, changed repositories.

    :param files: only these top-level-relative paths (``None``: everything).
    """
    specs = ["--", *(literal_pathspec(p) for p in files)] if files is not None else ["--"]
    if commit(repo, "HEAD") is not None:
        feed(_diff(repo, "HEAD", *specs))
    else:  # unborn branch: no HEAD to diff against, so index and work tree separately
        feed(_diff(repo, "--cached", *specs))
        feed(b"\0worktree\0")
        feed(_diff(repo, *specs))
    top = Path(os.fsdecode(_git(repo, "rev-parse", "--show-toplevel").rstrip(b"\n")))
    _head, entries = parse_status_v2_z(_git(repo, *STATUS_V2_ARGS))
    wanted = None if files is None else set(files)
    for entry in sorted(entries, key=lambda e: e.path):
        if wanted is not None and entry.path not in wanted:
            continue
        path = top / entry.path
        if entry.untracked:
            feed(b"\0untracked\0" + os.fsencode(entry.path) + b"\0")
            _hash_entry(path, feed, depth)
        elif _is_repo(path):
            # A changed submodule: the diff says only "Subproject commit …-dirty".
            feed(b"\0submodule\0" + os.fsencode(entry.path) + b"\0")
            _repo_state(path, feed, depth + 1)
        else:
            # The bytes that run: git diff shows the work tree's text after the clean
            # conversions its attributes select (ident, filter, working-tree-encoding)
            # on a git without --attr-source, and a change inside them would not move it.
            feed(b"\0worktree\0" + os.fsencode(entry.path) + b"\0")
            _hash_entry(path, feed, depth)


def changed_lines(root: Path, change: ChangeSet) -> int:
    """Lines the change set adds and removes (``git diff --numstat`` of what the reviewer
    is shown; an untracked file counts its lines, a binary file none).

    :raises CacheKeyError: git failed.
    """
    specs = [literal_pathspec(p) for p in change.files]
    if not specs:
        return 0
    if change.base is not None:
        against = [f"{change.base}...HEAD"]
    else:
        head = _git(root, "rev-parse", "--verify", "--quiet", "HEAD", check=False).strip()
        against = ["HEAD"] if head else ["--cached"]
    out = _diff(root, "--numstat", "-z", *against, "--", *specs)
    total, seen = 0, set()
    for row in out.decode("utf-8", "surrogateescape").split("\0"):
        added, removed, name = [*row.split("\t", 2), "", ""][:3]
        seen.add(name)
        total += sum(int(n) for n in (added, removed) if n.isdigit())
    for name in change.files:
        if name not in seen:
            # Untracked: git diff does not show it, the reviewer reads it whole.
            try:
                total += (root / name).read_bytes().count(b"\n")
            except OSError:
                continue
    return total


def change_set_hash(root: Path, change: ChangeSet) -> str:
    """sha256 (hex) of exactly what the change set shows the reviewer.

    Branch mode (``change.base`` set): ``git diff BASE...HEAD`` of the change set's files
    (a submodule's commits name its content).  Uncommitted: ``git diff HEAD`` (the index
    alone on an unborn branch), the name and bytes of each changed or untracked file (a
    symlink's target text; git diff may show a converted text), and the commit and
    uncommitted bytes of every changed submodule or nested repository.  Files outside
    ``change.files`` (plans reviewed on their own) never move the hash.

    :raises CacheKeyError: git failed.
    """
    digest = hashlib.sha256()
    if change.base is not None:
        specs = [literal_pathspec(p) for p in change.files]
        digest.update(_diff(root, f"{change.base}...HEAD", "--", *specs))
        return digest.hexdigest()
    _uncommitted(root, digest.update, list(change.files), 0)
    return digest.hexdigest()
