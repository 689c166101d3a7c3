"""Tests of harness.spec and harness.sweeps: axes, cells, expansion, unsupported rules. No TensorFlow."""

from __future__ import annotations

import dataclasses

import pytest

from harness.errors import HarnessError
from harness.spec import rules
from harness.spec.axes import (
    AXES,
    AXIS_BY_NAME,
    CROSS_DEVICE_OPS_NAMES,
    REPLICAS_TO_MAX,
    STRATEGY_NAMES,
)
from harness.spec.cell import Cell
from harness.spec.protocol import LogicalGpus, Platform, Protocol
from harness.spec.rules import unsupported_reason
from harness.spec.sweep import Sweep, contenders, expand, make_sweep
from harness.spec.sweeps import SWEEPS, get_sweep

CPU2 = Platform()  # cpu, 2 logical devices
GPU2 = Platform("gpu", 2)


# --------------------------------------------------------------------------------------------------
# Axis.parse / Axis.check
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,text,expected",
    [
        ("model", "cnn", ("cnn",)),
        ("model", "cnn, dense", ("cnn", "dense")),
        ("data", "synthetic,mnist", ("synthetic", "mnist")),
        ("strategy", ",".join(STRATEGY_NAMES), STRATEGY_NAMES),
        ("ps", "1,2", (1, 2)),
        ("cross_device_ops", "auto,nccl,hierarchical_copy,reduction_to_one_device", CROSS_DEVICE_OPS_NAMES),
        ("replicas", "1,2", (1, 2)),
        ("replicas", "1..max", (REPLICAS_TO_MAX,)),
        ("replicas", "max", (REPLICAS_TO_MAX,)),
        ("workers", "1", (1,)),
        ("batch", "32,64,256", (32, 64, 256)),
        ("accum_steps", "1,4", (1, 4)),
        ("loop", "ctl", ("ctl",)),
        ("steps_per_execution", "1,10", (1, 10)),
        ("precision", "float32,mixed_bfloat16,mixed_float16", ("float32", "mixed_bfloat16", "mixed_float16")),
        ("scaling", "weak,strong", ("weak", "strong")),
    ],
)
def test_axis_parse_good(name, text, expected):
    assert AXIS_BY_NAME[name].parse(text) == expected


@pytest.mark.parametrize(
    "name,text,bad,accepted",
    [
        ("model", "resnet", "resnet", ["cnn", "dense"]),
        ("model", "cnn,resnet", "resnet", ["cnn", "dense"]),
        ("data", "imagenet", "imagenet", ["synthetic", "mnist"]),
        ("strategy", "mirored", "mirored", ["default", "one_device", "mirrored", "central_storage"]),
        ("cross_device_ops", "ring", "ring", list(CROSS_DEVICE_OPS_NAMES)),
        ("loop", "keras", "keras", ["ctl"]),
        ("precision", "fp8", "fp8", ["float32", "mixed_bfloat16", "mixed_float16"]),
        ("scaling", "linear", "linear", ["weak", "strong"]),
        ("replicas", "0", "0", ["at least 1", REPLICAS_TO_MAX]),
        ("replicas", "two", "two", ["at least 1"]),
        ("workers", "0", "0", ["at least 1"]),
        ("communication", "grpc", "grpc", ["auto", "ring", "nccl"]),
        ("batch", "0", "0", ["at least 1"]),
        ("batch", "-8", "-8", ["at least 1"]),
        ("accum_steps", "0", "0", ["at least 1"]),
        ("steps_per_execution", "0", "0", ["at least 1"]),
    ],
)
def test_axis_parse_bad_names_value_and_choices(name, text, bad, accepted):
    axis = AXIS_BY_NAME[name]
    with pytest.raises(HarnessError) as info:
        axis.parse(text)
    msg = str(info.value)
    assert bad in msg
    assert axis.flag in msg
    for choice in accepted:
        assert choice in msg


@pytest.mark.parametrize("text", ["", ",", " , "])
def test_axis_parse_empty(text):
    with pytest.raises(HarnessError, match="at least one value"):
        AXIS_BY_NAME["model"].parse(text)


