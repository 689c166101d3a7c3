"""Combinations TensorFlow cannot run correctly here: a registry of pure rules, each a function
``(Cell, Platform) -> reason or None``. An unsupported cell is kept and reported with its reason."""

from __future__ import annotations

from collections.abc import Callable

from harness.spec.cell import Cell
from harness.spec.frameworks import NONE, framework
from harness.spec.models import MODELS
from harness.spec.ports import OPEN_PORTS_FLAG
from harness.spec.protocol import MAX_LOGICAL_GPUS, Platform

Rule = Callable[[Cell, Platform], "str | None"]


def _too_many_devices(cell: Cell, platform: Platform) -> str | None:
    """More replicas than the machine offers a process; or, for local multi-worker GPU cells, whose
    every training task gets its own ``replicas`` GPUs, more GPUs than the host has (a task would get
    GPU indices that do not exist and fall back to the CPU)."""
    if cell.replicas > platform.max_replicas:
        mig = " as MIG instances, of which a process sees one" if platform.mig else ""
        split = f", up to {MAX_LOGICAL_GPUS} logical GPUs each" if platform.gpu_memory_mib and not mig else ""
        what = (
            f"{platform.gpu_count} GPU(s){mig}{split}"
            if platform.device_kind == "gpu"
            else f"{platform.cpu_devices} logical CPU devices (raise with --cpu-devices)"
        )
        return f"needs {cell.replicas} replicas; this machine offers {what}"
    if platform.device_kind != "gpu" or not platform.shared_host or not cell.kind.multi_worker:
        return None
    training = sum(1 for t in cell.tasks if t.type in cell.kind.training_tasks)
    need = cell.replicas * training
    if need > platform.gpu_count:
        return (
            f"needs {need} GPUs ({training} local workers x {cell.replicas} replicas, each worker "
            f"its own); this machine offers {platform.gpu_count}"
        )
    return None


def _servers_on_every_interface(cell: Cell, platform: Platform) -> str | None:
    """A local cluster's tasks (every one a TensorFlow server) where the machine cannot keep their
    ports off the network and the user did not accept open ports (:mod:`harness.spec.ports`)."""
    if not platform.shared_host or cell.processes < 2 or platform.port_scope.runs:
        return None
    return (
        "not run: its TensorFlow servers would listen on every interface of this machine without "
        "authentication, as it cannot give them a network namespace of their own (python -m harness "
        f"doctor says why); {OPEN_PORTS_FLAG} runs it anyway"
    )


def _cross_device_ops(cell: Cell, platform: Platform) -> str | None:
    """A cross-device op that fails here: NCCL on a CPU or between logical GPUs of one GPU,
    hierarchical copy on an odd replica count."""
    if cell.cross_device_ops == "nccl" and platform.device_kind == "cpu":
        return (
            "NcclAllReduce has no CPU kernel: the first all-reduce fails with "
            "\"No OpKernel was registered to support Op 'NcclAllReduce'\""
        )
    if cell.cross_device_ops == "nccl" and platform.logical_gpus(cell.replicas) is not None:
        return (
            "NcclAllReduce between logical GPUs of one GPU fails inside a tf.function "
            "('InternalError: Graph execution error'; doctor's probe on an H200, 2 logical GPUs, "
            "2026-11-26): NCCL takes one GPU per rank; auto, hierarchical_copy and "
            "reduction_to_one_device gave right sums there"
        )
    if cell.cross_device_ops == "hierarchical_copy" and cell.replicas > 1 and cell.replicas % 2:
        return (
            f"HierarchicalCopyAllReduce returns wrong sums with an odd replica count "
            f"({cell.replicas}): it drops the last replica (all-reduce of 1+2+3 gives 3)"
        )
    return None


def _strong_batch_divides(cell: Cell, platform: Platform) -> str | None:
    if cell.scaling == "strong" and cell.batch % cell.devices:
        return f"strong scaling: global batch {cell.batch} does not divide over {cell.devices} replicas"
    return None


def _fit_collective_multi_step(cell: Cell, platform: Platform) -> str | None:
    """MirroredStrategy's default cross-device op under fit with several steps per execution
    (``cross_device_ops`` is ``none`` for a strategy whose descriptor has no such option axis)."""
    if (
        cell.loop == "fit"
        and cell.cross_device_ops == "auto"
        and cell.replicas > 1
        and cell.steps_per_execution > 1
    ):
        return (
            "Keras fit with steps_per_execution > 1 runs each step under a tf.cond inside a "
            "while loop; MirroredStrategy's collective all-reduce there fails (\"You must feed a "
            'value for placeholder tensor ...cond/Placeholder"): use steps_per_execution 1 or '
            "another cross-device op"
        )
    return None


def _multi_worker_cpu_one_device(cell: Cell, platform: Platform) -> str | None:
    if cell.kind.multi_worker and platform.device_kind == "cpu" and cell.replicas > 1:
        return (
            f"a CPU worker of {cell.strategy} uses exactly one device (logical CPU devices are "
            "ignored): use replicas 1 and more workers"
        )
    return None


