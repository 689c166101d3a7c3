"""The cell selection that ``run``, ``list`` and ``verify`` share: the axis, protocol, device and
cluster flags (and ``--machine``, the name of the machine, for the commands that write rows:
``run``, ``ab``, ``nightly``, ``bisect``), and :func:`select`, which turns them into validated cells
before any expensive work (a bad value is a HarnessError naming it and the accepted ones)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from harness.commands.paths import check_writable
from harness.commands.user_models import resolve_model
from harness.contract.job import WorkerOptions
from harness.errors import HarnessError
from harness.launch.cells.cluster import CLUSTER_CHOICES, ClusterConfig, read_tf_config
from harness.launch.nodes.real_cluster import resolve_slurm
from harness.launch.sweep.run_params import Work
from harness.launch.system import isolation
from harness.launch.system.platform import DEVICE_CHOICES, HostMachine, detect_platform, this_machine
from harness.mnist import load_mnist
from harness.results.collectives import topology_label
from harness.spec.axes import AXES, REPLICAS_TO_DEVICES, REPLICAS_TO_MAX
from harness.spec.cell import Cell
from harness.spec.collectives import DEFAULT_MAX_BYTES, payloads
from harness.spec.ports import OPEN_PORTS_FLAG, port_scope
from harness.spec.protocol import Platform, Protocol, settings_rows
from harness.spec.rules import unsupported_reason
from harness.spec.sweep import Sweep, contenders, expand
from harness.spec.sweeps import SWEEPS, collectives_sweep, get_sweep

PROTOCOL_FLAGS = {
    "repeats": (int, "timed windows per process"),
    "window_s": (float, "target seconds per timed window"),
    "warmup_windows": (int, "untimed windows before timing"),
    "min_window_steps": (int, "fewest optimizer steps in a window"),
    "cell_timeout_s": (float, "seconds a cell may take before its worker is stopped"),
    "rendezvous_timeout_s": (float, "seconds for every worker of a multi-worker cell to join"),
    "seed": (int, "seed of weights and data"),
    "processes": (
        int,
        (
            "fewest instances (fresh processes) of each group measured in turns; "
            "with --cluster tf_config|slurm: passes over the cells, as the budget allows"
        ),
    ),
    "max_processes": (int, "most instances of a group measured in turns"),
    "unstable_cv": (
        float,
        (
            "between-process coefficient of variation above which a cell is flagged "
            "unstable (in turns: and gets more instances)"
        ),
    ),
    "turn_s": (float, "seconds of one turn: a timed window with the whole machine"),
    "blocks": (int, "blocks of turns per group instance (each member twice per block)"),
    "budget_min": (
        float,
        (
            "minutes the run may spend: every group gets --processes instances, the rest "
            "goes to the least decided ratios"
        ),
    ),
    "max_live": (int, "most live processes in one group (0: from the machine's memory)"),
    "worker_memory_gib": (
        float,
        (
            "cap on each worker's memory, GiB (RLIMIT_DATA): past it a cell's row says which tensor "
            "did not fit instead of the kernel killing the worker (0: no cap)"
        ),
    ),
}


def _axis_help(axis: Any) -> str:
    accepted = ", ".join(axis.choices) if axis.choices else axis.accepted().removeprefix("expected ")
    extra = " Comma list." + (
        f" {REPLICAS_TO_MAX!r} = 1 up to the machine's devices (logical GPUs included), "
        f"{REPLICAS_TO_DEVICES!r} = 1, 2, 4, ... whole GPUs up to its own count."
        if axis.name == "replicas"
        else ""
    )
    return f"{axis.help}. Accepted: {accepted} Default: {axis.default} (or the sweep's).{extra}"


MACHINE_NAME_MAX = 80
"""The most characters of a ``--machine`` name."""


def check_machine_name(name: str) -> str:
    """``--machine NAME`` checked: 1 to :data:`MACHINE_NAME_MAX` printable characters, not only
    spaces (a HarnessError naming it otherwise)."""
    if not (
        isinstance(name, str) and 1 <= len(name) <= MACHINE_NAME_MAX and name.isprintable() and name.strip()
    ):
        raise HarnessError(
            f"Received --machine {name!r}; expected a name of 1 to {MACHINE_NAME_MAX} printable "
            "characters, not only spaces (e.g. 'lab-h100-1')."
        )
    return name


def add_selection_args(
    parser: argparse.ArgumentParser,
    sweep_default: str = "default; axes given alone select only them",
    writes_rows: bool = False,
    budget: tuple[float, str] | None = None,
) -> None:
    """The flags that choose cells (selection), time them (protocol) and describe the machine,
    each set a group of ``--help``; ``sweep_default``: what this command measures without
    ``--sweep``; ``writes_rows``: the command stores rows (``--machine`` names the machine);
    ``budget``: the command's own ``--budget-min`` default and help, not the sweep's."""
    p = parser.add_argument_group("selection", "which cells: a named sweep, narrowed by axes")
    sweeps = ", ".join(f"{n} ({s.description})" for n, s in SWEEPS.items())
    p.add_argument("--sweep", default=None, help=f"named sweep: {sweeps}. Default: {sweep_default}")
    for axis in AXES:
        p.add_argument(axis.flag, dest=axis.name, default=None, metavar="LIST", help=_axis_help(axis))
    p = parser.add_argument_group("protocol", "how each cell is timed")
    own = {"budget_min": budget} if budget else {}
    for name, (kind, text) in PROTOCOL_FLAGS.items():
        default, text = own.get(name, (None, text))
        shown = "the sweep's" if default is None else f"{default:g}"
        flag = "--" + name.replace("_", "-")
        p.add_argument(flag, dest=name, type=kind, default=default, help=f"{text} (default: {shown})")
    _add_switches(p)
    _add_machine(
        parser.add_argument_group("machine", "the devices planned for, and the cluster"), writes_rows
    )


def _add_switches(p: Any) -> None:
    """The protocol's flags besides :data:`PROTOCOL_FLAGS`, each None unless given (the sweep's)."""
    p.add_argument(
        "--no-peak",
        dest="peak",
        action="store_false",
        default=None,
        help="skip the matmul-peak processes (no mfu; saves a few seconds per pass)",
    )
    p.add_argument(
        "--breakdown",
        dest="breakdown",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="time the parts of an update (compute, all-reduce, input, dispatch) of each cell after "
        "the turns, in one more process per cell alone on the machine (its throughput in no figure), "
        "or of none (--no-breakdown); a few seconds per cell (207 of the default sweep's 860 s on 2 "
        "cores, which therefore times only each model's leader and closest rival). Default: the "
        "sweep's; on for cells chosen by axis flags alone",
    )
    p.add_argument(
        "--no-fork",
        dest="fork",
        action="store_false",
        default=None,
        help="start every worker as a fresh interpreter instead of forking it from a server that "
        "has imported TensorFlow (about 3 s of CPU more per process; for checking that forking "
        "changes no figure)",
    )
    p.add_argument(
        "--busy-ok",
        dest="busy_ok",
        action="store_true",
        default=None,
        help="go on when another program disturbs more than half of the run's blocks (by default "
        "the run stops at once, names the program and keeps every row measured; --resume goes on)",
    )
    p.add_argument(
        "--max-bytes",
        type=int,
        default=None,
        help="--sweep collectives: the largest all-reduce of the size sweep, bytes per "
        f"participant (4 KiB to 256 MiB, powers of 4). Default: {DEFAULT_MAX_BYTES}",
    )


def _add_machine(p: Any, writes_rows: bool) -> None:
    """The flags that describe the machine and the cluster; ``--machine`` where the command writes rows."""
    p.add_argument(
        "--device",
        default="auto",
        choices=DEVICE_CHOICES,
        help="plan for GPUs (if nvidia-smi lists any) or CPU. Default: auto",
    )
    p.add_argument(
        "--cpu-devices",
        type=int,
        default=2,
        help="logical CPU devices available as replicas on a CPU-only machine. Default: 2",
    )
    p.add_argument(
        "--mnist-path",
        default=None,
        help="mnist.npz for --data mnist. Default: Keras's cache, ~/.keras/datasets/mnist.npz",
    )
    p.add_argument(
        OPEN_PORTS_FLAG,
        dest="open_ports",
        action="store_true",
        default=False,
        help="run local multi-worker and parameter-server cells even where this machine cannot give "
        "them a network namespace of their own (the doctor command says whether it can): their "
        "TensorFlow servers then listen on every interface without authentication while they run, "
        "and whoever reaches those ports can run code in them. Without it such cells become rows "
        "that say so. Real clusters (--cluster tf_config|slurm) belong on a trusted network",
    )
    p.add_argument(
        "--cluster",
        default="local",
        choices=CLUSTER_CHOICES,
        help="local: the harness starts every process of a multi-worker cell on this "
        "machine. tf_config: this process is one task of a cluster the scheduler "
        "started, each task with its own TF_CONFIG; slurm: the same, the cluster "
        "built by TensorFlow's SlurmClusterResolver (with --ps P: a chief, P ps and "
        "the rest workers). Every task runs the same command; the cluster fixes "
        "--strategy, --workers and --ps; the chief drives the others (its run lease), "
        "holds --budget-min, can --resume, and alone writes results. Default: local",
    )
    if writes_rows:
        p.add_argument(
            "--machine",
            dest="machine_name",
            default=None,
            metavar="NAME",
            help="the machine's name on every row (the machine column; 1 to "
            f"{MACHINE_NAME_MAX} printable characters): runs of one name are compared as one "
            "machine. Its facts (CPU model, flags, cores, cgroup CPU quota, caches, memory, "
            "GPUs) are recorded with it either way. Default: the CPU model and usable cores (or "
            "the GPUs) and a 6-hex id of the facts, e.g. 'AMD EPYC 2 cores 8c4add'",
        )


@dataclasses.dataclass(frozen=True)
class Selection:
    """The validated selection of cells to run, and how to time them."""

    sweep: Sweep
    protocol: Protocol
    platform: Platform
    cells: list[Cell]
    mnist_path: str | None = None
    cluster: ClusterConfig | None = None
    """This process's cluster with --cluster tf_config|slurm; None for local runs."""
    max_bytes: int = DEFAULT_MAX_BYTES
    """--sweep collectives: the largest size of the size sweep (bytes per participant)."""
    contenders: tuple[str, ...] = ()
    """The ids of the sweep's headline cells (:func:`harness.spec.sweep.contenders`)."""
    machine: HostMachine | None = None
    """The name and facts every row carries (commands that write rows); None for the others."""

    def work(self) -> Work:
        """What the selection measures, as :mod:`harness.launch` takes it."""
        return Work(
            tuple(self.cells), self.protocol, self.platform, self.mnist_path, self.contenders, self.machine
        )

    def worker_options(self, log_dir: Path) -> WorkerOptions:
        """The options every worker process of this selection gets, logs under ``log_dir``."""
        return WorkerOptions.of(self.protocol, self.platform, log_dir, self.mnist_path)