def test_axis_check_returns_value_or_raises():
    strategy = AXIS_BY_NAME["strategy"]
    assert strategy.check("mirrored") == "mirrored"
    with pytest.raises(HarnessError) as info:
        strategy.check("mirored")
    assert "'mirored'" in str(info.value) and "mirrored" in str(info.value).replace("'mirored'", "")
    batch = AXIS_BY_NAME["batch"]
    assert batch.check(1) == 1
    with pytest.raises(HarnessError, match="--batch=0"):
        batch.check(0)
    with pytest.raises(HarnessError):
        batch.check("64")  # strings are not integers, even numeric ones
    with pytest.raises(HarnessError):
        batch.check(REPLICAS_TO_MAX)  # the 1..max token belongs to the replicas axis only
    assert AXIS_BY_NAME["replicas"].check(REPLICAS_TO_MAX) == REPLICAS_TO_MAX


def test_axis_flags_and_defaults_build_a_cell():
    assert [a.flag for a in AXES] == [
        "--model",
        "--data",
        "--strategy",
        "--cross-device-ops",
        "--communication",
        "--replicas",
        "--workers",
        "--ps",
        "--batch",
        "--accum-steps",
        "--loop",
        "--steps-per-execution",
        "--precision",
        "--jit-compile",
        "--loss",
        "--scaling",
        "--tenants",
        "--tenant-framework",
        "--optimizer",
    ]
    # every axis default is accepted by its own check and matches the Cell field default
    defaults = {f.name: f.default for f in dataclasses.fields(Cell)}
    for axis in AXES:
        assert axis.check(axis.default) == axis.default
        assert defaults[axis.name] == axis.default
    assert {f.name for f in dataclasses.fields(Cell)} == {a.name for a in AXES}


# --------------------------------------------------------------------------------------------------
# Cell
# --------------------------------------------------------------------------------------------------


def test_cell_id_mirrored():
    cell = Cell(model="cnn", strategy="mirrored", cross_device_ops="hierarchical_copy", replicas=2, batch=64)
    assert cell.id == "cnn/mirrored[hierarchical_copy]/r2w1/b64/acc1/ctl/spe10/float32/synthetic/weak"


def test_cell_id_default_strategy_has_no_brackets():
    cell = Cell(
        model="dense",
        data="mnist",
        strategy="default",
        cross_device_ops="none",
        batch=256,
        steps_per_execution=5,
        precision="mixed_bfloat16",
    )
    assert cell.id == "dense/default/r1w1/b256/acc1/ctl/spe5/mixed_bfloat16/mnist/weak"
    # the dataclass defaults: mirrored on one replica, which makes no all-reduce
    assert Cell().id == "cnn/mirrored/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak"
    assert Cell(replicas=2).id == "cnn/mirrored[auto]/r2w1/b64/acc1/ctl/spe10/float32/synthetic/weak"


def test_cells_that_cannot_differ_are_one_cell():
    """One device makes no reduce: every cross-device op and communication is the same cell."""
    mirrored = {Cell(cross_device_ops=op).id for op in CROSS_DEVICE_OPS_NAMES}
    assert mirrored == {"cnn/mirrored/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak"}
    mwms = {Cell(strategy="multi_worker_mirrored", communication=c).id for c in ("auto", "ring", "nccl")}
    assert len(mwms) == 1 and "[" not in mwms.pop()
    assert len({Cell(replicas=2, cross_device_ops=op).id for op in CROSS_DEVICE_OPS_NAMES}) == 4
    assert (
        len({Cell(strategy="multi_worker_mirrored", workers=2, communication=c).id for c in ("auto", "ring")})
        == 2
    )
    sweep = make_sweep(
        "t",
        "t",
        strategy=("mirrored",),
        cross_device_ops=CROSS_DEVICE_OPS_NAMES,
        replicas=(1, 2),
        scaling=("weak", "strong"),
    )
    assert len(expand(sweep, CPU2)) == 1 + 4 * 2


def test_cell_id_strong_scaling_shows_global_batch():
    cell = Cell(replicas=2, batch=128, scaling="strong")
    assert cell.per_replica_batch == 64
    assert cell.id == "cnn/mirrored[auto]/r2w1/gb128/acc1/ctl/spe10/float32/synthetic/strong"


