"""Wire formats: the pydantic models that cross a process, file or cache boundary.

Every model is frozen and forbids unknown fields, so a typo in a result file or a cache
entry is an error instead of a silently ignored value.  :class:`RunnerResult` keeps the
field names and values of the published result schema
(``docs/advreview-results.schema.json``) exactly.
"""

from __future__ import annotations

import hashlib
import re
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "ChangeSet",
    "Changed",
    "ChangedLines",
    "CommandsFile",
    "Decision",
    "DecisionAction",
    "Finding",
    "IgnoredCommand",
    "ItemRecord",
    "LeadAction",
    "LeadEdit",
    "LeadEvaluation",
    "LeadRecord",
    "LeftOutFile",
    "Location",
    "OpenFinding",
    "Operation",
    "OutputFormat",
    "PathRule",
    "PullRequestCommand",
    "Review",
    "ReviewQuality",
    "ReviewStatus",
    "ReviewedChange",
    "RoundRecord",
    "RoundsGrant",
    "RunnerResult",
    "RunnerStatus",
    "SampleMention",
    "SampleRecord",
    "Severity",
    "TokenUsage",
    "Triage",
    "Verdict",
    "VerificationRecord",
    "Waiver",
    "attributes_warning",
    "finding_id",
]


class WireModel(BaseModel):
    """Base of every wire format: immutable, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Severity(str, Enum):
    """Severity of a finding; ``critical > high > medium``."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"

    @property
    def rank(self) -> int:
        """Higher is worse: critical 3, high 2, medium 1."""
        return _SEVERITY_RANK[self]

    def at_least(self, other: Severity) -> bool:
        """True when this severity is ``other`` or worse."""
        return self.rank >= other.rank


_SEVERITY_RANK = {Severity.CRITICAL: 3, Severity.HIGH: 2, Severity.MEDIUM: 1}


class Verdict(str, Enum):
    """The reviewer's verdict, taken from the last non-empty line of the review."""

    APPROVED = "APPROVED"
    REVISE = "REVISE"


class Operation(str, Enum):
    """The three dispatch operations of the runner contract."""

    INITIAL = "initial"
    RESUME = "resume"
    FRESH_EXEC = "fresh-exec"


class OutputFormat(str, Enum):
    """How the reviewer answers: the markdown contract or strict JSON."""

    MARKDOWN = "markdown"
    JSON = "json"


class RunnerStatus(str, Enum):
    """``result`` of a runner result: how the dispatch ended."""

    SUCCESS = "success"
    TIMEOUT = "timeout"
    LAUNCH_FAILURE = "launch_failure"
    INFRA_ERROR = "infra_error"
    INPUT_ERROR = "input_error"


class ReviewQuality(str, Enum):
    """``review_quality`` of a runner result: complete, or degraded (environment, content)."""

    VALID = "valid"
    DEGRADED_ENVIRONMENTAL = "degraded_environmental"
    DEGRADED_CONTENT = "degraded_content"
    UNKNOWN = "unknown"


class Location(WireModel):
    """Where a finding points: a file (code) or a section (plans), with lines when given."""

    file: str | None = None
    section: str | None = None
    line_start: int | None = None
    line_end: int | None = None

    def __str__(self) -> str:
        where = self.file or self.section or ""
        if self.line_start is not None:
            end = self.line_end if self.line_end is not None else self.line_start
            lines = f"line {end}" if end == self.line_start else f"lines {self.line_start}-{end}"
            where = f"{where} {lines}".strip()
        return where

    @property
    def has_line(self) -> bool:
        """Whether the reviewer cited a usable line: 1 or more, and not past a range's end."""
        start, end = self.line_start, self.line_end
        return start is not None and start >= 1 and (end is None or end >= start)


_WS = re.compile(r"\s+")


def finding_id(title: str, location: Location | None) -> str:
    """A short id that stays the same for the same finding title and location.

    Whitespace and case are normalised so that a reviewer re-wrapping a title does not
    produce a new id; a person can quote the id in a decisions file.
    """
    norm = _WS.sub(" ", title).strip().lower()
    where = _WS.sub(" ", str(location) if location else "").strip().lower()
    digest = hashlib.sha256(f"{norm}\x00{where}".encode()).hexdigest()
    return f"AR-{digest[:6]}"


