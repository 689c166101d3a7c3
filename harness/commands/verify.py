"""TODO docstring: commands.verify."""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness.commands.selection import Selection
from harness.errors import SpecError
from harness.spec.cell import Cell


def cmd_verify(sel: Selection, updates: int, include_unsupported: bool) -> int:
    from harness.analysis.verdicts import judge, verdict_table
    from harness.launch.runner import run_cells

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
