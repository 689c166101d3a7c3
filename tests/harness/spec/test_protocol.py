"""The protocol's fields in words (:data:`harness.spec.protocol.SETTINGS`): one setting per field,
each value with its unit, and which a run shows. Unit tier: no TensorFlow, no process."""

from __future__ import annotations

import dataclasses

import pytest

from harness.spec.protocol import ALWAYS, NEVER, PASSES, SETTINGS, TURNS, Protocol, settings_rows


def test_every_protocol_field_has_exactly_one_setting() -> None:
    fields = [f.name for f in dataclasses.fields(Protocol)]
    named = [s.field for s in SETTINGS]
    assert sorted(named) == sorted(fields), set(named) ^ set(fields)
    assert len(named) == len(set(named))


def test_each_setting_has_words_a_flag_and_says_why_when_it_is_never_shown() -> None:
    for s in SETTINGS:
        assert s.words and s.flag.startswith("--"), s
        assert s.shown in (ALWAYS, TURNS, PASSES, NEVER), s
        assert bool(s.why) == (s.shown == NEVER), f"{s.field}: 'why' is for the settings never shown"


def test_values_read_with_their_units() -> None:
    p = Protocol(budget_min=13.0, min_effect=0.05, unstable_cv=0.1, turn_s=0.2, breakdown=False)
    values = {s.field: s.value(p) for s in SETTINGS}
    assert values["budget_min"] == "13 min"
    assert values["processes"] == "3"
    assert values["turn_s"] == "0.2 s"
    assert values["min_effect"] == "5%"
    assert values["unstable_cv"] == "10%"
    assert values["max_live"] == "from free memory"
    assert values["worker_memory_gib"] == "no cap"
    assert values["peak"] == "yes" and values["breakdown"] == "no"
    capped = Protocol(max_live=4, worker_memory_gib=2.5)
    assert {s.field: s.value(capped) for s in SETTINGS if s.field in ("max_live", "worker_memory_gib")} == {
        "max_live": "4",
        "worker_memory_gib": "2.5 GiB",
    }


@pytest.mark.parametrize("on,flag", [(False, "--breakdown"), (True, "--no-breakdown")])
def test_a_negatable_switch_names_the_flag_that_changes_it(on: bool, flag: str) -> None:
    setting = next(s for s in SETTINGS if s.field == "breakdown")
    assert setting.flag_for(Protocol(breakdown=on)) == flag


def test_a_switch_only_one_flag_sets_names_no_flag_once_set() -> None:
    by_field = {s.field: s for s in SETTINGS}
    assert by_field["peak"].flag_for(Protocol(peak=True)) == "--no-peak"
    assert by_field["peak"].flag_for(Protocol(peak=False)) == ""
    assert by_field["busy_ok"].flag_for(Protocol(busy_ok=False)) == "--busy-ok"
    assert by_field["busy_ok"].flag_for(Protocol(busy_ok=True)) == ""


def test_a_run_in_turns_shows_turns_and_a_run_in_passes_shows_windows() -> None:
    p = Protocol()
    turns = {words for words, _, _ in settings_rows(p, turns=True)}
    passes = {words for words, _, _ in settings_rows(p, turns=False)}
    by_field = {s.field: s.words for s in SETTINGS}
    assert by_field["turn_s"] in turns and by_field["turn_s"] not in passes
    assert by_field["window_s"] in passes and by_field["window_s"] not in turns
    assert by_field["processes"] in turns and by_field["processes"] in passes
    never = {s.words for s in SETTINGS if s.shown == NEVER}
    assert not never & (turns | passes)