def test_cell_dict_round_trip():
    cell = Cell(model="dense", strategy="central_storage", cross_device_ops="none", replicas=2, batch=32)
    d = cell.to_dict()
    assert d["model"] == "dense" and d["replicas"] == 2 and d["cross_device_ops"] == "none"
    assert Cell.from_dict({**d, "extra": "ignored"}) == cell


@pytest.mark.parametrize(
    "replicas,batch,scaling,global_batch,per_replica",
    [
        (1, 64, "weak", 64, 64),
        (2, 64, "weak", 128, 64),
        (4, 32, "weak", 128, 32),
        (1, 64, "strong", 64, 64),
        (2, 64, "strong", 64, 32),
        (4, 256, "strong", 256, 64),
        (2, 65, "strong", 65, 32),  # does not divide: per-replica is the floor
    ],
)
def test_global_and_per_replica_batch(replicas, batch, scaling, global_batch, per_replica):
    cell = Cell(replicas=replicas, batch=batch, scaling=scaling)
    assert cell.devices == replicas
    assert cell.global_batch == global_batch
    assert cell.per_replica_batch == per_replica
    assert cell.topology == (1, replicas, 1)


# --------------------------------------------------------------------------------------------------
# expand
# --------------------------------------------------------------------------------------------------


def test_expand_default_axes_gives_one_cell():
    cells = expand(Sweep("one", "axes at their defaults"), CPU2)
    assert cells == [Cell()]


def test_expand_collapses_cross_device_ops_for_non_mirrored():
    sweep = make_sweep(
        "t",
        "t",
        strategy=STRATEGY_NAMES,
        cross_device_ops=CROSS_DEVICE_OPS_NAMES,
        replicas=(2,),
        workers=(2,),
    )
    cells = expand(sweep, CPU2)
    for cell in cells:
        if cell.strategy == "mirrored":
            assert cell.cross_device_ops in CROSS_DEVICE_OPS_NAMES
        else:
            assert cell.cross_device_ops == "none"
            assert ("[" in cell.id) == (cell.strategy == "multi_worker_mirrored")  # [communication]
    assert {c.replicas for c in cells if c.strategy == "mirrored"} == {2}
    mirrored = [c for c in cells if c.strategy == "mirrored"]
    assert sorted(c.cross_device_ops for c in mirrored) == sorted(CROSS_DEVICE_OPS_NAMES)
    # 4 mirrored variants + one each of default, one_device, central_storage, multi_worker_mirrored,
    # parameter_server
    assert len(cells) == 4 + 5


def test_expand_collapses_replicas_for_single_device_strategies():
    sweep = make_sweep("t", "t", strategy=("default", "one_device", "central_storage"), replicas=(1, 2))
    cells = expand(sweep, CPU2)
    by_strategy: dict[str, list[int]] = {}
    for cell in cells:
        by_strategy.setdefault(cell.strategy, []).append(cell.replicas)
    assert by_strategy == {"default": [1], "one_device": [1], "central_storage": [1, 2]}


def test_expand_collapses_scaling_to_weak_on_one_device():
    sweep = make_sweep(
        "t", "t", strategy=("default", "mirrored"), replicas=(1, 2), scaling=("weak", "strong")
    )
    cells = expand(sweep, CPU2)
    assert all(c.scaling == "weak" for c in cells if c.devices == 1)
    assert sorted((c.strategy, c.replicas, c.scaling) for c in cells) == [
        ("default", 1, "weak"),
        ("mirrored", 1, "weak"),
        ("mirrored", 2, "strong"),
        ("mirrored", 2, "weak"),
    ]


def test_expand_orders_by_topology_one_replica_first():
    sweep = make_sweep("t", "t", model=("cnn", "dense"), strategy=("mirrored", "default"), replicas=(2, 1))
    cells = expand(sweep, CPU2)
    replicas = [c.replicas for c in cells]
    assert replicas == sorted(replicas)
    assert replicas[0] == 1 and replicas[-1] == 2
    # within one topology the product order is kept (model varies slowest)
    ones = [c.id for c in cells if c.replicas == 1]
    assert ones == [
        "cnn/mirrored/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
        "cnn/default/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
        "dense/mirrored/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
        "dense/default/r1w1/b64/acc1/ctl/spe10/float32/synthetic/weak",
    ]
    # stable: the same sweep expands to the same list
    assert expand(sweep, CPU2) == cells