def _loop_unsupported(cell: Cell, platform: Platform) -> str | None:
    """The strategy's own word on the loop (e.g. Keras 3 fit under the multi-worker strategies)."""
    return cell.kind.unsupported_loops.get(cell.loop)


def _precision_unsupported(cell: Cell, platform: Platform) -> str | None:
    """The strategy's own word on the precision (e.g. central storage with mixed_float16)."""
    return cell.kind.unsupported_precisions.get(cell.precision)


def _nccl_communication_on_cpu(cell: Cell, platform: Platform) -> str | None:
    if cell.communication == "nccl" and platform.device_kind == "cpu":
        return "NCCL collectives need GPUs"
    return None


def _mnist_mismatch(cell: Cell, platform: Platform) -> str | None:
    """The real MNIST file feeds only the models that take 28x28x1 images of 10 classes, trained
    on its class ids."""
    info = MODELS.get(cell.model)  # a user's model: its worker finds out
    if cell.data == "mnist" and info is not None and not info.mnist_shaped:
        return (
            f"MNIST is 28x28x1 images of 10 classes; {cell.model} takes {info.input_shape} {info.input_kind}"
        )
    if cell.data == "mnist" and cell.loss not in ("auto", "sparse_categorical_crossentropy"):
        return f"MNIST's labels are class ids, for sparse categorical cross-entropy, not {cell.loss}"
    return None


def _tenant_framework(cell: Cell, platform: Platform) -> str | None:
    """A co-tenant from another framework: installed, written for the model, beside one TensorFlow
    process on synthetic data (it makes its own)."""
    if cell.tenant_framework == NONE:
        return None
    f = framework(cell.tenant_framework)
    if f.name not in platform.frameworks:
        return (
            f"{f.label} is not installed here, so it cannot be the co-tenant: "
            f"pip install -e '.[{f.extra}]' (or pip install {f.module})"
        )
    if cell.model not in f.models:
        return f"the {f.label} co-tenant is written for {', '.join(f.models)}, not {cell.model}"
    if cell.tenants > 1:
        return f"a {f.label} co-tenant trains beside one TensorFlow process (tenants 1), not {cell.tenants}"
    if cell.data != "synthetic":
        return (
            f"the {f.label} co-tenant trains on synthetic data; the TensorFlow side must too, not {cell.data}"
        )
    return None


XLA_KNOWN_ISSUE = "https://www.tensorflow.org/xla/known_issues#tfvariable_on_a_different_device"


def _xla(cell: Cell, platform: Platform) -> str | None:
    """XLA (``--jit-compile on``) where TensorFlow 2.21 and Keras 3.15 cannot compile the step (each
    measured, 2026-11-26): XLA compiles a replica's step for one device and cannot reach a variable
    held on another, its CPU backend has no collectives (both on a CPU), and under MirroredStrategy
    on GPUs Keras's optimizer calls merge_call inside the compiled step (an H200)."""
    if not cell.jit_compile:
        return None
    if cell.kind.ps_tasks:
        return (
            "XLA cannot compile a step whose variables live on the parameter servers: it fails with "
            f"'Trying to access resource ... located in device' another task's ({XLA_KNOWN_ISSUE})"
        )
    if platform.device_kind == "gpu" and cell.kind.option_axis == "cross_device_ops":
        return (
            "XLA with MirroredStrategy on GPUs: Keras's optimizer updates its iteration counter with a "
            "merge_call inside the XLA-compiled replica step, which fails ('RuntimeError: `merge_call` "
            "called while defining a new graph or a tf.function'; measured on an H200 with 1 and 2 "
            "replicas, 2026-11-26; https://github.com/keras-team/keras/issues/17187)"
        )
    if platform.device_kind != "cpu" or cell.devices == 1:
        return None
    if cell.kind.option_axis == "cross_device_ops":
        return (
            "XLA on logical CPU devices compiles every replica's step for CPU:0, which cannot reach "
            "replica 1's mirrored variables: 'Trying to access resource ... located in device CPU:1 "
            f"from device CPU:0' ({XLA_KNOWN_ISSUE}); on GPUs each replica compiles for its own"
        )
    if cell.kind.option_axis == "communication":
        return (
            "XLA's CPU backend has no collectives: the workers' all-reduce fails with 'Collectives "
            "are not yet implemented' (UnimplementedError)"
        )
    return None


UNSUPPORTED_RULES: tuple[Rule, ...] = (
    _tenant_framework,
    _mnist_mismatch,
    _too_many_devices,
    _servers_on_every_interface,
    _cross_device_ops,
    _precision_unsupported,
    _strong_batch_divides,
    _fit_collective_multi_step,
    _multi_worker_cpu_one_device,
    _xla,
    _loop_unsupported,
    _nccl_communication_on_cpu,
)


def unsupported_reason(cell: Cell, platform: Platform) -> str | None:
    """Why TensorFlow cannot run ``cell`` correctly on ``platform``, or None if it can."""
    for rule in UNSUPPORTED_RULES:
        reason = rule(cell, platform)
        if reason:
            return reason
    return None