def select(args: argparse.Namespace) -> Selection:
    """Resolve sweep, axis overrides, protocol, platform and (commands that write rows) the
    machine's name and facts; HarnessError on bad input."""
    writes_rows = hasattr(args, "machine_name")
    name = check_machine_name(args.machine_name) if getattr(args, "machine_name", None) is not None else None
    if getattr(args, "model", None):  # a user's FILE.py:function, checked and pinned
        args.model = ",".join(resolve_model(m.strip()) for m in args.model.split(",") if m.strip())
    overrides = {a.name: a.parse(getattr(args, a.name)) for a in AXES if getattr(args, a.name) is not None}
    sweep = get_sweep(args.sweep or ("equivalence" if args.command == "verify" else "default"))
    if args.sweep is None and overrides:  # the default sweep's protocol, with the step breakdown
        protocol = dataclasses.replace(sweep.protocol, breakdown=True)
        sweep = Sweep("custom", "axes from the command line", protocol=protocol)
    max_bytes = _max_bytes(args, sweep)
    if sweep.kind == "collectives":  # --replicas sizes mirrored, --workers multi_worker_mirrored
        sweep = collectives_sweep(overrides.pop("replicas", (2, 3, 4)), overrides.pop("workers", (2, 3, 4)))
        if args.cluster != "local":
            raise HarnessError(
                f"Received --cluster {args.cluster} with --sweep collectives; "
                "expected local (collectives start their own local workers)."
            )
    platform = detect_platform(args.device, args.cpu_devices)
    cluster = _cluster(args.cluster, overrides, platform)
    if cluster is not None:  # each task has its own host's GPUs
        platform = dataclasses.replace(platform, shared_host=False)
        overrides.update(strategy=(cluster.strategy,), workers=(cluster.workers,), ps=(max(cluster.ps, 1),))
    sweep = sweep.with_axes(overrides)
    # --no-peak, --no-fork (False) and --busy-ok (True) default to None: given, they change the protocol
    flags = (*PROTOCOL_FLAGS, "peak", "fork", "busy_ok")
    changes = {k: v for k in flags if (v := getattr(args, k, None)) is not None}
    if getattr(args, "breakdown", None) is not None:  # --no-breakdown: not even the answer's cells
        changes["breakdown"] = changes["breakdown_named"] = args.breakdown
    if "processes" in changes and "max_processes" not in changes:  # --processes alone raises the cap
        changes["max_processes"] = max(changes["processes"], sweep.protocol.max_processes)
    protocol = dataclasses.replace(sweep.protocol, **changes)
    if "mnist" in sweep.values()["data"]:
        load_mnist(args.mnist_path)  # a missing or malformed file stops here, before any work
    if getattr(args, "results", None) is not None:  # run, ab, nightly; a dry run leaves no folder
        check_writable(Path(args.results), "--results", keep=not getattr(args, "dry_run", False))
    cells = expand(sweep, platform)
    if cluster is None and any(c.processes > 1 for c in cells):  # before the first such process
        platform = with_port_scope(platform, getattr(args, "open_ports", False))
    return Selection(
        sweep,
        protocol,
        platform,
        cells,
        args.mnist_path,
        cluster,
        max_bytes,
        contenders(sweep, platform),
        this_machine(name) if writes_rows else None,  # its facts read once every flag is checked
    )


