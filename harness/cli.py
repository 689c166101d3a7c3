"""``python -m harness run|list|verify|report|compare``. Validates everything before any expensive
work; never imports TensorFlow (workers do)."""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.cluster import CLUSTER_CHOICES, ClusterConfig, read_tf_config, resolve_slurm
from harness.data import DataError, load_mnist
from harness.launch import DEVICE_CHOICES, detect_platform
from harness.gate import GatePolicy
from harness.spec import AXES, REPLICAS_TO_MAX, Cell, Platform, Protocol, SpecError, Sweep, expand
from harness.sweeps import SWEEPS, get_sweep

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

PROTOCOL_FLAGS = {
    "repeats": (int, "timed windows per cell"),
    "window_s": (float, "target seconds per timed window"),
    "warmup_windows": (int, "untimed windows before timing"),
    "min_window_steps": (int, "fewest optimizer steps in a window"),
    "cell_timeout_s": (float, "seconds a cell may take before its worker is stopped"),
    "rendezvous_timeout_s": (float, "seconds for every worker of a multi-worker cell to join"),
    "seed": (int, "seed of weights and data"),
}


def _axis_help(axis: Any) -> str:
    accepted = ", ".join(axis.choices) if axis.choices else axis.accepted().removeprefix("expected ")
    extra = " Comma list." + (f" {REPLICAS_TO_MAX!r} = 1 up to the machine's devices."
                              if axis.name == "replicas" else "")
    return f"{axis.help}. Accepted: {accepted} Default: {axis.default} (or the sweep's).{extra}"


