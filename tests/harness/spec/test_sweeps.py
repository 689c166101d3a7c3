"""The named sweeps as planned on a CPU, a 1-GPU and an 8-GPU host (faked platforms): how many cells
each plans; what each model's headline races in the default sweep, and that only whole GPUs are
contenders."""

from __future__ import annotations

import dataclasses

import pytest

from harness.spec.protocol import Platform
from harness.spec.rules import unsupported_reason
from harness.spec.sweep import contenders, doubling, expand, on
from harness.spec.sweeps import SWEEPS, get_sweep

CPU = Platform()
ONE_GPU = Platform("gpu", 1, gpu_memory_mib=81_559)
EIGHT_GPUS = Platform("gpu", 8, gpu_memory_mib=81_559)
DEFAULT = get_sweep("default")


def heads(platform: Platform, model: str) -> list[str]:
    return [c.split("/", 1)[1] for c in contenders(DEFAULT, platform) if c.startswith(model + "/")]


def test_on_a_cpu_the_headline_is_as_before() -> None:
    assert on(DEFAULT, CPU) is DEFAULT
    assert heads(CPU, "cnn") == [
        "default/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
        "default/r1w1/b64/acc4/ctl/spe10/float32/synthetic/weak",
        "default/r1w1/b64/acc1/fit/spe10/float32/synthetic/weak",
        "mirrored/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
        "mirrored[auto]/r2w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
        "central_storage/r2w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
        "multi_worker_mirrored[ring]/r1w2/b64/acc1/ctl/spe10/float32/synthetic/weak",
    ]
    assert len(expand(DEFAULT, CPU)) == 36


def test_on_one_gpu_the_headline_is_what_a_gpu_user_chooses_between() -> None:
    assert heads(ONE_GPU, "dense") == [
        "default/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
        "default/r1w1/b256/acc1/ctl/spe10/float32/synthetic/weak",
        "default/r1w1/b64/acc1/ctl/spe10/mixed_float16/synthetic/weak",
        "default/r1w1/b64/acc1/ctl/spe10/float32+xla/synthetic/weak",
        "default/r1w1/b64/acc1/fit/spe10/float32/synthetic/weak",
        "mirrored/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
    ]
    cells = expand(DEFAULT, ONE_GPU)
    runnable = [c for c in cells if unsupported_reason(c, ONE_GPU) is None]
    assert (len(cells), len(runnable)) == (30, 24)
    # two replicas on one GPU are logical GPUs: measured (an all-reduce probe), never a contender
    assert any(c.replicas == 2 for c in runnable)
    assert all(c.replicas * c.workers <= 1 for c in runnable if c.id in contenders(DEFAULT, ONE_GPU))


def test_on_eight_gpus_mirrored_races_on_1_2_4_and_8_whole_gpus() -> None:
    mirrored = [h for h in heads(EIGHT_GPUS, "cnn") if h.startswith("mirrored")]
    assert [h.split("/")[1] for h in mirrored] == ["r1w1", "r2w1", "r4w1", "r8w1"]
    cells = expand(DEFAULT, EIGHT_GPUS)
    assert len(cells) == 34 and all(unsupported_reason(c, EIGHT_GPUS) is None for c in cells)


@pytest.mark.parametrize(
    "devices, counts", [(1, [1]), (2, [1, 2]), (3, [1, 2, 3]), (8, [1, 2, 4, 8]), (6, [1, 2, 4, 6])]
)
def test_doubling(devices: int, counts: list[int]) -> None:
    assert doubling(devices) == counts


def test_sweep_names_in_order() -> None:
    assert list(SWEEPS) == [
        "smoke", "default", "models", "nightly", "scaling", "cluster", "equivalence", "validation", "gpu",
        "collectives",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "name, cells, headline",
    [
        ("smoke", (11, 11, 11), (11, 4, 11)),
        ("default", (36, 30, 34), (14, 12, 18)),
        ("models", (9, 9, 9), (9, 6, 9)),
        ("nightly", (4, 4, 4), (4, 2, 4)),
        ("scaling", (24, 120, 1016), (24, 8, 120)),
        ("cluster", (18, 18, 18), (18, 16, 18)),
        ("equivalence", (20, 20, 20), (20, 12, 20)),
        ("validation", (16, 16, 16), (16, 10, 16)),
        ("gpu", (28, 28, 28), (28, 24, 28)),
        ("collectives", (21, 21, 21), (0, 0, 0)),
    ],
)
def test_each_sweep_plans_its_cells(name: str, cells: tuple[int, ...], headline: tuple[int, ...]) -> None:
    platforms = (CPU, ONE_GPU, EIGHT_GPUS)
    assert tuple(len(expand(SWEEPS[name], p)) for p in platforms) == cells
    assert tuple(len(contenders(SWEEPS[name], p)) for p in platforms) == headline


def test_a_cpu_with_bfloat16_units_races_mixed_bfloat16_in_the_default_sweep() -> None:
    """The plain loop and 4 accumulation steps in mixed bfloat16 join each model's contenders on a
    CPU whose flags show bfloat16 units; not elsewhere, and not in the GPU plan."""
    amx = Platform(cpu_bf16=("amx_bf16", "avx512_bf16"))
    raced = [c for c in expand(DEFAULT, amx) if c.id in contenders(DEFAULT, amx)]
    bf16 = [(c.model, c.accum_steps) for c in raced if c.precision == "mixed_bfloat16"]
    assert bf16 == [("cnn", 1), ("cnn", 4), ("dense", 1), ("dense", 4)] or sorted(bf16) == sorted(
        [("cnn", 1), ("cnn", 4), ("dense", 1), ("dense", 4)]
    )
    assert len(raced) == len(contenders(DEFAULT, CPU)) + 4
    assert not any(c.precision == "mixed_bfloat16" for c in expand(DEFAULT, CPU))
    gpu_bf16 = Platform("gpu", 1, gpu_memory_mib=81_559, cpu_bf16=("amx_bf16",))
    assert contenders(DEFAULT, gpu_bf16) == contenders(DEFAULT, ONE_GPU)


def test_every_gpu_sweep_cell_has_its_xla_twin() -> None:
    cells = expand(get_sweep("gpu"), CPU)
    ids = {c.id for c in cells}
    flipped = {dataclasses.replace(c, xla="on" if c.xla == "off" else "off").id for c in cells}
    assert flipped == ids


def test_the_default_sweep_says_which_strategies_it_runs_at_a_bigger_batch() -> None:
    # it said "mirrored at batch 256" while default ran at batch 256 too
    cells = expand(DEFAULT, CPU)
    for batch in {c.batch for c in cells} - {64}:
        strategies = dict.fromkeys(c.strategy for c in cells if c.batch == batch)
        assert f"{' and '.join(strategies)} at batch {batch}" in DEFAULT.description, batch