def test_expand_no_duplicate_ids():
    sweep = make_sweep(
        "t",
        "t",
        strategy=STRATEGY_NAMES,
        cross_device_ops=CROSS_DEVICE_OPS_NAMES,
        replicas=(1, 2, 1, REPLICAS_TO_MAX),
        scaling=("weak", "strong"),
        batch=(64, 64),
    )
    cells = expand(sweep, CPU2)
    ids = [c.id for c in cells]
    assert len(ids) == len(set(ids))
    assert len(cells) == len(set(cells))


@pytest.mark.parametrize(
    "platform,expected",
    [
        (Platform("cpu", 0, 1), [1]),
        (Platform("cpu", 0, 3), [1, 2, 3]),
        (Platform("gpu", 4), [1, 2, 3, 4]),
        (Platform("gpu", 8, 2), list(range(1, 9))),  # on a GPU host the GPUs count, not cpu_devices
    ],
)
def test_expand_replicas_to_max(platform, expected):
    sweep = make_sweep("t", "t", replicas=(REPLICAS_TO_MAX,))
    assert [c.replicas for c in expand(sweep, platform)] == expected


def test_platform_max_replicas():
    assert Platform().max_replicas == 2
    assert Platform("cpu", 0, 6).max_replicas == 6
    assert Platform("gpu", 3, 2).max_replicas == 3
    assert Platform("gpu", 3, 2, ("MIG-a", "MIG-b", "MIG-c"), mig=True).max_replicas == 1
    assert Platform("gpu", 1, gpu_memory_mib=81_559).max_replicas == 8  # logical GPUs, 8 a GPU


def test_replicas_above_the_gpu_count_plan_logical_gpus_with_a_share_of_the_memory():
    one = Platform("gpu", 1, gpu_memory_mib=80_000)
    assert one.logical_gpus(2) == LogicalGpus(per_gpu=2, memory_mib=36_000)  # 0.9 x 80,000 / 2
    assert one.logical_gpus(3) == LogicalGpus(3, 24_000) and one.logical_gpus(1) is None
    assert Platform("gpu", 2, gpu_memory_mib=80_000).logical_gpus(3) == LogicalGpus(2, 36_000)
    assert Platform("gpu", 2, gpu_memory_mib=80_000).logical_gpus(2) is None  # a GPU each
    assert Platform("gpu", 1).logical_gpus(2) is None  # memory unknown: never split
    assert Platform("cpu", 0, 4).logical_gpus(4) is None
    assert unsupported_reason(Cell(replicas=2), one) is None
    reason = unsupported_reason(Cell(replicas=2), Platform("gpu", 1))
    assert reason is not None and "needs 2 replicas" in reason and "1 GPU(s)" in reason
    reason = unsupported_reason(Cell(replicas=9), one)
    assert reason is not None and "up to 8 logical GPUs each" in reason


@pytest.mark.parametrize(
    "cell, gpus, shared, needs",
    [
        (
            Cell(strategy="multi_worker_mirrored", workers=2, replicas=2),
            2,
            True,
            "needs 4 GPUs (2 local workers x 2 replicas",
        ),
        (Cell(strategy="multi_worker_mirrored", workers=2, replicas=2), 4, True, None),
        (Cell(strategy="multi_worker_mirrored", workers=3), 2, True, "needs 3 GPUs"),
        (Cell(strategy="multi_worker_mirrored", workers=3), 2, False, None),  # a real cluster: own hosts
        (Cell(strategy="parameter_server", workers=2, ps=1), 2, True, None),  # ps and coordinator: no GPU
        (Cell(strategy="parameter_server", workers=3, ps=1), 2, True, "needs 3 GPUs"),
    ],
)
def test_local_workers_need_a_gpu_set_each(cell, gpus, shared, needs):
    reason = unsupported_reason(cell, Platform("gpu", gpus, shared_host=shared))
    assert reason == needs if needs is None else needs in reason
    if cell.replicas == 1:
        assert unsupported_reason(cell, Platform("cpu", 0, 2)) is None  # CPU workers share cores


def test_expand_keeps_strong_cells_with_different_global_batches():
    sweep = make_sweep("t", "t", replicas=(2,), batch=(65, 64), scaling=("strong",))
    cells = expand(sweep, CPU2)
    assert sorted(c.batch for c in cells) == [64, 65]