def _selection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sweep", default=None,
                   help=f"named sweep: {', '.join(f'{n} ({s.description})' for n, s in SWEEPS.items())}. "
                        "Default: default (equivalence for verify), or only the axes given")
    for axis in AXES:
        p.add_argument(axis.flag, dest=axis.name, default=None, metavar="LIST", help=_axis_help(axis))
    for name, (kind, text) in PROTOCOL_FLAGS.items():
        p.add_argument("--" + name.replace("_", "-"), dest=name, type=kind, default=None,
                       help=f"{text} (default: the sweep's)")
    p.add_argument("--device", default="auto", choices=DEVICE_CHOICES,
                   help="plan for GPUs (if nvidia-smi lists any) or CPU. Default: auto")
    p.add_argument("--cpu-devices", type=int, default=2,
                   help="logical CPU devices available as replicas on a CPU-only machine. Default: 2")
    p.add_argument("--mnist-path", default=None,
                   help="mnist.npz for --data mnist. Default: Keras's cache, ~/.keras/datasets/mnist.npz")
    p.add_argument("--cluster", default="local", choices=CLUSTER_CHOICES,
                   help="local: the harness starts every process of a multi-worker cell on this "
                        "machine. tf_config: this process is one task of a cluster the scheduler "
                        "started, each task with its own TF_CONFIG; slurm: the same, the cluster "
                        "built by TensorFlow's SlurmClusterResolver (with --ps P: a chief, P ps and "
                        "the rest workers). Every task runs the same command; the cluster fixes "
                        "--strategy, --workers and --ps; only the chief writes results. Default: local")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m harness",
        description="Benchmark TensorFlow training of the MNIST CNN and a dense model under every "
                    "tf.distribute strategy.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="measure a sweep and append rows to the results dataset")
    _selection_args(run)
    run.add_argument("--out", default="results", help="results folder. Default: results")
    lst = sub.add_parser("list", help="print a sweep's cells, ids and which are unsupported (no TF)")
    _selection_args(lst)
    ver = sub.add_parser(
        "verify", help="train cells for a fixed number of updates from one seed and check that cells "
        "which must be equivalent (same model, data, precision and examples per update) agree",
        description="Exit 0 when every group agrees within tolerance (float32: 1e-5 relative on the "
        "final loss and on the weights' L2 norm; mixed precision: 1e-2, bfloat16 2e-2), 1 when a "
        "cell disagrees, is invalid or failed, 2 on bad input. Default cells: --sweep equivalence.")
    _selection_args(ver)
    ver.add_argument("--updates", type=int, default=8,
                     help="optimizer updates per cell (a multiple of every steps_per_execution). "
                          "Default: 8")
    ver.add_argument("--include-unsupported", action="store_true",
                     help="also run cells marked unsupported, to see what they compute")
    rep = sub.add_parser("report", help="figures (PNG, SVG) and one self-contained HTML file for a run")
    rep.add_argument("--results", default="results", help="results folder. Default: results")
    rep.add_argument("--run", default="latest", metavar="REF",
                     help="the run(s) to report (see compare for REF). Default: latest")
    rep.add_argument("--out", default=None, help="output folder. Default: RESULTS/report")
    ing = sub.add_parser("ingest", help="add pytest-benchmark JSON (pytest benchmarks/ "
                         "--benchmark-json=F) to the results history, as one run")
    ing.add_argument("json", help="the --benchmark-json file")
    ing.add_argument("--results", default="results", help="results folder. Default: results")
    hw = sub.add_parser("compare-hardware", help="two or more machines (fingerprints), like for "
                        "like: per-cell ratios with CI, scaling side by side, cost and energy")
    hw.add_argument("--results", default="results", help="results folder. Default: results")
    hw.add_argument("--runs", nargs="*", default=None, metavar="REF",
                    help="runs to compare (default: the newest run of each machine)")
    hw.add_argument("--prices", default=None, metavar="FILE",
                    help="price table, CSV (machine,price_per_device_hour,purchase_price) or TOML")
    hw.add_argument("--figures", default=None, metavar="DIR", help="also draw scaling side by side")
    hw.add_argument("--csv", default=None, metavar="FILE", help="also write the table as CSV")
    cmp = sub.add_parser(
        "compare", help="the regression gate: compare a candidate run with baseline runs of the "
        "same cells on the same machine fingerprint",
        description="Exit 0: no regression; 1: a regression (or a cell that now fails); 2: error "
        "(unreadable results, bad reference); 3: not enough history to judge any cell. REF: "
        "a run id (or unique prefix), latest, previous, last:N, a date YYYY-MM-DD or a range "
        "YYYY-MM-DD..YYYY-MM-DD.")
    cmp.add_argument("--results", default="results", help="results folder. Default: results")
    cmp.add_argument("--baseline", default="last:20", metavar="REF",
                     help="baseline runs (their history feeds the robust z-score); runs at or after "
                          "the candidate are never in it. Default: last:20")
    cmp.add_argument("--candidate", default="latest", metavar="REF",
                     help="candidate run(s): last:N after N runs of the same code gates on all N, "
                          "which shrinks the detectable effect by about sqrt(N). Default: latest")
    gp = GatePolicy()
    cmp.add_argument("--min-effect", type=float, default=gp.min_effect,
                     help=f"smallest change called, as a fraction. Default: {gp.min_effect}")
    cmp.add_argument("--z", type=float, default=gp.z_threshold, dest="z_threshold",
                     help="robust z-score a change must reach against the history. "
                          f"Default: {gp.z_threshold}")
    cmp.add_argument("--min-history", type=int, default=gp.min_history,
                     help=f"baseline runs a series needs to be judged. Default: {gp.min_history}")
    cmp.add_argument("--alpha", type=float, default=gp.alpha,
                     help="family-wise false-call rate of the CI test over all series. "
                          f"Default: {gp.alpha}")
    cmp.add_argument("--markdown", default=None, metavar="FILE",
                     help="also write the result as markdown for a CI comment")
    cmp.add_argument("--figures", default=None, metavar="DIR",
                     help="also draw each changed series' history with its change points")
    doc = sub.add_parser(
        "doctor", help="what this machine can run: devices, build, threads, and a checked "
        "all-reduce through every strategy and cross-device op",
        description="Exit 0 when the probes ran (whatever they found), 1 when TensorFlow could not "
        "report its devices, 2 on bad input.")
    doc.add_argument("--device", default="auto", choices=DEVICE_CHOICES,
                     help="probe GPUs (auto: when TensorFlow sees any) or logical CPU devices")
    doc.add_argument("--replicas", default=None, metavar="N[,N...]",
                     help="replica counts to probe. Default: 2,3 on CPU; 1,2,3 and all GPUs")
    doc.add_argument("--json", action="store_true", help="print one JSON object instead")
    doc.add_argument("--timeout", type=float, default=180.0,
                     help="seconds each probe process may take. Default: 180")
    return parser


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


