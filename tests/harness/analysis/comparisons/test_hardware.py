"""compare-hardware over two real machines' `nox -s bench` runs (docs/evidence): two VMs sold as
"AMD EPYC", 2 cores each, one more than twice as fast as the other."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pytest

from harness.analysis.comparisons import hardware, hardware_text, machines
from harness.contract.columns import Estimate, unflatten_all
from harness.contract.machine import MachineFacts
from harness.contract.records import CellRow, RatioRow, RunInfo
from harness.errors import HarnessError
from harness.formulas import across_runs, stats
from harness.formulas.verdicts import HIGHER, LOWER, UNDECIDED, equivalent, judge
from harness.spec.groups import Relation

EVIDENCE = Path(__file__).resolve().parents[4] / "docs" / "evidence"
RUNS = (EVIDENCE / "2026-11-27-answer-first" / "results.tgz", EVIDENCE / "2026-11-28-machines" / "epyc-b.tgz")


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[CellRow], list[RatioRow]]:
    from harness.results import history

    roots = []
    for i, tgz in enumerate(RUNS):
        root = tmp_path_factory.mktemp(f"m{i}")
        with tarfile.open(tgz) as tar:
            tar.extractall(root, filter="data")
        roots.append(next(root.rglob("cells")).parent)
    cells, _ = history.load(roots)
    ratios = history.load_table(roots, "ratios")
    return unflatten_all(CellRow, cells.to_dict("records")), unflatten_all(
        RatioRow, ratios.to_dict("records")
    )


def test_the_two_epyc_vms_are_two_machines_told_apart_by_their_peaks(two) -> None:
    rows, _ = two
    found = machines.identify(rows)
    assert [m.name.rsplit(", ", 1)[1] for m in found] == ["peak 193 GFLOP/s", "peak 458 GFLOP/s"]
    assert all("do not overlap" in m.why for m in found)


def test_the_faster_vm_is_decided_faster_for_each_model_and_costs_less(two) -> None:
    rows, ratios = two
    found = machines.identify(rows)
    slow, fast = found
    c = hardware.compare(found, rows, ratios, prices={slow.name: 0.10, fast.name: 0.10})
    assert c.baseline == slow.name
    for a in c.models:
        assert a.leader == fast.name and [v.verdict for v in a.leads] == [HIGHER]
        assert 1.7 < a.leads[0].ratio.value < 2.6
        assert a.costs[fast.name].per_million.value < a.costs[slow.name].per_million.value
        assert a.epoch_examples == 60_000
    text = hardware_text.text(c)
    assert re.search(r"trains it fastest, at 2\.\d\dx the speed of", text)
    assert "not measurable here" in text and "$0.10/hour" in text
    data = json.loads(json.dumps(hardware_text.to_json(c)))
    assert data["leaders"] == {"cnn": fast.name, "dense": fast.name}
    html = hardware_text.render_html(c)
    assert "<h2>Which machine trains each model fastest</h2>" in html and "&#39;" in html


def test_the_reference_is_the_users_and_decides_the_direction(two) -> None:
    rows, ratios = two
    found = machines.identify(rows)
    c = hardware.compare(found, rows, ratios, baseline=found[1].name)
    assert {v.verdict for r in c.rows if (v := r.versus) is not None} <= {LOWER, "undecided"}


def test_bad_names_and_prices_name_the_fix(two) -> None:
    rows, ratios = two
    found = machines.identify(rows)
    with pytest.raises(HarnessError, match="--baseline='nope': it names no machine"):
        hardware.compare(found, rows, ratios, baseline="nope")
    with pytest.raises(HarnessError, match="--prices='nope'"):
        hardware.compare(found, rows, ratios, prices={"nope": 1.0})
    with pytest.raises(HarnessError, match="needs two or more"):
        hardware.compare(found[:1], rows, ratios)
    with pytest.raises(HarnessError, match="expected NAME=USD"):
        hardware.parse_price("fast=-1")
    with pytest.raises(HarnessError, match=r"cannot read the price file p\.csv"):
        hardware.parse_price_table("a,b\n1,2\n", "p.csv")
    assert hardware.parse_price_table('[machines."a b"]\nusd_per_hour = 2.5\n', "p.toml") == {"a b": 2.5}


@pytest.mark.parametrize("m", [hardware.MIN_EFFECT, stats.MIN_EFFECT])
def test_the_footnote_states_the_band_the_verdicts_apply(m: float) -> None:
    words = hardware_text.verdict_rule(m)
    low, high = (float(x) for x in re.search(r"inside \[(\d\.\d+), (\d\.\d+)\]", words).groups())  # type: ignore[union-attr]
    assert f"{high:.3f} or more or {low:.3f} or less" in words
    assert equivalent(low + 5e-4, high - 5e-4, m)  # a CI just inside the stated band
    assert not equivalent(low - 1e-3, 1.0, m) and not equivalent(1.0, high + 1e-3, m)
    assert judge(high + 5e-4, high + 4e-4, high + 6e-4, m) == HIGHER  # just beyond the stated edge
    assert judge(low - 5e-4, low - 6e-4, low - 4e-4, m) == LOWER
    assert judge(high - 1e-3, high - 2e-3, high + 1e-2, m) == UNDECIDED  # excludes 1, short of the edge


def test_the_pages_footnote_is_the_rule_at_the_comparisons_min_effect(two) -> None:
    rows, ratios = two
    c = hardware.compare(machines.identify(rows), rows, ratios)
    assert c.min_effect == hardware.MIN_EFFECT
    assert hardware_text.verdict_rule(c.min_effect) in hardware_text.method(c)
    assert "[0.952, 1.050]" in hardware_text.text(c)


AMX = "amx_bf16 amx_tile avx2 avx512_bf16 avx512f"


def _run(run_id: str, flags: str | None, cells: dict[str, tuple[str, float, float]]) -> list[CellRow]:
    """One run's rows on a 2-core CPU machine named after its run: cell id -> (precision,
    examples/s, the run's peak of that precision's compute dtype in FLOP/s); ``flags`` None: a run
    older than the facts."""
    facts = MachineFacts(cpu_model="Xeon", cpu_flags=flags or "", cores=2, partial=flags is None).to_json()
    dtype = {"float32": "float32", "mixed_bfloat16": "bfloat16"}
    return unflatten_all(
        CellRow,
        [
            {"run_id": run_id, "timestamp": "2026-12-06T00:00:00+00:00", "machine": run_id}
            | {"machine_facts": facts, "cell_id": cid, "status": "ok", "model": "cnn", "precision": p}
            | {"examples_per_sec": eps, "peak_flops_per_sec": peak, "peak_flops_per_sec_ci_low": peak * 0.9}
            | {"peak_flops_per_sec_ci_high": peak * 1.1, "peak_dtype": dtype[p], "peak_cores": 2}
            | {"device_kind": "CPU", "host_cores": 2, "strategy": "default", "per_replica_batch": 64}
            for cid, (p, eps, peak) in cells.items()
        ],
    )


def _raced(run_id: str, subject: str, leader: str) -> RatioRow:
    return RatioRow(
        run=RunInfo(run_id=run_id),
        relation=Relation.FASTEST,
        subject=subject,
        reference=leader,
        group="r0",
        ratio=Estimate(0.5, 0.45, 0.55),
        scale=1.0,
        instances=5,
        blocks=4,
        turn_s=0.2,
        verdict=LOWER,
        decided=True,
        dropped_instances=0,
        note="",
        disturbed_blocks=0,
    )


def test_each_machines_peaks_its_best_precision_and_the_bf16_units_its_runs_never_raced() -> None:
    rows = [
        *_run("amx", AMX, {"f32": ("float32", 100.0, 200e9), "acc4": ("float32", 120.0, 200e9)}),
        *_run("spr", AMX, {"f32": ("float32", 150.0, 300e9), "bf16": ("mixed_bfloat16", 300.0, 900e9)}),
        *_run("zen2", "avx2", {"f32": ("float32", 90.0, 150e9)}),
        *_run("old", None, {"f32": ("float32", 80.0, 100e9)}),
    ]
    ratios = [_raced("amx", "f32", "acc4"), _raced("spr", "f32", "bf16")]
    found = machines.identify(rows)
    spr = machines.find(found, "spr", "--baseline")
    assert [(p.dtype, p.flops.value) for p in spr.peaks] == [("float32", 300e9), ("bfloat16", 900e9)]
    c = hardware.compare(found, rows, ratios, baseline="amx")
    assert c.peak_dtype == "float32"  # the dtype every machine measured
    (a,) = c.models
    assert a.best["spr"].cell.precision == "mixed_bfloat16" and a.best["amx"].cell.precision == "float32"
    # amx has bfloat16 units and raced float32 only; old's runs do not say; spr raced it; zen2 has none
    assert a.no_bf16 == (
        hardware.NoBf16("amx", ("amx_bf16", "avx512_bf16"), ("float32",)),
        hardware.NoBf16("old", None, ("float32",)),
    )
    text = hardware_text.text(c)
    assert "on 'amx', its fastest configuration: no distribution strategy, in float32, 120 examples/s" in text
    assert (
        "on 'spr', its fastest configuration: no distribution strategy, mixed precision (bfloat16), 300"
        in text
    )
    assert (
        "on 'amx', its best may be higher than shown: its CPU has bfloat16 units (amx_bf16, avx512_bf16) "
        "but its runs trained it in float32 only (`python -m harness run --sweep default` on it races "
        "mixed bfloat16)"
    ) in text
    assert (
        "on 'old', its best may be higher than shown: its runs trained it in float32 only and are from before "
        "the suite recorded its machine facts: its CPU may have bfloat16 units (`python -m harness run --sweep default` "
        "on it races mixed bfloat16 where the CPU has them)"
    ) in text
    assert "'zen2', its best" not in text and "'spr', its best" not in text
    assert "peak in float32 300 GFLOP/s [270, 330] and in bfloat16 900 GFLOP/s [810, 990]" in text
    assert "Peak in float32 of 'spr' against the reference's: 1.50x" in text
    data = json.loads(json.dumps(hardware_text.to_json(c)))
    assert data["peak_dtype"] == "float32" and data["models"][0]["no_bf16"][0]["units"] == [
        "amx_bf16",
        "avx512_bf16",
    ]
    assert [p["dtype"] for p in data["machines"][2]["peaks"]] == ["float32", "bfloat16"]
    assert "its best may be higher than shown" in hardware_text.render_html(c)


def _instance(run_id: str, instance: str, scale: float, day: int, name: str = "lab") -> list[CellRow]:
    """One run of machine ``name`` on host ``instance``: 4 one-process configurations, 3 processes
    each, at ``scale`` x their usual figures."""
    facts = MachineFacts(cpu_model="EPYC", cores=2).to_json()
    return unflatten_all(
        CellRow,
        [
            {"run_id": run_id, "timestamp": f"2026-12-0{day}T00:00:00+00:00", "machine": name}
            | {"machine_facts": facts, "instance_id": instance, "cell_id": f"c{i}", "status": "ok"}
            | {"model": "cnn", "precision": "float32", "strategy": "default", "per_replica_batch": 64}
            | {"examples_per_sec": eps, "process_examples_per_sec": [eps * 0.99, eps, eps * 1.01]}
            | {"device_kind": "CPU", "host_cores": 2}
            for i in range(4)
            if (eps := scale * 1000 * (i + 1))
        ],
    )


def test_instances_of_one_machine_type_add_their_measured_spread() -> None:
    """Runs under one name with equal facts on two host instances are one machine type: the
    instances' spread joins every CI, and without a second instance the answer says it compares
    these instances."""
    other = _instance("o", "ffffff", 2.0, 1, "other")
    alone = [*_instance("a", "aaaaaa", 1.0, 1), *other]
    one = hardware.compare(machines.identify(alone), alone, [])
    assert "no instance-to-instance spread has been measured" in hardware_text.text(one)
    rows = [*_instance("a", "aaaaaa", 1.0, 1), *_instance("b", "bbbbbb", 1.1, 2), *other]
    found = machines.identify(rows)
    assert {m.name: len(m.instances) for m in found} == {"lab": 2, "other": 1}
    two = hardware.compare(found, rows, [])
    assert two.spread.part(across_runs.INSTANCE).df == 1
    assert "the CIs carry an instance-to-instance spread of" in hardware_text.text(two)
    wide, narrow = (next(r.versus for r in c.rows if r.versus) for c in (two, one))
    assert wide is not None and narrow is not None
    assert wide.ratio.high / wide.ratio.low > narrow.ratio.high / narrow.ratio.low