def with_port_scope(platform: Platform, open_ports: bool) -> Platform:
    """``platform`` with its local clusters' port scope (:mod:`harness.spec.ports`): this machine
    tried once; where it allows no namespace, one line on stderr says what runs and the risk."""
    found = isolation.check()
    scope = port_scope(found.works, open_ports)
    if not scope.isolated:
        print(f"warning: {scope.words} ({found.detail})", file=sys.stderr, flush=True)
    return dataclasses.replace(platform, ports=scope.name)


def _max_bytes(args: argparse.Namespace, sweep: Sweep) -> int:
    """--max-bytes, checked (only --sweep collectives takes it)."""
    given = getattr(args, "max_bytes", None)
    if given is None:
        return DEFAULT_MAX_BYTES
    if sweep.kind != "collectives":
        raise HarnessError(
            f"Received --max-bytes={given} with --sweep {sweep.name}; expected it "
            "only with --sweep collectives."
        )
    payloads(given)  # HarnessError below the smallest size
    return int(given)


def resumed_cluster(args: argparse.Namespace) -> ClusterConfig | None:
    """``run --resume`` on a real cluster: this process's cluster from ``--cluster`` and ``--ps``
    alone (the journal, which only the chief reads, holds the rest)."""
    overrides = {a.name: a.parse(args.ps) for a in AXES if a.name == "ps" and args.ps is not None}
    return _cluster(args.cluster, overrides, detect_platform())


