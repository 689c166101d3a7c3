"""``python -m harness run|list``. Validates everything before any expensive work; never imports
TensorFlow (workers do)."""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.data import DataError, load_mnist
from harness.launch import DEVICE_CHOICES, detect_platform
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
    return parser


@dataclasses.dataclass(frozen=True)
class Selection:
    """The validated selection of cells to run, and how to time them."""

    sweep: Sweep
    protocol: Protocol
    platform: Platform
    cells: list[Cell]
    mnist_path: str | None = None


def select(args: argparse.Namespace) -> Selection:
    """Resolve sweep, axis overrides, protocol and platform; SpecError/DataError on bad input."""
    overrides = {a.name: a.parse(getattr(args, a.name)) for a in AXES if getattr(args, a.name) is not None}
    sweep = get_sweep(args.sweep or ("equivalence" if args.command == "verify" else "default"))
    if args.sweep is None and overrides:
        sweep = Sweep("custom", "axes from the command line", protocol=sweep.protocol)
    sweep = sweep.with_axes(overrides)
    changes = {k: getattr(args, k) for k in PROTOCOL_FLAGS if getattr(args, k) is not None}
    protocol = dataclasses.replace(sweep.protocol, **changes)
    platform = detect_platform(args.device, args.cpu_devices)
    if "mnist" in sweep.values()["data"]:
        load_mnist(args.mnist_path)  # a missing or malformed file stops here, before any work
    if getattr(args, "out", None) is not None:
        _check_writable(Path(args.out))
    return Selection(sweep, protocol, platform, expand(sweep, platform), args.mnist_path)


def _check_writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise SpecError(f"Received --out={str(out)!r}; expected a folder this user can write to "
                        f"({e.strerror}).") from None


def _interrupt_on_sigterm() -> None:
    """A scheduler's or CI's SIGTERM stops the run like Ctrl-C: workers stopped, rows kept."""
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


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


def cmd_run(sel: Selection, out: Path) -> int:
    from harness.runner import run_sweep
    from harness.summary import FOOTNOTE, LOGICAL_NOTE, OVERSUBSCRIBED_NOTE, summary_table

    print(f"sweep {sel.sweep.name!r}: {len(sel.cells)} cells on {_platform_text(sel.platform)}; "
          f"results -> {out}", flush=True)
    result = run_sweep(sel.cells, sel.protocol, sel.platform, out, sel.mnist_path)
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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