class SampleMention(WireModel):
    """One sample's report of a merged finding (docs/confirmation.md): which sample said
    it, which reviewer that sample was, and its own wording."""

    #: The sample's number, 1 to K.
    sample: int = Field(ge=1)
    reviewer: str
    #: The id and title the sample gave the finding (its wording).
    id: str
    title: str
    what_can_go_wrong: str | None = None


class Finding(WireModel):
    """One finding of a review, with the four answers the finding bar asks for."""

    id: str
    severity: Severity
    title: str
    location: Location | None = None
    what_can_go_wrong: str | None = None
    why_vulnerable: str | None = None
    impact: str | None = None
    recommendation: str | None = None
    #: Replacement text for the cited lines, when the reviewer proposed one (a markdown
    #: ```suggestion block in the recommendation, or the JSON contract's ``suggestion``).
    suggestion: str | None = None
    #: How sure the reviewer says it is, 0-1, when it said so (``None``: it did not).
    #: Reported only: it routes nothing and never takes a finding out of the failing ones.
    confidence: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    #: With several samples: each sample that reported it (empty: one review said it).
    samples: tuple[SampleMention, ...] = ()
    #: A verifier refuted it (``advreview_verify``): its reason and evidence.  Whether
    #: that takes it below fail-on is :func:`~pytest_advreview.outcome.decide`'s.
    refuted: str | None = None

    def answers(self) -> dict[str, str | None]:
        """The four answers of the finding bar, by the label the reports print."""
        return {
            "What can go wrong": self.what_can_go_wrong,
            "Why vulnerable": self.why_vulnerable,
            "Impact": self.impact,
            "Recommendation": self.recommendation,
        }

    def line(self) -> str:
        """The one-line form used in failures: ``[severity: X] ID title (location)``."""
        where = f" ({self.location})" if self.location and str(self.location) else ""
        said = f" [{self.reported_by()}]" if self.samples else ""
        refuted = f" [refuted by verification: {self.refuted}]" if self.refuted else ""
        return f"[severity: {self.severity.value}] {self.id} {self.title}{where}{said}{refuted}"

    def reported_by(self) -> str:
        """Which samples reported it: ``reported by sample 2 (codex)``."""
        names = ", ".join(f"{m.sample} ({m.reviewer})" for m in self.samples)
        return f"reported by sample{'s' if len(self.samples) != 1 else ''} {names}"


class Review(WireModel):
    """A parsed review: summary, findings, verdict and the text exactly as received."""

    summary: str = ""
    findings: tuple[Finding, ...] = ()
    verdict: Verdict | None = None
    raw: str = ""

    @property
    def max_severity(self) -> Severity | None:
        """The worst severity among the findings, or ``None`` without findings."""
        return max((f.severity for f in self.findings), key=lambda s: s.rank, default=None)

    def contradiction(self, fail_on: Severity) -> str | None:
        """Why this review contradicts itself at the ``fail_on`` threshold, else ``None``.

        ``VERDICT: APPROVED`` next to a finding at or above ``fail_on`` says "pass" and
        "fail" at once.  Neither half can be trusted, so it is never judged: the runner
        treats it as format drift (one retry) and the outcome as an error.  Findings
        below ``fail_on`` do not contradict an approval (they pass with a warning).
        """
        if self.verdict is not Verdict.APPROVED:
            return None
        failing = [f for f in self.findings if f.severity.at_least(fail_on)]
        if not failing:
            return None
        worst = max(failing, key=lambda f: f.severity.rank)
        count = f"{len(failing)} finding" + ("" if len(failing) == 1 else "s")
        return (
            f"contradictory: VERDICT: APPROVED with {count} at or above fail-on "
            f"{fail_on.value} ({worst.line()})"
        )


class Triage(WireModel):
    """``triage`` of a runner result: cheap counts over the findings."""

    status: Literal["ok", "skipped", "failed"] = "skipped"
    finding_count: int = 0
    max_severity: Literal["critical", "high", "medium", "none"] = "none"
    covered_critical: int = 0
    covered_high: int = 0
    covered_medium: int = 0
    truncated: bool = False
    needs_lead_judgment: bool = False