def _cluster(kind: str, overrides: dict[str, tuple[Any, ...]], platform: Platform) -> ClusterConfig | None:
    """This process's cluster (None for local runs); HarnessError when the axes given contradict it."""
    if kind == "local":
        return None
    ps = overrides.get("ps", (0,))
    if kind == "slurm" and len(ps) != 1:
        raise HarnessError(
            f"Received --ps={','.join(map(str, ps))} with --cluster slurm; expected one "
            "value: the Slurm job step's ps tasks."
        )
    config = read_tf_config() if kind == "tf_config" else resolve_slurm(ps[0], platform.gpu_count)
    shape = {"strategy": (config.strategy,), "workers": (config.workers,)}
    if config.ps:
        shape["ps"] = (config.ps,)
    for name, value in shape.items():
        if name in overrides and overrides[name] != value:
            given = ",".join(map(str, overrides[name]))
            raise HarnessError(
                f"Received --{name}={given}, but this {kind} cluster ({config.workers} "
                f"worker(s), {config.ps} ps) runs only that; expected --{name} "
                f"{value[0]} or no --{name}."
            )
    return config


def platform_text(p: Platform) -> str:
    if p.device_kind == "gpu":
        return f"{p.gpu_count} GPU(s)"
    return f"CPU only, up to {p.cpu_devices} logical CPU devices as replicas"