def select(args: argparse.Namespace) -> Selection:
    """Resolve sweep, axis overrides, protocol and platform; SpecError/DataError on bad input."""
    overrides = {a.name: a.parse(getattr(args, a.name)) for a in AXES if getattr(args, a.name) is not None}
    sweep = get_sweep(args.sweep or ("equivalence" if args.command == "verify" else "default"))
    if args.sweep is None and overrides:
        sweep = Sweep("custom", "axes from the command line", protocol=sweep.protocol)
    platform = detect_platform(args.device, args.cpu_devices)
    cluster = _cluster(args.cluster, overrides, platform)
    if cluster is not None:
        overrides.update(strategy=(cluster.strategy,), workers=(cluster.workers,),
                         ps=(max(cluster.ps, 1),))
    sweep = sweep.with_axes(overrides)
    changes = {k: getattr(args, k) for k in PROTOCOL_FLAGS if getattr(args, k) is not None}
    protocol = dataclasses.replace(sweep.protocol, **changes)
    if "mnist" in sweep.values()["data"]:
        load_mnist(args.mnist_path)  # a missing or malformed file stops here, before any work
    if getattr(args, "out", None) is not None:
        _check_writable(Path(args.out))
    return Selection(sweep, protocol, platform, expand(sweep, platform), args.mnist_path, cluster)


def _cluster(kind: str, overrides: dict[str, tuple[Any, ...]], platform: Platform
             ) -> ClusterConfig | None:
    """This process's cluster (None for local runs); SpecError when the axes given contradict it."""
    if kind == "local":
        return None
    ps = overrides.get("ps", (0,))
    if kind == "slurm" and len(ps) != 1:
        raise SpecError(f"Received --ps={','.join(map(str, ps))} with --cluster slurm; expected one "
                        "value: the Slurm job step's ps tasks.")
    config = read_tf_config() if kind == "tf_config" else resolve_slurm(ps[0], platform.gpu_count)
    shape = {"strategy": (config.strategy,), "workers": (config.workers,)}
    if config.ps:
        shape["ps"] = (config.ps,)
    for name, value in shape.items():
        if name in overrides and overrides[name] != value:
            given = ",".join(map(str, overrides[name]))
            raise SpecError(f"Received --{name}={given}, but this {kind} cluster ({config.workers} "
                            f"worker(s), {config.ps} ps) runs only --{name} {value[0]}.")
    return config


def _check_writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise SpecError(f"Received --out={str(out)!r}; expected a folder this user can write to "
                        f"({e.strerror}).") from None


def _interrupt_on_sigterm() -> None:
    """A scheduler's or CI's SIGTERM stops the run like Ctrl-C: workers stopped, rows kept. Ctrl-C
    (SIGINT) is handled even when a wrapper started this process with SIGINT ignored (Python then
    installs no handler of its own)."""
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def cmd_list(sel: Selection) -> int:
    from harness.runner import plan

    planned = plan(sel.cells, sel.platform)
    width = max((len(c.id) for c, _ in planned), default=0)
    for cell, why in planned:
        print(f"{cell.id.ljust(width)}  {'run' if why is None else 'unsupported: ' + why}")
    n_unsup = sum(why is not None for _, why in planned)
    print(f"\n{len(planned)} cells in sweep {sel.sweep.name!r}: {len(planned) - n_unsup} to run, "
          f"{n_unsup} unsupported on this machine ({_platform_text(sel.platform)}).")
    print(f"protocol: {sel.protocol}")
    return 0


def _platform_text(p: Platform) -> str:
    if p.device_kind == "gpu":
        return f"{p.gpu_count} GPU(s)"
    return f"CPU only, up to {p.cpu_devices} logical CPU devices as replicas"


def cmd_cluster_task(sel: Selection, out: Path) -> int:
    """A task of a real cluster other than the chief: a peer takes part in every cell, a server
    serves the whole run; neither writes results."""
    import datetime as dt

    from harness.launch import WorkerOptions, run_cluster_task, serve_cluster_task
    from harness.runner import follow_sweep

    config = sel.cluster
    assert config is not None
    task = f"{config.task_type}{config.task_index}"
    stamp = dt.datetime.now(dt.timezone.utc)
    log_dir = out / "logs" / stamp.strftime("%Y-%m-%d") / f"{stamp:%Y%m%dT%H%M%SZ}-{task}"
    print(f"cluster task {config.task_type} {config.task_index} ({config.role}) at {config.address}; "
          f"logs -> {log_dir}", flush=True)
    try:
        if config.role == "server":
            options = WorkerOptions(sel.protocol, sel.platform, log_dir, sel.mnist_path)
            code = serve_cluster_task(sel.cells[0], options, config)
            print(f"server exited with code {code}")
            return 0 if code == 0 else 1
        counts = follow_sweep(sel.cells, sel.protocol, sel.platform, log_dir,
                              lambda c, o, n: run_cluster_task(c, o, n, config), sel.mnist_path)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"peer done: {counts['finished']} cells finished, {counts['failed']} failed")
    return 0


