"""The answer in words, over a real run's tables (a recorded `nox -s bench`) and literal rows: no
raw cell id in what a person reads, every number a value of the run's tables, labels unique."""

from __future__ import annotations

import math
import re
import tarfile
from pathlib import Path

import pytest

from harness.analysis.run import answer
from harness.analysis.run.ratios_text import ratios_text
from harness.analysis.run.tables import summary_table
from harness.contract.columns import Estimate, unflatten_all
from harness.contract.machine import MachineFacts
from harness.contract.records import CellRow, RatioRow
from harness.spec.groups import Relation

EVIDENCE = Path(__file__).resolve().parents[4] / "docs" / "evidence"
RUN = EVIDENCE / "2026-11-27-answer-first" / "results.tgz"
"""A real `nox -s bench` results folder (cells, ratios), recorded with the answer."""


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[CellRow], list[RatioRow]]:
    from harness.results.history import load
    from harness.results.store import read

    root = tmp_path_factory.mktemp("run")
    with tarfile.open(RUN) as tar:
        tar.extractall(root, filter="data")
    results = next(root.rglob("cells")).parent
    cells, _ = load(results)
    return unflatten_all(CellRow, cells.to_dict("records")), unflatten_all(
        RatioRow, read(results, "ratios").to_dict("records")
    )


ID = re.compile(r"\b[a-z0-9_]+/[a-z_\[\]]+/r\d+w\d+")
"""A cell id's start (``cnn/mirrored[auto]/r2w1``)."""


def test_the_answer_names_no_cell_id_and_says_each_models_leader(tables) -> None:
    rows, ratios = tables
    found = answer.answers(rows, ratios)
    assert {a.model for a in found} == {"cnn", "dense"}
    text = answer.text(found, rows)
    assert not ID.search(text), ID.search(text)
    for short in ("r1w1", "spe10", "acc4", " t1 ", "b64", "cv b/w", "ctl", "[auto]"):
        assert short not in text
    assert text.count(": train with ") == 2
    assert "sharing the same cores" in text.splitlines()[1]  # before any scaling figure
    for a in found:
        assert len(a.versus) == 6 and a.plain is not None


def test_the_terminal_tables_name_no_cell_id(tables) -> None:
    rows, ratios = tables
    printed = summary_table(rows) + ratios_text(ratios, 0.2, 4, 0.05, rows)
    assert not ID.search(printed), ID.search(printed)


def test_labels_are_unique_within_each_model(tables) -> None:
    rows, _ = tables
    named = answer.labels(rows)
    for model in {r.cell.model for r in rows}:
        mine = [named[r.cell.cell_id] for r in rows if r.cell.model == model]
        assert len(mine) == len(set(mine))


NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)(%?)")


def _values(rows: list[CellRow], ratios: list[RatioRow]) -> list[float]:
    """Every number of the run's tables: numeric columns, and numbers inside text columns."""
    from harness.contract.columns import flatten

    out: list[float] = []
    for record in (*rows, *ratios):
        for value in flatten(record).values():
            if isinstance(value, bool):
                continue
            if isinstance(value, (int, float)) and math.isfinite(value):
                out.append(float(value))
            elif isinstance(value, str):
                out += [float(m.group(1).replace(",", "")) for m in NUMBER.finditer(value)]
    return out


def _matches(text: str, percent: bool, values: list[float]) -> bool:
    """Whether a printed number is a table value at the printed precision, as is or re-expressed:
    x 100 (a percentage), |r - 1| x 100 and |1/r - 1| x 100 (a ratio as a change), / 60 (seconds
    as minutes), x 1e3 and x 1e6 (seconds as ms and us)."""
    printed = float(text.replace(",", ""))
    decimals = len(text.split(".")[1]) if "." in text else 0
    tolerance = 0.5 * 10**-decimals + 1e-9
    for v in values:
        forms = [v, v / 60, v * 1e3, v * 1e6] if not percent else [v * 100, abs(v - 1) * 100]
        if percent and v:
            forms.append(abs(1 / v - 1) * 100)
        if any(abs(f - printed) <= tolerance for f in forms):
            return True
    return False


def test_every_number_the_answer_prints_is_a_value_of_the_tables(tables) -> None:
    rows, ratios = tables
    found = answer.answers(rows, ratios)
    values = _values(rows, ratios)
    text = answer.text(found, rows)
    words_only = re.sub(r"python -m harness run [^\n]*", "", text)  # a command's flags are settings
    bad = [
        m.group(0) for m in NUMBER.finditer(words_only) if not _matches(m.group(1), m.group(2) == "%", values)
    ]
    assert not bad, bad


def _ratio(subject: str, value: float, low: float, high: float, verdict: str, **kw) -> RatioRow:
    return RatioRow(
        relation=Relation.FASTEST,
        subject=subject,
        reference="lead",
        group="g0",
        ratio=Estimate(value, low, high),
        scale=1.0,
        instances=5,
        blocks=4,
        turn_s=0.2,
        verdict=verdict,
        decided=verdict != "undecided",
        dropped_instances=0,
        note="",
        disturbed_blocks=0,
        **kw,
    )


def _cell(cell_id: str, **axes) -> CellRow:
    base = {"model": "cnn", "strategy": "default", "per_replica_batch": 64, "steps_per_execution": 10}
    return unflatten_all(CellRow, [{"cell_id": cell_id, "status": "ok", **base, **axes}])[0]


