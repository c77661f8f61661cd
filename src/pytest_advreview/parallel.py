"""``--advreview-jobs``: reviews side by side in one pytest process, reported in order.

A review waits minutes on a model; xdist workers cost a Python start each and split the
run.  Here, when pytest is about to run an item, the reviews of the next selected review
items (up to N, this one included) are started in a thread pool; each item's setup then
waits for its own review instead of running it.  Everything pytest sees happens as in a
sequential run, on the main thread and in order: setup, call and teardown, the reports,
the workspace comparison of teardown.  Only the reviewer loop (stored state, launches,
rounds) runs in a worker thread, so its hooks (``pytest_advreview_modify_prompt``,
``pytest_advreview_fix``, ``pytest_advreview_round_done``) may be called off the main
thread.

* Only items pytest will run are started: ``-k``, ``-m``, ``--lf``, ``--advreview-shard``
  and any other deselection happen before the run loop, and the pool walks
  ``session.items``.  An item marked ``skip`` is passed over too (a ``skipif`` is
  decided only in its setup, so its review may start and is then dropped).
* At most N reviews are in flight: the N-th next is started when an earlier one's item
  has taken its result.  N is never more than the selected review items.
* ``auto`` (the default, :func:`jobs_for`) is up to :data:`~.options.AUTO_JOBS`: each
  review that may write has a worktree of its own (:mod:`.workspace`), so reviewers side
  by side never see each other's writes.  Where they would share one folder they may
  write (``--advreview-isolation=none``) it is 1, and on an xdist worker too: ``-n``
  already runs reviews side by side, and a worker's pool would start the reviews of the
  items other workers run.
* The token budget is checked when a review starts (in its thread), so it is overshot
  by at most the reviews already in flight.
* When pytest stops (``-x``, ``--maxfail``, Ctrl-C, an internal error) no further review
  starts, queued ones are dropped, and the reviewer's running launches are cancelled:
  their process groups are killed before pytest returns.
* A review no item takes (its item skipped in setup, or never reached because pytest
  stopped first) is dropped: once it has ended, what it made (its ``advreview-*``
  folder, its worktree) is removed, as an item's teardown removes its own review's.
  Nothing a review makes outlives pytest; the verdict of a dropped review is never read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pytest

from .engine import review_target
from .options import AUTO_JOBS
from .outbound import terminal_text
from .review import ReviewRun
from .workspace import WorkspaceError

if TYPE_CHECKING:
    from .coordinator import Coordinator
    from .engine import Reviewed
    from .material import TargetSpec
    from .review import ReviewContext

__all__ = ["ReviewPool", "jobs_for", "stop_all"]


def jobs_for(setting: int | str, *, shared_writable: bool, xdist_worker: bool) -> int:
    """Most reviews at once in this process for ``--advreview-jobs`` = ``setting``.

    :param shared_writable: the reviews would write one folder together
        (:attr:`~.workspace.Layout.shared_writable`).
    :param xdist_worker: this process is an xdist worker.
    """
    if isinstance(setting, int):
        return setting
    return 1 if shared_writable or xdist_worker else AUTO_JOBS


class ReviewPool:
    """Starts the reviews of upcoming items in threads; hands each item its own.

    :param jobs: most reviews in flight at once.
    :param context: what the run's reviews share (settings, reviewer, progress display).
    :param coordinator: the run's stored state, decisions and budget.
    :param target_of: an item's target, ``None`` for an item that is no review item.
    :param cancel: stops the reviewer's launches now (``None``: the backend cannot).
    """

    def __init__(
        self,
        jobs: int,
        *,
        context: ReviewContext,
        coordinator: Coordinator,
        target_of: Callable[[pytest.Item], TargetSpec | None],
        cancel: Callable[[], None] | None,
    ) -> None:
        self.jobs = jobs
        self._context = context
        self._coordinator = coordinator
        self._target_of = target_of
        self._cancel = cancel
        self._executor = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="advreview")
        self._items: Sequence[pytest.Item] = ()
        self._position: dict[int, int] = {}
        #: Started reviews whose item has not taken them yet, by item (id).
        self._ahead: dict[int, tuple[ReviewRun, Future[Reviewed]]] = {}
        #: Reviews an item has taken: stopped with the others should pytest stop.
        self._taken: list[Future[Reviewed]] = []
        self._started: set[int] = set()
        #: Started reviews no item will take (skipped in setup): removed once ended.
        self._orphans: list[tuple[ReviewRun, Future[Reviewed]]] = []
        #: What the removal of a dropped review could not remove (a message each).
        self._unremoved: list[str] = []
        self._stopping = False

    # -- pytest ------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """Know the selected items; whatever ends the loop, stop every review in flight."""
        self._items = list(session.items)
        reviews = sum(1 for item in self._items if self._target_of(item) is not None)
        # Never more at once than there are reviews; one at a time is no pool at all.
        self.jobs = min(self.jobs, reviews)
        if self.jobs > 1:
            self._position = {id(item): n for n, item in enumerate(self._items)}
        try:
            return (yield)
        finally:
            self.stop()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> None:
        """Before an item runs: start the reviews of it and the next ones, up to N."""
        self._orphans = self._drop(self._orphans)
        position = self._position.get(id(item))
        if position is None or self._stopping:
            return
        session = item.session
        for upcoming in self._items[position:]:
            if len(self._ahead) >= self.jobs or session.shouldstop or session.shouldfail:
                break
            key = id(upcoming)
            spec = None if key in self._started else self._target_of(upcoming)
            if spec is None:
                continue
            if upcoming.get_closest_marker("skip") is not None:
                continue  # skipped in its setup for sure: never spend a review on it
            self._started.add(key)
            # Made here, on the main thread; only the engine's call runs in the thread.
            run = ReviewRun(self._context, spec, item=upcoming)
            future = self._executor.submit(
                review_target,
                run,
                self._coordinator,
                nodeid=upcoming.nodeid,
                # An item's workspace is compared in its teardown: a changed file is that
                # phase's error, even after a pass.
                compare_workspace="later",
            )
            self._ahead[key] = (run, future)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        """An item that never took its review (skipped before its setup): drop it."""
        ahead = self._ahead.pop(id(item), None)
        if ahead is not None:
            ahead[1].cancel()  # still queued: never starts; running: removed once ended
            self._orphans = self._drop([*self._orphans, ahead])

    # -- the items' side -----------------------------------------------------------------

    def take(self, item: pytest.Item) -> tuple[ReviewRun, Future[Reviewed]] | None:
        """The review started ahead for ``item``, ``None`` when none was.

        The item's setup waits for the future: its exception, if any, is raised there,
        on the main thread.
        """
        ahead = self._ahead.pop(id(item), None)
        if ahead is not None:
            self._taken = [future for future in self._taken if not future.done()]
            self._taken.append(ahead[1])
        return ahead

    def stop(self) -> None:
        """Start nothing more, drop queued reviews, cancel the running ones, wait."""
        self._stopping = True
        # Reviews no item took: the items' teardowns remove what the taken ones made.
        untaken = [*self._orphans, *self._ahead.values()]
        pending = [future for _run, future in untaken]
        pending += self._taken
        stop_all(pending, self._executor, self._cancel)
        self._orphans = self._drop(untaken)  # every thread has ended: all are removed
        self._ahead.clear()
        self._taken.clear()

    def _drop(
        self, untaken: Sequence[tuple[ReviewRun, Future[Reviewed]]]
    ) -> list[tuple[ReviewRun, Future[Reviewed]]]:
        """Remove what each ended review of ``untaken`` made; return those still running.

        Never while its thread runs: the review may still be building its worktree.
        """
        running = []
        for run, future in untaken:
            if not future.done():
                running.append((run, future))
                continue
            try:
                run.guard.cleanup(keep=False)
            except WorkspaceError as exc:
                # The message names the worktree and the commands that remove it.
                self._unremoved.append(
                    f"{exc} (the review of {run.spec.key}, started ahead of an item that "
                    "never took it)"
                )
        return running

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """What a dropped review left behind, with the commands that remove it.

        A line of the summary, not a warning: :meth:`stop` runs in the run loop, where
        pytest reports no warning, and under ``-W error`` one would end the run in an
        internal error.
        """
        for message in self._unremoved:
            terminalreporter.write_line(terminal_text(f"WARNING: {message}"), yellow=True)


def stop_all(
    pending: Sequence[Future[Any]],
    executor: ThreadPoolExecutor | None,
    cancel: Callable[[], None] | None,
) -> None:
    """Drop the queued work of ``pending``, cancel the reviewer's running launches, wait.

    (The review pool's stop, and the eval's: ``eval/plugin.py``.)
    """
    for future in pending:
        future.cancel()
    if any(not future.done() for future in pending) and cancel is not None:
        cancel()
    # Waiting is short: a cancelled launch kills its process group at once.  A second
    # Ctrl-C while waiting must not leave the threads' Codex processes behind.
    while executor is not None:
        try:
            executor.shutdown(wait=True)
            break
        except KeyboardInterrupt:
            continue
    for future in pending:
        if future.done() and not future.cancelled():
            with contextlib.suppress(BaseException):
                future.exception()  # retrieved: no "exception never retrieved" noise