def cmd_run(sel: Selection, out: Path) -> int:
    from harness.launch import run_cell_processes, run_cluster_task
    from harness.runner import run_sweep
    from harness.summary import FOOTNOTE, LOGICAL_NOTE, OVERSUBSCRIBED_NOTE, summary_table

    config = sel.cluster
    if config is not None and config.role != "chief":
        return cmd_cluster_task(sel, out)
    launcher = run_cell_processes if config is None else (
        lambda c, o, n: run_cluster_task(c, o, n, config))
    where = "" if config is None else (f" as the chief of a {config.workers}-worker"
                                       + (f", {config.ps}-ps" if config.ps else "") + " cluster")
    print(f"sweep {sel.sweep.name!r}: {len(sel.cells)} cells on {_platform_text(sel.platform)}"
          f"{where}; results -> {out}", flush=True)
    result = run_sweep(sel.cells, sel.protocol, sel.platform, out, sel.mnist_path, launcher=launcher)
    print()
    print(summary_table(result.rows))
    print()
    print(FOOTNOTE.format(repeats=sel.protocol.repeats, window_s=sel.protocol.window_s))
    if any(r.get("logical_devices") for r in result.rows):
        print(LOGICAL_NOTE)
    if any(r.get("oversubscribed") for r in result.rows):
        print(OVERSUBSCRIBED_NOTE)
    counts: dict[str, int] = {}
    for r in result.rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(f"run {result.run_id}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for p in result.paths:
        print(f"wrote {p}")
    if result.interrupted:
        print(f"interrupted: {result.not_run} cells not run; every row measured before is kept.",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def cmd_verify(sel: Selection, updates: int, include_unsupported: bool) -> int:
    from harness.verify import judge, run_cells, verdict_table

    print(f"verify: {len(sel.cells)} cells, {updates} updates each from seed {sel.protocol.seed}",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="harness-verify-") as work:
        outcomes = run_cells(sel.cells, updates, sel.protocol, sel.platform, Path(work),
                             include_unsupported, sel.mnist_path)
        verdicts = judge(outcomes)
    print()
    print(verdict_table(verdicts))
    bad = [v for v in verdicts if v.agrees is False or v.outcome.status in ("failed", "invalid")]
    compared = sum(v.agrees is not None for v in verdicts)
    if bad:
        print(f"\n{len(bad)} of {len(verdicts)} cells disagree, failed or are invalid.")
        return 1
    if not compared:
        print("\nnothing was compared: no group (same model, data, precision and examples per "
              "update) holds two cells that ran; add a cell to compare with.")
        return 1
    print(f"\nall {compared} compared cells agree with their group's reference.")
    return 0


def _check_updates(updates: int, cells: list[Cell]) -> None:
    spes = sorted({c.steps_per_execution for c in cells})
    if updates < 1 or any(updates % s for s in spes):
        raise SpecError(f"Received --updates={updates}; expected a positive multiple of every "
                        f"steps_per_execution in the selection: {spes}.")


def cmd_compare(args: argparse.Namespace) -> int:
    from harness import history
    from harness.compare import compare, text_table, write_markdown
    from harness.gate import EXIT_ERROR

    checks = {"--min-effect": (args.min_effect, 0 <= args.min_effect < 1),
              "--z": (args.z_threshold, args.z_threshold > 0),
              "--min-history": (args.min_history, args.min_history >= 1),
              "--alpha": (args.alpha, 0 < args.alpha < 1)}
    bad = [(flag, value) for flag, (value, ok) in checks.items() if not ok]
    if bad:
        print(f"error: Received {bad[0][0]}={bad[0][1]}; "
              "expected --min-effect in [0, 1), --z > 0, --min-history >= 1, --alpha in (0, 1).",
              file=sys.stderr)
        return EXIT_ERROR
    policy = GatePolicy(args.min_effect, args.z_threshold, args.min_history, args.alpha)
    try:
        cells, _ = history.load(args.results)
        result = compare(cells, args.baseline, args.candidate, policy)
    except history.HistoryError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    print(text_table(result))
    if args.markdown:
        write_markdown(result, Path(args.markdown))
        print(f"wrote {args.markdown}")
    if args.figures:
        from harness.plots import series_figures

        for path in series_figures(cells, result, Path(args.figures)):
            print(f"wrote {path}")
    if result.exit_code == 3:
        print(f"not enough history: no cell has {policy.min_history} baseline runs on this "
              "fingerprint; widen --baseline (e.g. last:20) or lower --min-history.")
    return result.exit_code


def cmd_report(args: argparse.Namespace) -> int:
    from harness import history
    from harness.report import write_report

    try:
        cells, _ = history.load(args.results)
        run_ids = history.resolve(args.run, history.runs(cells))
    except history.HistoryError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    rows = cells[cells["run_id"].isin(run_ids)]
    out = Path(args.out) if args.out else Path(args.results) / "report"
    for path in write_report(rows, out, f"tf-strategy-bench: {', '.join(run_ids)}"):
        print(f"wrote {path}")
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from harness.ingest import IngestError, ingest

    try:
        done = ingest(Path(args.json), Path(args.results))
    except IngestError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(f"run {done.run_id}: {done.rows} harness row(s) ingested"
          + (f" into {done.path}" if done.path else "")
          + (f"; skipped {len(done.skipped)} benchmark(s) without a harness row" if done.skipped else ""))
    return 0 if done.rows else 1


def cmd_compare_hardware(args: argparse.Namespace) -> int:
    from harness import history
    from harness.hardware import compare_machines, latest_runs_per_machine, read_prices, text_table

    try:
        cells, windows = history.load(args.results)
        all_runs = history.runs(cells)
        run_ids = ([r for ref in args.runs for r in history.resolve(ref, all_runs)] if args.runs
                   else latest_runs_per_machine(cells))
        prices = read_prices(Path(args.prices)) if args.prices else None
        table = compare_machines(cells, windows, run_ids, prices)
    except history.HistoryError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(text_table(table))
    print("\nratio: median throughput / the reference machine's, 95% bootstrap CI of window "
          "throughputs; examples/$ = examples/s x 3600 / (price per device-hour x devices).")
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    if args.figures:
        from harness.plots import hardware_scaling

        for path in hardware_scaling(table, Path(args.figures)):
            print(f"wrote {path}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from harness.doctor import DoctorError, examine, render, to_json_text

    try:
        counts = _int_list("--replicas", args.replicas, minimum=1) if args.replicas else None
        if not args.timeout > 0:
            raise SpecError(f"Received --timeout={args.timeout}; expected seconds > 0.")
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if not args.json:
        print("probing (one process per replica count, then two local workers per "
              "MultiWorkerMirrored communication) ...", file=sys.stderr)
    try:
        report = examine(args.device, counts, args.timeout)
    except DoctorError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE if "Received" in str(e) else 1
    print(to_json_text(report) if args.json else render(report))
    return 0


def _int_list(flag: str, text: str, minimum: int) -> list[int]:
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or any(v < minimum for v in values):
        raise SpecError(f"Received {flag}={text!r}; expected comma-separated integers >= {minimum}.")
    return sorted(set(values))


SELECTION_FREE: dict[str, Any] = {
    "compare-hardware": cmd_compare_hardware, "ingest": cmd_ingest, "compare": cmd_compare,
    "report": cmd_report, "doctor": cmd_doctor,
}
"""Subcommands that take no cell selection: name -> handler(args) -> exit code."""


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in SELECTION_FREE:
        return SELECTION_FREE[args.command](args)
    try:
        sel = select(args)
        if args.command == "verify":
            _check_updates(args.updates, sel.cells)
    except (SpecError, DataError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "list":
        return cmd_list(sel)
    _interrupt_on_sigterm()
    if args.command == "verify":
        return cmd_verify(sel, args.updates, args.include_unsupported)
    return cmd_run(sel, Path(args.out))