def test_an_undecided_contender_says_what_would_decide_it_and_the_leader_only_leads() -> None:
    rows = [
        _cell("lead", accum_steps=4, loop="ctl", examples_per_sec=110.0),
        _cell("plain", accum_steps=1, loop="ctl", examples_per_sec=100.0),
        _cell("fit", accum_steps=1, loop="fit", examples_per_sec=100.0),
    ]
    ratios = [
        _ratio("plain", 0.90, 0.85, 0.95, "lower"),
        _ratio("fit", 0.99, 0.94, 1.04, "undecided", extra_instances=3, extra_s=60.0),
    ]
    (a,) = answer.answers(rows, ratios)
    assert a.plain is not None and a.plain.label == "no distribution strategy"
    text = answer.text([a], rows)
    assert "leading, not yet decided against 1 of the other 2" in text
    assert "11% faster than the plain custom loop (between 5.3% and 18%)" in text
    assert "Keras Model.fit: 1.0% slower (between 6.0% slower and 4.0% faster)" in text
    assert "about 3 more instances (~1.0 min more budget) would likely decide it" in text


def _timed(cell_id: str, compute_ms: float, input_ms: float, **axes) -> CellRow:
    """A row whose 10 ms step was broken down, stored with a compute verdict and an older rule's
    reason (its negative overlap)."""
    parts = {"parts_step_s": 0.010, "compute_s": compute_ms / 1e3, "allreduce_s": 0.0}
    parts |= {"input_s": input_ms / 1e3, "dispatch_s": 0.0, "bound": "compute"}
    return _cell(cell_id, **axes, **parts, bound_reason="compute-bound: (overlap -50%); try x")


def test_why_says_what_no_part_explains_and_names_a_bound_only_where_a_part_explains_the_step() -> None:
    rows = [
        _timed("lead", 3.0, 2.0, accum_steps=4, loop="ctl", examples_per_sec=110.0),
        _timed("plain", 5.2, 1.4, accum_steps=1, loop="ctl", examples_per_sec=100.0),
    ]
    (a,) = answer.answers(rows, [_ratio("plain", 0.90, 0.85, 0.95, "lower")])
    text = answer.text([a], rows)
    assert "overlap" not in text
    # the leader: compute 30%, input 20%, half the step unexplained: bound by no part, no knob to try
    assert (
        "the leader, no distribution strategy, 4 accumulation steps per update: no part bounds it: "
        "more of the step is "
        "unexplained than any part takes; of the 10 ms step, compute 30%, communication 0%, "
        "input 20%, dispatch 0%, unexplained 50%"
    ) in text
    assert "Next:" not in text
    # the rival: compute 52% against 34% unexplained, compute-bound
    assert (
        "compute-bound: of the 10 ms step, compute 52%, communication 0%, input 14%, dispatch 0%, unexplained 34%"
        in text
    )
    rows[0] = _timed("lead", 7.0, 1.0, accum_steps=4, loop="ctl", examples_per_sec=110.0)
    assert "Next: the leader is compute-bound" in answer.text(
        answer.answers(rows, [_ratio("plain", 0.9, 0.85, 0.95, "lower")]), rows
    )


def test_on_a_cpu_the_answer_says_why_mixed_bfloat16_was_raced_or_not() -> None:
    amx = MachineFacts(cpu_flags="amx_bf16 avx512_bf16 avx512f").to_json()
    plain = MachineFacts(cpu_flags="avx2 fma").to_json()

    def said(facts: str, precision: str) -> str:
        rows = [
            _cell("lead", precision=precision, machine_facts=facts, examples_per_sec=110.0),
            _cell("plain", precision="float32", accum_steps=4, machine_facts=facts, examples_per_sec=100.0),
        ]
        return answer.text(answer.answers(rows, [_ratio("plain", 0.9, 0.85, 0.95, "lower")]), rows)

    assert (
        "Precision: this CPU reports bfloat16 units (amx_bf16, avx512_bf16), so mixed bfloat16 is raced."
        in said(amx, "mixed_bfloat16")
    )
    assert "bfloat16 units (amx_bf16, avx512_bf16), but nothing here trained in mixed bfloat16." in said(
        amx, "float32"
    )
    assert (
        "reports no bfloat16 units (none of amx_bf16, avx512_bf16, bf16, svebf16), so float32 alone"
        in said(plain, "float32")
    )
    assert "mixed bfloat16 is emulated here, slower" in said(plain, "mixed_bfloat16")


def test_a_ratio_in_words() -> None:
    assert answer.change(0.919, 0.898, 0.941) == "8.1% slower (between 5.9% and 10%)"
    assert answer.change(1.2, 1.1, 1.3) == "20% faster (between 10% and 30%)"
    assert answer.change(0.99, None, None) == "1.0% slower (no CI: fewer than 2 instances)"


def test_logical_devices_are_named_for_what_they_are_on_a_cpu_and_on_a_gpu() -> None:
    logical = {"logical_devices": True, "replicas": 2, "strategy": "mirrored"}
    on_cpu = _cell("cnn/mirrored[auto]/r2w1", device_kind="CPU", **logical)
    on_gpu = _cell("cnn/mirrored[auto]/r2w1", device_kind="GPU", **logical)
    assert answer.cpu_note([_cell("cnn/default/r1w1")]) == ""
    assert answer.cpu_note([on_cpu]).startswith("On this CPU, replicas are logical devices")
    note = answer.cpu_note([on_gpu])
    assert note.startswith("On this GPU host, replicas beyond its GPUs are logical GPUs")
    assert "never among the configurations raced" in note
