"""The doctor's own entry point (``doctorplugin.py``): it owns the doctor's options, and
``-p no:advreview`` turns it off with the rest of the package.

The runs load it with ``-p pytest_advreview.doctorplugin``, which is also the entry
point's name: installed or not, it is registered once.  ``tests/test_package.py`` checks
that the wheel declares the entry point and that the installed wheel loads it.
"""

from __future__ import annotations

import pytest

from pytest_advreview import options

DOCTOR = ("-p", "pytest_advreview.doctorplugin")


def test_the_doctor_options_are_the_doctor_rows_of_specs() -> None:
    assert [spec.option for spec in options.DOCTOR_SPECS] == [
        "--advreview-doctor",
        "--advreview-doctor-json",
        "--advreview-doctor-online",
    ]


def test_the_doctor_plugin_registers_its_options_once(pytester: pytest.Pytester) -> None:
    # Twice -p, and the entry point too where it is installed: one registration (a second
    # would be an argparse conflict).
    result = pytester.runpytest(*DOCTOR, *DOCTOR, "--help")
    assert result.ret == pytest.ExitCode.OK
    assert result.stdout.str().count("--advreview-doctor ") == 1
    assert "--advreview-doctor-json=PATH" in result.stdout.str()
    assert "--adversarial-review" in result.stdout.str()


def test_the_doctor_plugin_owns_the_doctor_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*DOCTOR, "--advreview-doctor-json=x.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--advreview-doctor-json only works together with*"])
    # Without it the option is unknown: a usage error, never a test run in its place.
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = pytester.runpytest("-p", "no:pytest_advreview.doctorplugin", "--advreview-doctor")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --advreview-doctor*"])
    assert "passed" not in result.stdout.str()


def test_no_advreview_turns_the_doctor_off_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = pytester.runpytest("-p", "no:advreview", *DOCTOR, "--help")
    assert result.ret == pytest.ExitCode.OK
    assert "--advreview-doctor" not in result.stdout.str()
    result = pytester.runpytest("-p", "no:advreview", *DOCTOR, "--advreview-doctor")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --advreview-doctor*"])