class RunnerResult(WireModel):
    """What one runner dispatch produced, in the stable field names of the result schema.

    A result that lacks ``review_quality`` or ``triage`` (an older runner) reads as
    ``unknown`` / ``skipped``, so results written before those fields existed still load.
    """

    result: RunnerStatus
    verdict: Verdict | None = None
    review_file: str | None = None
    codex_session_id: str | None = None
    #: The digest of the thread's session files after this dispatch (the Codex backend's
    #: ``session_digest``): stored in the signed state, checked before a resume.
    codex_session_digest: str | None = None
    attempt_id: str
    errors: str | None = None
    archived_stdout: str | None = None
    archived_stderr: str | None = None
    user_warning: str | None = None
    review_quality: ReviewQuality = ReviewQuality.UNKNOWN
    triage: Triage = Field(default_factory=Triage)


class TokenUsage(WireModel):
    """Token counts of one dispatch (per-round deltas, not Codex's cumulative totals)."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0

    @property
    def total(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            **{k: getattr(self, k) + getattr(other, k) for k in TokenUsage.model_fields}
        )

    def minus(self, earlier: TokenUsage) -> TokenUsage:
        """The delta since ``earlier`` (Codex reports usage cumulatively per thread)."""
        return TokenUsage(
            **{k: max(0, getattr(self, k) - getattr(earlier, k)) for k in TokenUsage.model_fields}
        )


class PathRule(WireModel):
    """One ``advreview_path_instructions`` line that applies to a change: the repository's
    own review rule for the changed files its glob matches."""

    glob: str
    instruction: str
    #: The changed files the glob matches (top-level-relative ``/`` paths).
    files: tuple[str, ...]


class LeftOutFile(WireModel):
    """A changed file ``advreview_exclude`` leaves out of the diff commands, as the code
    prompt names it (:mod:`.leftout`): the reviewer still sees that it changed."""

    path: str
    #: Lines added and removed (``None``: binary).
    added: int | None = None
    removed: int | None = None
    #: The git object id of its new content (``None``: deleted); part of the prompt, so a
    #: stored verdict never covers other bytes of the same size.
    blob: str | None = None
    #: For a lockfile: one line per changed entry (package, version, source).
    entries: tuple[str, ...] = ()
    #: Changed entries beyond ``entries``.
    more_entries: int = 0
    #: Why a lockfile's entries could not be listed (it does not parse).
    unread: str | None = None


class ChangeSet(WireModel):
    """The code change under review, as the code prompts describe it.

    ``description`` is the human phrase the code prompt uses ("unstaged + staged changes",
    "branch changes vs main"); ``diff_commands`` are the exact git commands the reviewer
    is told to run.  ``attributes`` names the ``.gitattributes`` files the change adds,
    edits or deletes (plans included): the prompt and the header warn about them.
    """

    files: tuple[str, ...]
    description: str
    diff_commands: tuple[str, ...]
    base: str | None = None
    attributes: tuple[str, ...] = ()
    #: Unstaged files that git rewrites when it reads the work tree (``ident``, ``filter``,
    #: ``working-tree-encoding``) where git cannot be told to skip that: their diff shows
    #: rewritten text, and the prompt tells the reviewer to read the files themselves.
    converted: tuple[str, ...] = ()
    #: Changed files left out by ``advreview_exclude`` (lockfiles, generated files): not
    #: in ``files``, excluded from the diff commands by pathspec, named in the header.
    filtered: tuple[str, ...] = ()
    #: What the prompt says of each of ``filtered``: its size of change and, for a
    #: lockfile, the entries that changed.
    left_out: tuple[LeftOutFile, ...] = ()
    #: The repository's path instructions that apply to ``files``, sent in the prompt.
    rules: tuple[PathRule, ...] = ()
    #: Submodule pointer changes: ``path: OLD -> NEW`` and the submodule's own log
    #: between them (:func:`~.targets.submodule_changes`), named in the prompt.
    submodules: tuple[str, ...] = ()


class ReviewedChange(WireModel):
    """Which code change a target's stored rounds reviewed, kept with its state.

    Rounds continue across runs; when the change set of this run is another one (another
    mode, base or files: a laptop run that switched from the branch to its uncommitted
    files), the header and the re-review prompt say so (:meth:`differs`).
    """

    #: The code prompt's phrase: ``branch changes vs main``, ``untracked files``.
    description: str
    files: tuple[str, ...] = ()
    #: The commit reviewed: ``HEAD`` of a branch change (the later rounds' interdiff
    #: starts from it); ``None`` for a working-tree change or before it was kept.
    head: str | None = None
    #: The commit the branch change was diffed from (``git merge-base BASE HEAD``): with
    #: ``head`` it names the old version of the branch for ``git range-diff``.
    base: str | None = None
    #: Each file of the change and what it holds: for a branch change its git object id
    #: in ``HEAD``, for a working-tree change (no commit) the sha256 of its bytes (a
    #: symlink's target); ``-`` for a deleted file.  A later round knows which changed.
    digests: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def of(cls, change: ChangeSet) -> ReviewedChange:
        """The record of ``change`` (without commits or digests: see :mod:`.interdiff`)."""
        return cls(description=change.description, files=change.files)

    def differs(self, now: ReviewedChange) -> str | None:
        """One sentence naming how ``now`` differs from this one; ``None``: the same.

        Only the mode, base and files count: new commits on the same branch are the
        same change set, reviewed again (the interdiff says what changed).
        """
        if (now.description, now.files) == (self.description, self.files):
            return None
        gone = tuple(f for f in self.files if f not in now.files)
        new = tuple(f for f in now.files if f not in self.files)
        return (
            f"the change set is not the one its stored rounds reviewed: they reviewed "
            f"{self.description} ({_files(len(self.files))}), this run reviews "
            f"{now.description} ({_files(len(now.files))})"
            + (f"; no longer in it: {_some(gone)}" if gone else "")
            + (f"; new in it: {_some(new)}" if new else "")
        )


def _files(count: int) -> str:
    return f"{count} file" + ("" if count == 1 else "s")


class ChangeSetInfo(WireModel):
    """Which change set the code item reviews, as the header and the reports name it.

    ``mode`` is what was reviewed (``none``: no code item); ``requested`` the
    ``--advreview-diff`` setting that chose it, ``ci`` whether the run counted as CI
    (where ``auto`` means ``branch``).  Branch mode: ``base`` is the ref, ``base_commit``
    its commit, ``merge_base`` the commit ``BASE...HEAD`` diffs from, ``head_commit``
    ``HEAD``.  Uncommitted mode: ``base`` is ``HEAD`` and the working tree is the head.
    """

    requested: str
    ci: bool = False
    mode: Literal["uncommitted", "branch", "none"]
    base: str | None = None
    base_commit: str | None = None
    merge_base: str | None = None
    head_commit: str | None = None
    #: Files in the change set (plans reviewed as plan items not counted).
    files: int = 0
    #: The phrase the code prompt uses ("branch changes vs origin/main").
    description: str | None = None
    #: Why there is no change set (``mode`` none).
    note: str | None = None
    #: The ``.gitattributes`` files the change adds, edits or deletes.
    attributes: tuple[str, ...] = ()
    #: Unstaged files whose diff shows text git rewrote from the work tree's bytes.
    converted: tuple[str, ...] = ()
    #: Changed files ``advreview_exclude`` left out of the change set.
    filtered: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line: mode, base and head commits, number of files, and what chose it.

        A change to ``.gitattributes`` is named at the end: it can hide code from a plain
        ``git diff``, so whoever reads the header or the report should know.
        """
        chose = f"--advreview-diff={self.requested}" + (" under CI" if self.ci else "")
        left_out = ""
        if self.filtered:
            left_out = f"; left out by advreview_exclude: {_some(self.filtered)}"
        if self.mode == "none":
            return f"none ({self.note or chose}){left_out}"
        files = _files(self.files)
        if self.mode == "uncommitted":
            line = (
                f"uncommitted: {self.description} against HEAD {_short(self.base_commit)}, "
                f"{files} ({chose})"
            )
        else:
            line = (
                f"branch {self.base}...HEAD: base {_short(self.base_commit)}, merge base "
                f"{_short(self.merge_base)}, head {_short(self.head_commit)}, {files} ({chose})"
            )
        return line + left_out + attributes_warning(self.attributes, self.converted)