# --------------------------------------------------------------------------------------------------
# unsupported_reason
# --------------------------------------------------------------------------------------------------


def test_supported_cell_has_no_reason():
    assert unsupported_reason(Cell(), CPU2) is None
    assert unsupported_reason(Cell(replicas=2), CPU2) is None


def test_nccl_unsupported_on_cpu_only():
    cell = Cell(cross_device_ops="nccl", replicas=2)
    reason = unsupported_reason(cell, CPU2)
    assert reason is not None and "NcclAllReduce" in reason and "CPU" in reason
    assert unsupported_reason(cell, GPU2) is None


@pytest.mark.parametrize("replicas,ok", [(1, True), (2, True), (3, False), (4, True), (5, False)])
def test_hierarchical_copy_needs_even_replicas(replicas, ok):
    platform = Platform("gpu", 8)
    reason = unsupported_reason(Cell(cross_device_ops="hierarchical_copy", replicas=replicas), platform)
    if ok:
        assert reason is None
    else:
        assert reason is not None
        assert "wrong sums" in reason and f"({replicas})" in reason


def test_replicas_beyond_max_unsupported():
    reason = unsupported_reason(Cell(replicas=3), CPU2)
    assert reason is not None and "3 replicas" in reason and "2 logical CPU devices" in reason
    assert "--cpu-devices" in reason
    reason = unsupported_reason(Cell(replicas=4), GPU2)
    assert reason is not None and "4 replicas" in reason and "2 GPU(s)" in reason
    assert unsupported_reason(Cell(replicas=2), GPU2) is None


def test_strong_batch_must_divide():
    reason = unsupported_reason(Cell(replicas=2, batch=65, scaling="strong"), CPU2)
    assert reason is not None and "65" in reason and "2 replicas" in reason
    assert unsupported_reason(Cell(replicas=2, batch=64, scaling="strong"), CPU2) is None
    # weak scaling multiplies, so any batch is fine
    assert unsupported_reason(Cell(replicas=2, batch=65, scaling="weak"), CPU2) is None


def test_central_storage_mixed_float16_unsupported():
    cell = Cell(strategy="central_storage", cross_device_ops="none", precision="mixed_float16")
    reason = unsupported_reason(cell, GPU2)
    assert reason is not None and "CentralStorageStrategy" in reason and "mixed_float16" in reason
    assert unsupported_reason(dataclasses.replace(cell, precision="mixed_bfloat16"), GPU2) is None
    assert unsupported_reason(Cell(precision="mixed_float16"), GPU2) is None


def test_xla_is_an_axis_flagged_jit_compile_that_marks_the_id_and_the_step() -> None:
    (values,) = (a.parse("off,on") for a in AXES if a.name == "xla")
    assert values == ("off", "on") and AXIS_BY_NAME["xla"].flag == "--jit-compile"
    off, on = Cell(strategy="default"), Cell(strategy="default", xla="on")
    assert not off.jit_compile and on.jit_compile
    assert off.id.endswith("/float32/synthetic/weak") and on.id == off.id.replace(
        "/float32/", "/float32+xla/"
    )
    with pytest.raises(HarnessError, match=r"--jit-compile='auto'.*expected one of: off, on"):
        Cell(xla="auto")


def test_xla_where_tensorflow_cannot_compile_the_step_is_unsupported_with_the_reason() -> None:
    ps = unsupported_reason(Cell(strategy="parameter_server", workers=2, xla="on"), GPU2)
    assert ps is not None and "parameter servers" in ps and "known_issues" in ps
    mirrored = Cell(strategy="mirrored", replicas=2, xla="on")
    cpu = unsupported_reason(mirrored, CPU2)
    assert cpu is not None and "logical CPU devices" in cpu and "CPU:1" in cpu
    gpu = unsupported_reason(mirrored, GPU2)  # measured on an H200: merge_call in the compiled step
    assert gpu is not None and "merge_call" in gpu and "keras/issues/17187" in gpu
    one = unsupported_reason(Cell(strategy="mirrored", xla="on"), GPU2)
    assert one is not None and "merge_call" in one  # one replica too
    assert unsupported_reason(Cell(strategy="default", xla="on"), GPU2) is None
    workers = unsupported_reason(Cell(strategy="multi_worker_mirrored", workers=2, xla="on"), CPU2)
    assert workers is not None and "no collectives" in workers
    for fine in (Cell(strategy="default", xla="on"), Cell(strategy="central_storage", replicas=2, xla="on")):
        assert unsupported_reason(fine, CPU2) is None  # measured: these compile and train on CPU
    assert unsupported_reason(dataclasses.replace(mirrored, xla="off"), CPU2) is None