def int_list(flag: str, text: str, minimum: int, maximum: int | None = None) -> list[int]:
    """A comma list of integers in ``minimum..maximum``, sorted and without repeats."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or any(v < minimum or (maximum is not None and v > maximum) for v in values):
        accepted = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise HarnessError(f"Received {flag}={text!r}; expected comma-separated integers {accepted}.")
    return sorted(set(values))


DRY_RUN_CELLS = 5
"""A dry run lists this many of the cells it would start first."""


def add_dry_run(p: argparse.ArgumentParser, would: str, selection: bool = True) -> None:
    """``--dry-run``: check everything the command checks before its first process, print what it
    would do, exit 0 (2 on bad input)."""
    what = "every flag and the selection" if selection else "every flag"
    slurm = " (with --cluster slurm the resolver process still places this task)" if selection else ""
    p.add_argument(
        "--dry-run",
        action="store_true",
        help=f"check {what} exactly as the command does before its first process, print "
        f"{would}, and exit 0 (2 on bad input) without starting a worker{slurm}",
    )


def how_it_measures(sel: Selection) -> list[str]:
    """The "how it measures" table: one aligned line per setting of ``sel``'s protocol a user sets
    or needs to understand (:data:`harness.spec.protocol.SETTINGS`): the words, the value with its
    unit, the flag that changes it; for a run in turns, or in passes (a real cluster, collectives)."""
    turns = sel.cluster is None and sel.sweep.kind != "collectives"
    rows = [("how it measures", "value", "flag"), *settings_rows(sel.protocol, turns)]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    return [
        f"{words.ljust(widths[0])}  {value.ljust(widths[1])}  {flag}".rstrip() for words, value, flag in rows
    ]


def dry_run_text(sel: Selection, head: str, include_unsupported: bool = False) -> str:
    """What a command would do with ``sel``: ``head``, how many cells run and how many are
    unsupported here, how it measures (:func:`how_it_measures`), the first :data:`DRY_RUN_CELLS`
    cells to start with their processes, and that nothing was started."""
    name = topology_label if sel.sweep.kind == "collectives" else (lambda c: c.id)
    planned = [(c, unsupported_reason(c, sel.platform)) for c in sel.cells]
    todo = [c for c, why in planned if why is None or include_unsupported]
    unsupported = sum(why is not None for _, why in planned)
    lines = [
        head,
        f"{len(planned)} cells in sweep {sel.sweep.name!r} on {platform_text(sel.platform)}: "
        f"{len(todo)} to start, {unsupported} unsupported here"
        + (" (started anyway)" if include_unsupported and unsupported else ""),
    ]
    lines += how_it_measures(sel)
    if todo:
        lines.append("first cells:")
        lines += [f"  {name(c)}  ({c.processes * c.tenants} process(es))" for c in todo[:DRY_RUN_CELLS]]
        if len(todo) > DRY_RUN_CELLS:
            lines.append(f"  ... and {len(todo) - DRY_RUN_CELLS} more")
    lines.append("dry run: nothing started.")
    return "\n".join(lines)


def refuse_tenant_framework(sel: Selection, command: str) -> Selection:
    """``sel`` unless a cell has a co-tenant from another framework, which only ``run`` measures
    (HarnessError naming the value)."""
    found = sorted({c.tenant_framework for c in sel.cells if c.tenant_framework != "none"})
    if found:
        raise HarnessError(
            f"Received --tenant-framework {','.join(found)} with {command}; expected none: a co-tenant "
            "from another framework is measured by `python -m harness run` (each side alone and "
            "together, in turns)."
        )
    return sel