def _some(paths: tuple[str, ...]) -> str:
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def attributes_warning(attributes: tuple[str, ...], converted: tuple[str, ...] = ()) -> str:
    """``"; WARNING: …"`` naming changed ``.gitattributes`` files and files git rewrites
    from the work tree (:attr:`ChangeSet.converted`); "" when there are none."""
    text = ""
    if attributes:
        text += (
            f"; WARNING: the change edits git attributes ({_some(attributes)}), which can "
            "hide code from `git diff`; the reviewer's diff commands ignore attributes and "
            "show the bytes git stores"
        )
    if converted:
        text += (
            f"; WARNING: git rewrites {_some(converted)} when reading the work tree (ident, "
            "filter or working-tree-encoding attributes), so their diff is not their bytes; "
            "the reviewer is told to read the files"
        )
    return text


def _short(commit: str | None) -> str:
    return commit[:12] if commit else "(none)"


class DecisionAction(str, Enum):
    """What the author did with a finding: fixed it, narrowed it, or rejected it."""

    ACCEPT = "accept"
    RESCOPE = "re-scope"
    REJECT = "reject"


class Decision(WireModel):
    """One decision on one finding, from the decisions file or the fixer hook.

    ``reason`` says what was applied (accept), how the scope changed (re-scope) or why
    the finding is wrong (reject; a rejection without a reason is refused upstream).
    """

    finding: str
    action: DecisionAction
    reason: str | None = None


