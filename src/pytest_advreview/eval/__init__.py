"""``--advreview-eval``: measure the reviewer on a labelled corpus before it gates.

Each case of a corpus (a folder with a ``case.toml``, :mod:`.case`) is built into a
scratch repository of its own (:mod:`.scratch`) and reviewed there once per epoch, round 1
only, with the run's reviewer, prompt, fail-on and workspace guard (:mod:`.run`); no lead
runs and nothing is stored as a gate verdict.  The findings are matched to the case's
seeded defects without a model (:mod:`.match`), the scores become the aggregate metrics
(:mod:`.metrics`), and the report writes them (:mod:`.report`).  Each review's transcript
is kept (:mod:`.transcripts`), so a rerun re-scores without asking the reviewer again.
:mod:`.plugin` holds the pytest hooks; docs/eval.md is the user's page.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BUILTIN", "BUILTIN_CORPUS"]

#: The ``--advreview-eval`` value that names the bundled corpus.
BUILTIN = "builtin"
#: The bundled corpus (package data).
BUILTIN_CORPUS = Path(__file__).resolve().parent / "corpus"
