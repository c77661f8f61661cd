"""Fixed strings shared by the plugin, its reports and its tests."""

from __future__ import annotations

#: Marker carried by every review item (``-m adversarial_review``).
MARKER = "adversarial_review"
#: Node-id suffixes of the two kinds of review item.
PLAN_ITEM_NAME = "adversarial-review"
CODE_ITEM_NAME = "code-review"
#: The code item's node id: it reviews a change set, not a file, but pytest takes a node
#: id's first part for the file (the progress line, JUnit's classname), so it has a
#: readable one of its own instead of the empty one (shown as ``.``).
CODE_ITEM_NODEID = f"code-change::{CODE_ITEM_NAME}"
#: Key prefix of everything the plugin stores in ``config.cache``.
CACHE_PREFIX = "advreview/"
#: Prefix of environment variables that configure the plugin.
ENV_PREFIX = "ADVREVIEW_"
#: The first line of every prompt sent to the reviewer; ties a rollout file to one attempt.
SESSION_MARKER = "<!-- ADVERSARIAL-REVIEW-SESSION: {review_id}-{attempt_id} -->"
#: The two verdict literals of the markdown contract (always English).
VERDICT_APPROVED = "VERDICT: APPROVED"
VERDICT_REVISE = "VERDICT: REVISE"
#: Codex CLI version the plugin was verified against (see docs/codex-compat.md).
PINNED_CODEX_VERSION = "0.171.0"
#: The one command that installs it, named by every message about a missing or old Codex.
CODEX_INSTALL_COMMAND = f"npm install -g @openai/codex@{PINNED_CODEX_VERSION}"
#: Claude Code version the ``claude`` lead was verified against (docs/lead.md "The built-in lead").
PINNED_CLAUDE_VERSION = "2.1.332"
#: Longest ``errors`` text of a runner result: enough for the reason, short enough for a
#: report line.
MAX_ERROR_CHARS = 500
#: Report attribute carrying an item's :class:`~pytest_advreview.models.ItemRecord` JSON.
RECORD_ATTR = "advreview_record"
#: Exit status of ``--advreview-strict-exit`` when review items errored (the reviewer could
#: not run) and nothing failed: "the gate could not run"; pytest uses 0-6 (6: --max-warnings).
EXIT_REVIEW_ERRORS = 10
#: ``workerinput`` key of the run directory the controller shares with xdist workers.
RUN_DIR_KEY = "advreview_run_dir"
#: ``workerinput`` key of the run's secret that tags the state entries this run writes.
RUN_SECRET_KEY = "advreview_run_secret"

#: The reviewer backends this package provides (``runner/factory.py``).
BUILTIN_REVIEWERS = frozenset({"codex", "claude", "command"})