def test_nccl_between_logical_gpus_of_one_gpu_is_unsupported() -> None:
    one_gpu = Platform("gpu", 1, gpu_memory_mib=143_771)
    nccl = Cell(strategy="mirrored", replicas=2, cross_device_ops="nccl")
    why = unsupported_reason(nccl, one_gpu)
    assert why is not None and "logical GPUs" in why and "one GPU per rank" in why
    assert unsupported_reason(nccl, Platform("gpu", 2, gpu_memory_mib=143_771)) is None  # a GPU each
    assert unsupported_reason(dataclasses.replace(nccl, cross_device_ops="auto"), one_gpu) is None


def test_every_rule_returns_str_or_none():
    for rule in rules.UNSUPPORTED_RULES:
        assert rule(Cell(), CPU2) is None


# --------------------------------------------------------------------------------------------------
# Protocol, make_sweep, named sweeps
# --------------------------------------------------------------------------------------------------


def test_protocol_defaults_valid():
    p = Protocol()
    assert p.repeats >= 2 and p.window_s > 0


@pytest.mark.parametrize(
    "kwargs,flag,value",
    [
        ({"repeats": 1}, "--repeats", "1"),
        ({"window_s": 0}, "--window-s", "0"),
        ({"window_s": -0.5}, "--window-s", "-0.5"),
        ({"warmup_windows": -1}, "--warmup-windows", "-1"),
        ({"min_window_steps": 0}, "--min-window-steps", "0"),
        ({"cell_timeout_s": 0.0}, "--cell-timeout-s", "0.0"),
        ({"seed": -3}, "--seed", "-3"),
    ],
)
def test_protocol_rejects_bad_values(kwargs, flag, value):
    with pytest.raises(HarnessError) as info:
        Protocol(**kwargs)
    msg = str(info.value)
    assert f"{flag}={value}" in msg
    assert "expected" in msg


def test_protocol_repeats_message_says_why():
    with pytest.raises(HarnessError, match="at least 2"):
        Protocol(repeats=1)
    assert Protocol(repeats=2).repeats == 2


def test_make_sweep_rejects_unknown_axis():
    with pytest.raises(HarnessError) as info:
        make_sweep("t", "t", modle=("cnn",))
    msg = str(info.value)
    assert "'modle'" in msg and "model" in msg and "cross_device_ops" in msg


@pytest.mark.parametrize(
    "axes,bad",
    [
        ({"strategy": ("mirored",)}, "mirored"),
        ({"model": ("cnn", "resnet")}, "resnet"),
        ({"batch": (64, 0)}, "0"),
        ({"workers": (0,)}, "0"),
    ],
)
def test_make_sweep_rejects_bad_values(axes, bad):
    with pytest.raises(HarnessError) as info:
        make_sweep("t", "t", **axes)
    assert bad in str(info.value)


def test_make_sweep_and_with_axes():
    protocol = Protocol(repeats=3)
    sweep = make_sweep("t", "desc", protocol=protocol, model=("dense",), batch=[16, 32])
    assert sweep.name == "t" and sweep.description == "desc" and sweep.protocol == protocol
    values = sweep.values()
    assert values["model"] == ("dense",) and values["batch"] == (16, 32)
    assert values["strategy"] == ("mirrored",)  # unset axes take their default
    changed = sweep.with_axes({"batch": (8,), "precision": ("mixed_bfloat16",)})
    assert changed.values()["batch"] == (8,) and changed.values()["precision"] == ("mixed_bfloat16",)
    assert changed.values()["model"] == ("dense",)
    assert sweep.values()["batch"] == (16, 32)  # the original is unchanged
    assert make_sweep("d", "d").protocol == Protocol()


