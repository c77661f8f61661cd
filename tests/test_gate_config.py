"""The plugin's arguments in ``addopts`` and what the branch's configuration changes."""

from __future__ import annotations

import pytest

from pytest_advreview.trust.baseconfig import GateConfig, advreview_args, branch_overrides


@pytest.mark.parametrize(
    ("addopts", "found"),
    [
        ("-o advreview_exclude=*", ("-o advreview_exclude=*",)),
        ("-oadvreview_exclude=*", ("-o advreview_exclude=*",)),
        ("--override-ini=advreview_exclude=*", ("-o advreview_exclude=*",)),
        ("--override-ini advreview_exclude=*", ("-o advreview_exclude=*",)),
        ("-o cache_dir=x -q", ()),
        ("--advreview-fail-on critical", ("--advreview-fail-on=critical",)),
        ("--advreview-fresh --advreview-shard=2/2", ("--advreview-fresh", "--advreview-shard=2/2")),
        (["--advreview-diff", "none"], ("--advreview-diff=none",)),
        ('-o "unclosed', ()),
    ],
)
def test_the_plugins_arguments_are_found_in_every_spelling(
    addopts: object, found: tuple[str, ...]
) -> None:
    assert advreview_args(addopts) == found


def test_what_the_branch_adds_drops_or_changes_is_named() -> None:
    base = {"addopts": "--advreview-fail-on=high -q", "advreview_plans": "docs/*.md"}
    branch = {
        "addopts": "-q --advreview-diff=none -o advreview_exclude=*",
        "advreview_plans": "docs/*.md",
        "advreview_diff": "none",
    }
    assert branch_overrides(branch, base) == [
        "ini advreview_diff = none (the change under review comes from the command line or "
        "the workflow only)",
        "addopts --advreview-diff=none (shards and the change under review come from the "
        "command line or the workflow only)",
        "addopts -o advreview_exclude=* (not in the base's addopts)",
        "addopts without --advreview-fail-on=high (the base's addopts has it)",
    ]
    assert branch_overrides(base, base) == []


def test_the_command_line_wins_over_the_bases_addopts_and_file() -> None:
    gate = GateConfig(
        command_line=("-o advreview_fail_on=critical", "--advreview-fresh"),
        base_args=("-o advreview_fail_on=high", "-o advreview_model=m"),
        base_keys={"advreview_fail_on": "medium", "advreview_model": "n", "advreview_x": "y"},
        where="pytest.ini at main (1a2b)",
    )
    assert gate.ini("advreview_fail_on") == ("critical", "-o advreview_fail_on=critical")
    assert gate.ini("advreview_model") == (
        "m",
        "-o advreview_model=m in addopts of pytest.ini at main (1a2b)",
    )
    assert gate.ini("advreview_x") == ("y", "ini advreview_x in pytest.ini at main (1a2b)")
    assert gate.ini("advreview_none") is None
    assert gate.option("--advreview-fresh") == ((None, True),)
    assert gate.option("--advreview-model") == ()