class Waiver(WireModel):
    """A person's decision that a blocking finding passes: who, why, and on what authority.

    Under a gate only an authority counts (docs/deciding.md): the base commit's decisions
    file (``source="base"``) or a pull-request command by a user with write permission
    (``source="command"``); in a local run the operator's own decisions file
    (``source="local"``).  A waived finding stays in :attr:`ItemRecord.findings` (every
    report shows it, marked) and leaves :attr:`ItemRecord.failing_ids`.
    """

    finding: str
    #: Who decided: ``@login`` for a command, ``the base branch (main (1a2b3c4d5e6f))``
    #: for the base commit's file, ``local`` for the operator's own file.
    by: str
    reason: str
    source: Literal["base", "command", "local"]
    #: Where the decision was made: the command's comment URL, or the file and commit.
    at: str | None = None
    #: The content id of the code (or plan text) the waiver was decided on
    #: (:func:`~.decisions.content_id`); it holds only while the cited place still has it.
    content: str | None = None
    #: The commit the waiver was decided on, as its entry names it (shown in messages).
    commit: str | None = None
    #: What it is for: ``pull request #7`` or ``the repository`` (every pull request).
    scope: str | None = None


class RoundsGrant(WireModel):
    """A person's decision that a target at the round limit gets more rounds.

    The same authority as a :class:`Waiver`: the base commit's decisions file (an entry
    ``action = "more-rounds"``), a ``/advreview rounds +N: reason`` command by a user with
    write permission, or locally the operator's own file.
    """

    #: The target it applies to; ``None``: every target of the run (a command).
    target: str | None = None
    rounds: int = Field(ge=1)
    by: str
    reason: str
    source: Literal["base", "command", "local"]
    at: str | None = None
    #: What it is for: ``pull request #7`` or ``the repository`` (every pull request).
    scope: str | None = None