@pytest.mark.parametrize("name", sorted(SWEEPS))
@pytest.mark.parametrize("platform", [Platform(), Platform("gpu", 2), Platform("cpu", 0, 4)])
def test_named_sweeps_expand(name, platform):
    sweep = SWEEPS[name]
    assert sweep.name == name and get_sweep(name) is sweep
    cells = expand(sweep, platform)
    assert len(cells) > 0
    ids = [c.id for c in cells]
    assert len(ids) == len(set(ids))
    for cell in cells:  # every expanded cell is made of accepted axis values
        for axis in AXES:
            value = getattr(cell, axis.name)
            if value != axis.inapplicable:
                axis.check(value)


def test_the_gpu_sweep_varies_each_gpu_knob_alone_and_runs_on_one_gpu() -> None:
    from harness.spec.groups import Relation, comparisons

    one = Platform("gpu", 1, gpu_memory_mib=81_559)  # an H100
    cells = expand(get_sweep("gpu"), one)
    unsupported = [c for c in cells if unsupported_reason(c, one) is not None]
    assert len(cells) == 28  # mirrored with XLA: rows that say why (merge_call, measured on an H200)
    assert {(c.model, c.strategy, c.replicas, c.xla) for c in unsupported} == {
        (m, "mirrored", r, "on") for m in ("cnn", "dense") for r in (1, 2)
    }
    assert {c.model for c in cells} == {"cnn", "dense", "resnet50"}
    assert {(c.strategy, c.replicas) for c in cells} == {("default", 1), ("mirrored", 1), ("mirrored", 2)}
    assert {c.batch for c in cells} == {256, 4096} and {c.steps_per_execution for c in cells} == {1, 100}
    assert {c.precision for c in cells} == {"float32", "mixed_bfloat16"}
    xla = [c for c in comparisons(cells) if c.relation == Relation.XLA]
    assert len(xla) == len(cells) // 2  # every configuration measured with XLA off and on
    assert (
        get_sweep("gpu").protocol.budget_min < 10 and get_sweep("gpu").protocol.breakdown
    )  # profiled on a GPU


def test_get_sweep_unknown():
    with pytest.raises(HarnessError) as info:
        get_sweep("nope")
    msg = str(info.value)
    assert "'nope'" in msg
    for name in SWEEPS:
        assert name in msg


def test_default_sweep_coverage():
    cells = expand(SWEEPS["default"], Platform())
    assert {c.model for c in cells} == {"cnn", "dense"}  # the MNIST models; `models` has the rest
    assert {c.strategy for c in cells} == set(STRATEGY_NAMES)
    assert {(c.communication, c.workers) for c in cells if c.strategy == "multi_worker_mirrored"} == {
        ("none", 1),
        ("ring", 2),
    }  # one worker makes no all-reduce
    assert {c.cross_device_ops for c in cells if c.strategy == "mirrored" and c.replicas == 2} == set(
        CROSS_DEVICE_OPS_NAMES
    )
    assert {c.replicas for c in cells} == {1, 2}
    assert len({c.batch for c in cells}) == 2
    assert {c.loop for c in cells} == {"ctl", "fit"} and {c.accum_steps for c in cells} == {1, 4}
    assert {(c.model, c.strategy) for c in cells if c.tenants == 2} == {
        ("cnn", "default"),
        ("dense", "default"),
    }
    assert {(c.model, c.workers, c.ps) for c in cells if c.strategy == "parameter_server"} == {
        (m, w, 1) for m in ("cnn", "dense") for w in (1, 2)
    }
    # per model: 7 headline contenders; mirrored's 3 other ops on 2 replicas; multi_worker_mirrored
    # on 1 worker; parameter server on 1 and 2; one_device; default, mirrored x1, x2 at batch 256;
    # 2 tenants of default
    assert len(cells) == 2 * (7 + 3 + 1 + 2 + 1 + 3 + 1)
    heads = set(contenders(SWEEPS["default"], Platform()))
    assert len(heads) == 2 * 7 and all(c.tenants == 1 and c.batch == 64 for c in cells if c.id in heads)


def test_smoke_sweep_on_cpu_marks_nccl_only():
    cells = expand(SWEEPS["smoke"], Platform())
    unsupported = [c for c in cells if unsupported_reason(c, Platform())]
    assert unsupported and all(c.cross_device_ops == "nccl" for c in unsupported)
    assert len(cells) - len(unsupported) > 0


