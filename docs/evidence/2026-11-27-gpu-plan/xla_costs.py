import glob

import pandas as pd

rows = []
for tag in ("a1", "b1", "a2", "b2"):
    for f in glob.glob(f"xla-{tag}/costs/*/*/00000.parquet"):
        d = pd.read_parquet(f).iloc[0]
        cache = glob.glob(f"xla-{tag}/logs/*/*/xla-cache/*")
        # per-instance readiness from the journal: each instance's start phase
        rows.append(
            {
                "run": tag,
                "cache": "on" if tag[0] == "b" else "off",
                "files": len(cache),
                "wall": round(d.wall_s, 1),
                "instances": int(d.instances),
                "processes": int(d.processes),
                "start_per_proc": round(d.start_s / d.processes, 2),
                "calib_per_proc": round(d.calibration_s / d.processes, 2),
                "turns": round(d.turns_s, 1),
                "finish": round(d.finish_s, 1),
                "exit": round(d.exit_s, 1),
                "fixed_per_proc": round(d.fixed_s_per_process, 2),
            }
        )
print(pd.DataFrame(rows).to_string(index=False))
