"""The pytest side of ``--advreview-eval``: collection, the reviews, the report.

:func:`register` (called by ``plugin.py`` instead of the review session) registers
:class:`EvalSession` in every process and :class:`EvalController` on the controller.
An eval run collects the corpus's items only: no plan, no code change and no test module
of the checkout is collected, and no gate verdict is read or stored.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Generator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from .. import outbound, runstash
from ..atomic import write_atomic
from ..cachekey import reviewer_identity
from ..parallel import jobs_for, stop_all
from ..prompts import PROMPT_VERSION
from ..review import make_reviewer, make_samples, make_verifier
from ..runner import Reviewer
from ..settings import WORKERINPUT_KEY, Settings, header_lines
from . import BUILTIN, BUILTIN_CORPUS
from .case import CaseError, Corpus, load_corpus
from .items import EVAL_ATTR, EvalError, EvalItem, EvalMissed
from .metrics import CaseResult, EvalReport, aggregate
from .report import (
    BaselineError,
    Thresholds,
    check_thresholds,
    load_baseline,
    markdown,
    table_lines,
)
from .run import EvalContext, run_case
from .transcripts import TranscriptStore

__all__ = ["EvalController", "EvalSession", "register"]


def register(config: pytest.Config, settings: Settings, redactor: outbound.Redactor) -> None:
    """Register the eval plugins of this process (``plugin.py``'s one call)."""
    session = EvalSession(config, settings)
    config.pluginmanager.register(session, "advreview-eval")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(EvalController(config, session), "advreview-eval-controller")
        # The workers redact with the controller's secrets; the summary is guarded.
        guard = outbound.LogGuard(redactor, os.environ)
        config.pluginmanager.register(guard, "advreview-log-guard")


def corpus_path(settings: Settings) -> Path:
    """The corpus folder ``--advreview-eval`` names."""
    assert settings.eval is not None
    return BUILTIN_CORPUS if settings.eval == BUILTIN else Path(settings.eval)


def reviewer_config(settings: Settings, identity: dict[str, str]) -> dict[str, str]:
    """The reviewer configuration a report names (and a comparison sets side by side)."""
    import hashlib
    import json

    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    config = {
        "reviewer": settings.reviewer,
        "model": settings.model,
        "reasoning": settings.reasoning,
        "fail_on": settings.fail_on.value,
        "prompt_version": PROMPT_VERSION,
        "identity": digest,
    }
    # Named only when set: a comparison shows them, a plain run's report is unchanged.
    if settings.samples > 1:
        config["samples"] = ",".join(settings.sample_reviewers) or str(settings.samples)
    if settings.verify:
        demotes = ",".join(settings.verify_demotes) or "none"
        config["verify"] = f"{settings.verifier or settings.reviewer} (demotes {demotes})"
    return config


class EvalSession:
    """Collection and the reviews of an eval run, in every process."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        #: One round, no lead: the eval measures the reviewer alone.
        self.settings = settings.model_copy(update={"max_rounds": 1, "lead": "none"})
        self.identity = reviewer_identity(settings)
        self._reviewer: Reviewer | None = None
        self._context: EvalContext | None = None
        self._futures: dict[int, Future[CaseResult]] = {}
        self._executor: ThreadPoolExecutor | None = None
        self.scratch = Path(tempfile.mkdtemp(prefix="advreview-eval-"))
        config.add_cleanup(lambda: shutil.rmtree(self.scratch, ignore_errors=True))
        self.corpus: Corpus | None = None

    # -- collection --------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """Collect nothing of the checkout: an eval run's items are the corpus's."""
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """One item per case and epoch; a bad case is one collection error."""
        path = corpus_path(self.settings)
        try:
            self.corpus = load_corpus(path)
        except CaseError as exc:
            report = pytest.CollectReport(str(path), "failed", str(exc), [])
            config.hook.pytest_collectreport(report=report)
            return
        added: list[pytest.Item] = [
            EvalItem.from_parent(session, case=case, epoch=epoch)
            for case in self.corpus.cases
            for epoch in range(1, self.settings.eval_epochs + 1)
        ]
        items.extend(added)
        result: list[pytest.Item | pytest.Collector] = [*added]
        config.hook.pytest_collectreport(
            report=pytest.CollectReport(session.nodeid, "passed", None, result)
        )

    # -- running -----------------------------------------------------------------------

    def reviewer(self) -> Reviewer:
        """The run's reviewer, built once (as the gate builds it)."""
        if self._reviewer is None:
            self._reviewer = make_reviewer(self.config, self.settings)
        return self._reviewer

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Build the reviewer now: an unusable one is one usage error, not N errors."""
        if self.config.option.collectonly or self.settings.eval_rescore:
            return
        reviewer = self.reviewer()
        check_ready = getattr(reviewer, "check_ready", None)
        if not hasattr(self.config, "workerinput") and callable(check_ready):
            problem = check_ready()
            if problem is not None:
                raise pytest.UsageError(f"pytest-advreview: {problem}")
        warm_up = getattr(reviewer, "warm_up", None)
        if callable(warm_up):
            warm_up(self.scratch / f"preflight-{os.getpid()}")
            close = getattr(reviewer, "close", None)
            if callable(close):
                self.config.add_cleanup(close)

    def _transcripts(self) -> TranscriptStore | None:
        if self.settings.eval_transcripts is not None:
            return TranscriptStore(Path(self.settings.eval_transcripts))
        cache = getattr(self.config, "cache", None)
        if cache is None:
            return None  # -p no:cacheprovider and no folder given: nothing is kept
        return TranscriptStore(Path(cache.mkdir("advreview-eval")))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """Start the cases' reviews side by side (``--advreview-jobs``), in item order."""
        evals = [item for item in session.items if isinstance(item, EvalItem)]
        reviewer: Reviewer | None = None if self.settings.eval_rescore else self.reviewer()
        self._context = EvalContext(
            config=self.config,
            settings=self.settings,
            reviewer=reviewer,  # type: ignore[arg-type]  # rescore-only never reviews
            identity=self.identity,
            transcripts=self._transcripts(),
            scratch=self.scratch,
            samples=make_samples(self.config, self.settings, reviewer)
            if reviewer is not None
            else (),
            verifier=make_verifier(
                self.config, self.settings, lambda: runstash.run_dir(self.config)
            )
            if reviewer is not None
            else None,
        )
        for item in evals:
            item.take = self._take
        # Every scratch repository is a folder of its own: reviews never share one.
        jobs = jobs_for(
            self.settings.jobs,
            shared_writable=False,
            xdist_worker=hasattr(self.config, "workerinput"),
        )
        jobs = min(jobs, len(evals))
        if jobs > 1 and not session.config.option.collectonly:
            self._executor = ThreadPoolExecutor(
                max_workers=jobs, thread_name_prefix="advreview-eval"
            )
            for item in evals:
                self._futures[id(item)] = self._executor.submit(
                    run_case, self._context, item.case, item.epoch
                )
        try:
            return (yield)
        finally:
            self._stop(reviewer)

    def _take(self, item: EvalItem) -> CaseResult:
        future = self._futures.pop(id(item), None)
        if future is not None:
            return future.result()
        assert self._context is not None
        return run_case(self._context, item.case, item.epoch)

    def _stop(self, reviewer: Reviewer | None) -> None:
        """Drop the reviews not taken, cancel the running ones, wait for the threads."""
        cancel = getattr(reviewer, "cancel", None)
        stop_all(list(self._futures.values()), self._executor, cancel if callable(cancel) else None)
        self._futures.clear()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Carry the item's result on its reports; its errors are messages, not tracebacks."""
        report = yield
        if isinstance(item, EvalItem):
            if item.result_json is not None and report.when in ("setup", "call"):
                setattr(report, EVAL_ATTR, item.result_json)
            excinfo = call.excinfo
            if excinfo is not None and isinstance(excinfo.value, (EvalError, EvalMissed)):
                report.longrepr = outbound.terminal_text(str(excinfo.value))
        return report

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """What is measured: the corpus, the epochs and the reviewer's settings."""
        lines = header_lines(self.settings, verbose=False)
        where = self._transcripts()
        kept = where.folder if where is not None else "nowhere (no cache provider)"
        lines.append(
            f"advreview eval: corpus {self.settings.eval}, {self.settings.eval_epochs} "
            f"epoch(s), round 1 only, no lead; transcripts kept in {kept}"
            + ("; re-scoring only (no reviewer is asked)" if self.settings.eval_rescore else "")
        )
        return [outbound.one_line(line) for line in lines]


class EvalController:
    """The controller's side: the results of every worker, the report, the thresholds."""

    def __init__(self, config: pytest.Config, session: EvalSession) -> None:
        self.config = config
        self.session = session
        self.results: dict[str, CaseResult] = {}
        self.report: EvalReport | None = None
        self.baseline: EvalReport | None = None
        #: Thresholds the run failed, and a baseline that could not be read.
        self.problems: list[str] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Give each xdist worker the settings the header printed."""
        node.workerinput[WORKERINPUT_KEY] = self.session.settings.model_dump_json()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect each item's result (also those of xdist workers)."""
        raw = getattr(report, EVAL_ATTR, None)
        if isinstance(raw, str):
            self.results[report.nodeid] = CaseResult.model_validate_json(raw)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Aggregate, write the reports, compare with the baseline, apply the thresholds."""
        settings = self.session.settings
        if not self.results:
            return
        corpus = self.session.corpus
        if corpus is None:
            with contextlib.suppress(CaseError):
                corpus = load_corpus(corpus_path(settings))
        report = aggregate(
            self.results.values(),
            corpus=str(settings.eval),
            corpus_version=corpus.version if corpus is not None else "unknown",
            reviewer=reviewer_config(settings, self.session.identity),
            epochs=settings.eval_epochs,
        )
        self.report = report
        status = int(exitstatus)
        if settings.eval_baseline is not None:
            try:
                self.baseline = load_baseline(Path(settings.eval_baseline))
            except BaselineError as exc:
                self.problems.append(str(exc).removeprefix("pytest-advreview: "))
        if settings.eval_report is not None:
            write_atomic(Path(settings.eval_report), report.model_dump_json(indent=2) + "\n")
        if settings.report is not None:
            write_atomic(Path(settings.report), markdown(report, self.baseline))
        self.problems += check_thresholds(
            report,
            Thresholds(
                min_recall=settings.eval_min_recall,
                max_false_block=settings.eval_max_false_block,
                max_flip=settings.eval_max_flip,
            ),
        )
        if report.errors and status == pytest.ExitCode.OK:
            status = pytest.ExitCode.TESTS_FAILED  # never: errors fail the items already
        if self.problems and status in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            status = pytest.ExitCode.TESTS_FAILED
        session.exitstatus = status

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The eval table, the comparison and any threshold the run failed."""
        if self.report is None:
            return
        terminalreporter.write_sep("=", "advreview eval")
        for line in table_lines(self.report, self.baseline):
            terminalreporter.write_line(outbound.terminal_text(line))
        for problem in self.problems:
            terminalreporter.write_line(outbound.terminal_text(f"FAILED: {problem}"), red=True)
