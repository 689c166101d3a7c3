"""The suite's own cost in compare's words (pure)."""

from __future__ import annotations

import pandas as pd

from harness.analysis.run.cost import cost_text


def test_the_candidates_cost_against_the_baselines_median() -> None:
    costs = pd.DataFrame(
        {
            "run_id": ["a", "b", "c", "new"],
            "wall_s": [1800.0, 1700.0, 1900.0, 600.0],
            "fixed_s_per_process": [6.0, 6.4, None, 1.6],
        }
    )
    text = cost_text(costs, ["new"], ["a", "b", "c"])
    assert text == (
        "suite cost: wall 600.0 s (baseline median 1,800.0 s over 3 runs, -67%); fixed cost per "
        "measured process 1.6 s (baseline median 6.2 s over 2 runs, -74%)"
    )
    assert cost_text(costs, ["new"], []) == "suite cost: wall 600.0 s; fixed cost per measured process 1.6 s"
    assert cost_text(costs, ["gone"], ["a"]) == ""  # a run without a costs row: nothing to say