def test_scaling_sweep_covers_machine_replicas():
    cells = expand(SWEEPS["scaling"], Platform("gpu", 4))
    assert {c.replicas for c in cells} == {1, 2, 3, 4}
    assert {c.scaling for c in cells if c.replicas > 1} == {"weak", "strong"}
    assert {c.strategy for c in cells} == {"mirrored"}


def test_parameter_server_cell_id_batches_and_processes():
    cell = Cell(model="dense", strategy="parameter_server", workers=2, ps=1, batch=32, accum_steps=2)
    assert cell.id == "dense/parameter_server/r1w2p1/b32/acc2/ctl/spe10/float32/synthetic/weak"
    # each worker updates on its own: an update is one worker's replicas' examples
    assert cell.replicas_in_sync == 1 and cell.effective_batch == 64 and cell.global_batch == 64
    assert cell.processes == 4 and cell.devices == 2
    strong = Cell(strategy="parameter_server", workers=2, batch=64, scaling="strong")
    assert strong.per_replica_batch == 32 and strong.effective_batch == 32
    mwms = Cell(strategy="multi_worker_mirrored", workers=2, ps=3)
    assert mwms.ps == 0 and mwms.processes == 2 and "p" not in mwms.id.split("/")[2]
    assert Cell(strategy="mirrored", ps=2).ps == 0


def test_cell_from_older_dict_without_ps_takes_defaults():
    d = Cell(strategy="mirrored").to_dict()
    del d["ps"]
    assert Cell.from_dict(d) == Cell(strategy="mirrored")


def test_multi_worker_fit_unsupported_with_its_own_reason():
    cpu = Platform()
    ps = unsupported_reason(Cell(strategy="parameter_server", workers=2, loop="fit"), cpu)
    mwms = unsupported_reason(Cell(strategy="multi_worker_mirrored", workers=2, loop="fit"), cpu)
    assert "keras#18624" in ps and "keras#20585" in mwms
    assert unsupported_reason(Cell(strategy="parameter_server", workers=2), cpu) is None
    two = unsupported_reason(Cell(strategy="parameter_server", workers=2, replicas=2), cpu)
    assert "parameter_server uses exactly one device" in two
    assert unsupported_reason(Cell(strategy="parameter_server", replicas=2), Platform("gpu", 2)) is None


def test_the_loss_is_chosen_from_the_output_and_shows_in_the_id_only_when_asked() -> None:
    from harness.spec.models import chosen_loss
    from harness.spec.rules import unsupported_reason

    assert chosen_loss("auto", 1) == "binary_crossentropy"
    assert chosen_loss("auto", 10) == "sparse_categorical_crossentropy" and chosen_loss("mse", 10) == "mse"
    assert Cell().id.startswith("cnn/") and Cell(loss="mse").id.startswith("cnn+mse/")
    assert "class ids" in (unsupported_reason(Cell(data="mnist", loss="mse"), Platform()) or "")
    with pytest.raises(HarnessError, match="--loss='hinge'"):
        Cell(loss="hinge")


def test_a_user_model_stays_a_model_ref_through_the_cell_and_its_job_file() -> None:
    import copy
    import json
    import pickle

    from harness.spec.models import ModelRef

    ref = ModelRef("/src/zoo.py", "mlp", "0123456789ab")
    assert ref == "/src/zoo.py:mlp@0123456789ab" and ref.label == "zoo.mlp@01234567"
    cell = Cell(model=str(ref), strategy="default")  # as the command line and a job file give it
    assert isinstance(cell.model, ModelRef) and cell.model.function == "mlp"
    assert cell.id.startswith("zoo.mlp@01234567/default/")
    again = Cell.from_dict(json.loads(json.dumps(cell.to_dict())))
    assert again == cell and isinstance(again.model, ModelRef)
    for copied in (pickle.loads(pickle.dumps(ref)), copy.deepcopy(ref)):
        assert isinstance(copied, ModelRef) and copied.digest == ref.digest and copied == ref
    assert not isinstance(Cell(model="cnn").model, ModelRef)
    with pytest.raises(AttributeError):
        ref.digest = "0" * 12
