"""``list`` and the dry runs say how a run measures as a table in words, each setting with the
``run`` flag that changes it, not as a Python repr. Unit tier: no TensorFlow, no process."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from harness.commands import build_parser, main
from harness.spec.protocol import ALWAYS, NEVER, SETTINGS, TURNS, Protocol, Setting


def _run_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.field)
def test_every_setting_s_flag_is_one_run_takes_for_that_setting(setting: Setting) -> None:
    options = _run_parser()._option_string_actions
    flags = {setting.flag}
    if setting.unit == "yes/no":  # the flag shown when the switch is on, and when it is off
        flags |= {setting.flag_for(Protocol(**{setting.field: on})) for on in (True, False)} - {""}
    for flag in flags:
        assert flag in options, f"{setting.field}: run takes no {flag}"
        dest = setting.dest or setting.field
        assert options[flag].dest == dest, f"{flag} sets {options[flag].dest}, not {dest}"


def _table(out: str) -> list[str]:
    """The "how it measures" lines of ``out``: its title and one line per setting shown."""
    words = tuple(s.words + " " for s in SETTINGS)
    return [line for line in out.splitlines() if line.startswith(("how it measures ", *words))]


def test_list_prints_how_it_measures_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--sweep", "default", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "protocol:" not in out and "Protocol(" not in out
    table = _table(out)
    assert table[0].split() == ["how", "it", "measures", "value", "flag"]
    assert len(table) == 1 + sum(s.shown in (ALWAYS, TURNS) for s in SETTINGS), table
    assert any(line.split()[-3:] == ["13", "min", "--budget-min"] for line in table), table
    assert any(line.split()[-2:] == ["3", "--processes"] for line in table), table
    assert any(line.split()[-2:] == ["5%", "--min-effect"] for line in table), table
    assert len({line.index(line.split()[-1]) for line in table}) == 1, "the flag column is aligned"
    hidden = [s.words for s in SETTINGS if s.shown == NEVER]
    assert not [w for w in hidden if w in out]


def test_list_json_is_unchanged_and_the_table_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--sweep", "default", "--device", "cpu", "--json"]) == 0
    captured = capsys.readouterr()
    assert set(json.loads(captured.out)) >= {"sweep", "platform", "cells"}
    assert "protocol" not in json.loads(captured.out)
    assert "how it measures" in captured.err


def test_a_dry_run_prints_the_table_with_the_flags_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--sweep", "default", "--device", "cpu", "--dry-run", "--results", str(tmp_path / "r")]
    assert main([*argv, "--budget-min", "20", "--min-effect", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "Protocol(" not in out and out.rstrip().endswith("dry run: nothing started.")
    table = _table(out)
    assert any(line.split()[-3:] == ["20", "min", "--budget-min"] for line in table), table
    assert any(line.split()[-2:] == ["10%", "--min-effect"] for line in table), table


def test_collectives_are_timed_in_windows_not_turns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--sweep", "collectives", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    words = {s.field: s.words for s in SETTINGS}
    assert words["window_s"] in out and words["repeats"] in out
    assert words["turn_s"] not in out and words["budget_min"] not in out
