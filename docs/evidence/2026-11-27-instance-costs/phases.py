"""Per-phase cost of the runs under the folders given: each run's costs row, and its instances'
phases from the journal (seconds per instance and per member), side by side.

    python docs/evidence/2026-11-27-instance-costs/phases.py instance-costs/pc/res-old-0 instance-costs/pc/res-new-0 ...

(from the repository root, on the folders abba.sh and breakdown-abba.sh write)
"""

from __future__ import annotations

import glob
import json
import statistics
import sys

import pandas as pd

PHASES = ("start", "calibration", "turns", "finish", "exit")


def instances(folder: str) -> list[dict]:
    found = []
    for path in glob.glob(f"{folder}/journal/*.jsonl"):
        for line in open(path):
            entry = json.loads(line)
            if entry.get("kind") == "instance":
                found.append(entry["instance"])
    return found


def main(folders: list[str]) -> None:
    rows = []
    for folder in folders:
        cost = pd.read_parquet(f"{folder}/costs").iloc[0]
        done = [i for i in instances(folder) if not i.get("dropped")]
        members = sum(len(i["ends"]) for i in done)
        per_member = {p: sum(i["phases"].get(p, 0.0) for i in done) / members for p in PHASES}
        walls = [sum(i["phases"].values()) for i in done]
        rows.append(
            {
                "run": folder.rsplit("/", 1)[-1],
                "wall_s": round(cost.wall_s, 1),
                "instances": len(done),
                "instance_s_median": round(statistics.median(walls), 2),
                **{f"{p}_per_member_s": round(v, 2) for p, v in per_member.items()},
                "finish_s": round(cost.finish_s, 1),
                "cells_broken_down": int(pd.read_parquet(f"{folder}/cells").parts_step_s.notna().sum()),
                "breakdowns": cost.get("breakdowns"),
                "breakdown_s": cost.get("breakdown_s"),
                "peak_s": round(cost.peak_s, 1),
                "fixed_s_per_process": round(cost.fixed_s_per_process, 2),
            }
        )
    print(pd.DataFrame(rows).set_index("run").T.to_string())


if __name__ == "__main__":
    main(sys.argv[1:])