class PullRequestCommand(WireModel):
    """One ``/advreview`` command of a pull-request comment that counts: its author's
    repository permission is write or higher (checked by the Action through the REST API).

    ``waive``: ``finding`` passes; ``decide``: ``finding`` (left to the operator) is
    decided ``accept`` or ``reject``; ``rounds``: ``rounds`` more rounds for every target;
    ``budget``: ``tokens`` more for the pull request's token budget.
    """

    verb: Literal["waive", "decide", "rounds", "budget"]
    finding: str | None = None
    #: ``waive`` only: the content id the waiver names (``AR-1a2b3c@<content id>``), the
    #: code it was decided on; ``None``: the command names none, and counts for nothing.
    content: str | None = None
    #: ``decide`` only: the operator's decision.
    action: Literal["accept", "reject"] | None = None
    #: ``rounds`` only: how many more.
    rounds: int | None = Field(default=None, ge=1)
    #: ``budget`` only: how many more tokens.
    tokens: int | None = Field(default=None, ge=1)
    reason: str = Field(min_length=1)
    #: The commenter's login, without ``@``.
    login: str = Field(min_length=1)
    #: The commenter's repository permission (write, maintain or admin).
    permission: Literal["write", "maintain", "admin"]
    #: The comment's URL.
    url: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> PullRequestCommand:
        # A command the Action could not have written is refused, never half applied.
        needs = {
            "waive": ("finding",),
            "decide": ("finding", "action"),
            "rounds": ("rounds",),
            "budget": ("tokens",),
        }
        missing = [name for name in needs[self.verb] if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a {self.verb} command needs {' and '.join(missing)}")
        return self


class IgnoredCommand(WireModel):
    """A command or decision that did not count, and why (every report says so)."""

    #: The command line or decision as written (shortened).
    text: str
    #: Who wrote it: ``@login``, or the file it came from.
    by: str
    why: str
    #: The finding it names, when it names one.
    finding: str | None = None
    url: str | None = None


class CommandsFile(WireModel):
    """The ``--advreview-commands`` file the Action writes: the pull request's vetted
    ``/advreview`` commands, and those it ignored."""

    version: Literal[1] = 1
    commands: tuple[PullRequestCommand, ...] = ()
    ignored: tuple[IgnoredCommand, ...] = ()


class LeadAction(str, Enum):
    """What the built-in lead did with one finding (docs/lead.md, "The built-in lead").

    ``needs-operator`` is the structural gate: a structural fix (invocation
    grammar, output formats, parsed literals, security guarantees, ...) is never applied
    by the lead; it is left for a person to decide.
    """

    ACCEPT = "accept"
    RESCOPE = "re-scope"
    REJECT = "reject"
    NEEDS_OPERATOR = "needs-operator"


class LeadEvaluation(WireModel):
    """One row of the lead's evaluation matrix: finding | severity | action | reason."""

    finding: str
    severity: Severity | None = None
    title: str = ""
    action: LeadAction
    reason: str
    #: What the lead changed for this finding (accept / re-scope), in its own words.
    changed: str = ""


class LeadEdit(WireModel):
    """One file the lead changed, with the size of the change."""

    path: str
    added: int = 0
    removed: int = 0


class LeadRecord(WireModel):
    """One turn of the built-in lead: the findings of ``round`` evaluated and fixed."""

    #: The review round whose findings the lead evaluated.
    round: int
    #: ``codex``, ``claude`` or ``command``.
    backend: str
    evaluations: tuple[LeadEvaluation, ...] = ()
    edits: tuple[LeadEdit, ...] = ()
    #: The unified diff of the lead's edits (repository-relative paths).
    diff: str = ""
    duration_s: float = 0.0
    #: Tokens the lead's model used in this turn (none known for the ``command`` lead).
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    #: The lead's model, as given or as its CLI reported it (``None``: not known).
    model: str | None = None
    #: What ``tokens`` cost under ``advreview_prices`` (``None``: no prices set, or none
    #: for ``model``).
    cost: float | None = None


class OpenFinding(WireModel):
    """A finding the lead left to a person (``needs-operator``), open until one decides it.

    It is stored with its target's state (keyed by the target, not by its content), so it
    follows the target across edits and runs, and every run of the target fails until the
    decisions file records the operator's decision on it, or the reviewer re-reviews
    changed content with this finding in its prompt.
    """

    #: The finding as the reviewer reported it.
    finding: Finding
    #: The review round the finding comes from.
    round: int
    #: Why the lead left it to a person (its ``needs-operator`` reason).
    reason: str = ""
    #: Content hash of the artifact when the finding was left open: only a re-review of
    #: other content can settle it without the operator.
    content_hash: str | None = None


class ReviewStatus(str, Enum):
    """Final status of a review item, as the operator summary names it."""

    APPROVED = "approved"
    REVISE = "revise"
    MAX_ROUNDS = "max rounds"
    NOT_VERIFIED = "not verified"
    ABORTED = "aborted"
    CACHED = "cached"
    BUDGET_EXHAUSTED = "budget exhausted"
    #: The code change is above ``advreview_max_change_files`` / ``_lines``: not reviewed.
    TOO_LARGE = "too large"


class ChangedLines(WireModel):
    """One file that changed since the round before, and where."""

    path: str
    #: The changed line ranges of the new text (first, last; a deletion marks the line
    #: after it); ``None``: the whole file counts as changed (new, deleted, binary, or a
    #: working-tree change whose old text was not kept).
    lines: tuple[tuple[int, int], ...] | None = None


class Changed(WireModel):
    """What changed in the code change between the round before and this round.

    ``how`` is what the reviewer was shown: ``interdiff`` (the diff from the commit
    reviewed last to the new head), ``files`` (a working-tree change: the files whose
    bytes changed), ``range-diff`` (the branch was rebased or force-pushed: both versions
    compared) or ``whole`` (no comparison possible: the change was reviewed whole).  Only
    ``interdiff`` and ``files`` say which code is unchanged, so only they mark late
    findings (:func:`.interdiff.late_findings`).
    """

    #: The round whose change this one is compared with.
    since_round: int
    how: Literal["interdiff", "files", "range-diff", "whole"]
    #: The files of the change the round before reviewed.
    before: tuple[str, ...] = ()
    #: The files that changed since (with ``interdiff`` and ``files``).
    files: tuple[ChangedLines, ...] = ()
    #: Why the change was reviewed whole, or what the range-diff compared.
    note: str | None = None

    def summary(self) -> str:
        """What the round was shown, in a phrase: ``the interdiff since round 1 (2 files)``."""
        if self.how == "whole":
            return f"the whole change again ({self.note})" if self.note else "the whole change"
        if self.how == "range-diff":
            return f"a range-diff of both versions since round {self.since_round}"
        what = "the interdiff" if self.how == "interdiff" else "the changed files"
        files = _files(len(self.files))
        return f"{what} since round {self.since_round} ({files})"


class SampleRecord(WireModel):
    """One sample of a sampled first round: who reviewed, what it said, what it cost."""

    sample: int = Field(ge=1)
    reviewer: str
    verdict: Verdict | None = None
    findings: int = 0
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float | None = None
    duration_s: float = 0.0


class VerificationRecord(WireModel):
    """One verifier turn on one blocking finding of a round (``advreview_verify``)."""

    finding: str
    reviewer: str
    result: Literal["CONFIRMED", "REFUTED"]
    evidence: str
    reason: str
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float | None = None
    duration_s: float = 0.0


class RoundRecord(WireModel):
    """One counted round: what was dispatched, what came back, what was decided."""

    number: int
    operation: Operation
    runner: RunnerResult
    review: Review | None = None
    decisions: tuple[Decision, ...] = ()
    usage: TokenUsage = Field(default_factory=TokenUsage)
    #: What ``usage`` cost under ``advreview_prices`` (``None``: no prices set).
    cost: float | None = None
    duration_s: float = 0.0
    #: Content hash of the artifact this round reviewed (plan bytes, or diff + plan).
    content_hash: str | None = None
    #: The code change since the round before, when this round re-reviewed it in a
    #: later run (``None``: a first round, a plan, or an unchanged change).
    changed: Changed | None = None
    #: A sampled first round: each sample (``review`` is their merge, ``runner`` and the
    #: thread sample 1's, ``usage`` all of them).  Empty: one review.
    samples: tuple[SampleRecord, ...] = ()
    #: Each verifier turn of the round (``advreview_verify``); empty: none.
    verifications: tuple[VerificationRecord, ...] = ()


class ItemRecord(WireModel):
    """Everything the reports need about one review item, in one model.

    It travels from the item (on whichever xdist worker ran it) to the controller as JSON
    in its own report attribute (``report.advreview_record``, see ``session.py``), so every
    report format (terminal summary, JSON, markdown, SARIF, GitHub) is built from the same
    data.  The teardown report carries
    the final version (with any mutations).
    """

    nodeid: str
    #: ``docs/plans/x.md`` or ``code-review``: the key of state and decisions.
    key: str
    kind: Literal["plan", "code"]
    #: Repo-relative path of the plan (plan items) or of the plan a code change is
    #: reviewed against; ``None`` for a plain code review.
    path: str | None = None
    status: ReviewStatus
    #: The outcome decided from the review: passed | warned | failed | error.
    outcome: Literal["passed", "warned", "failed", "error"]
    verdict: Verdict | None = None
    max_severity: Severity | None = None
    fail_on: Severity = Severity.MEDIUM
    #: Open findings of the last valid review, highest first.
    findings: tuple[Finding, ...] = ()
    #: Ids of the findings at or above ``fail_on``.
    failing_ids: tuple[str, ...] = ()
    #: Every counted round, earlier runs included.
    rounds: tuple[RoundRecord, ...] = ()
    #: Decisions sent with the last re-review (from the decisions file or the fixer).
    decisions: tuple[Decision, ...] = ()
    #: Findings a person with authority waived (they pass, marked, in every report).
    waived: tuple[Waiver, ...] = ()
    #: Open findings first raised in a later round on code unchanged since the round
    #: before (:func:`.interdiff.late_findings`): they could have been raised earlier.
    late: tuple[str, ...] = ()
    #: Findings of the code item placed outside every changed hunk of the diff under
    #: review (:func:`.hunks.pre_existing`), whatever they did to the outcome.
    pre_existing: tuple[str, ...] = ()
    #: ``advreview_pre_existing`` of the run (code items; ``None`` for a plan): under
    #: ``warn`` a blocking pre-existing finding passes with a warning, not in
    #: ``failing_ids``.
    pre_existing_policy: Literal["block", "warn"] | None = None
    #: Rounds a person granted this target beyond ``max-rounds``.
    rounds_granted: int = 0
    #: Decisions and commands on this target that did not count, each with why.
    ignored: tuple[IgnoredCommand, ...] = ()
    #: Tokens used in this run (zero for a cached result): every dispatch, retries and
    #: the lead's turns included.
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    #: What ``tokens`` cost under ``advreview_prices`` (``None``: no prices set, or a
    #: model without a price, which ``warnings`` names).
    cost: float | None = None
    duration_s: float = 0.0
    #: Why the reviewer could not run (error outcomes).
    error: str | None = None
    #: Workspace mutations found during the review or in teardown.
    mutations: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    #: The review text of the last valid round, verbatim.
    review_text: str | None = None
    #: Every turn of the built-in lead in this run, oldest first.
    lead: tuple[LeadRecord, ...] = ()
    #: Findings the lead left for the operator (structural fixes it must not apply).
    needs_operator: tuple[str, ...] = ()
    #: The combined unified diff of every lead edit in this run, from the text before the
    #: lead's first turn to the final text (``git apply``-able from the repository root).
    lead_patch: str = ""

    def worst_failing(self) -> Finding | None:
        """The failing finding a failure points at: the first of ``findings`` (highest
        first) at or above ``fail_on``; ``None`` when none fails the item."""
        return next((f for f in self.findings if f.id in self.failing_ids), None)


class FailureText(WireModel):
    """A review failure or error as shown by pytest, on its way from an xdist worker.

    pytest serializes a report's custom ``longrepr`` to one string, which the controller
    then prints in full as the short-summary message as well; this keeps the one-line
    summary apart from the full text.
    """

    kind: Literal["advreview-failure"] = "advreview-failure"
    #: The full text of the failure section (the review verbatim, the reason, the fix).
    text: str
    #: The one line for the short test summary and JUnit's ``message``.
    summary: str
    #: Where the failure points: the worst failing finding's file (the plan, or the file
    #: the reviewer named), else the plan, else the pytest configuration file or rootdir.
    path: str
    #: Its 1-based line (1 when no line is known).
    line: int = 1
