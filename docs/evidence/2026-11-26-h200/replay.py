"""Replay the turns of journals written on the H200 (2026-11-26) under the disturbance rules.

    python replay.py JOURNAL.jsonl [...]     (with the suite importable: harness.formulas.turns)

Those journals record per turn the CPU of the run's other processes (run_cpu_s), of everything
else (other_cpu_s) and the busiest process outside the run (busiest, busiest_cpu_s), not the
user-space programs' sum (foreign_cpu_s) that the rule reads now; two readings bracket it.
"""

import dataclasses
import json
import sys

from harness.formulas.turns import Turn, is_disturbed

KERNEL = ("kworker", "kcompactd", "ksoftirqd", "kswapd", "rcu_", "migration", "irq/")
RULES = {
    "before 2026-11-26 (everything but the member above 0.25 CPUs)": lambda t: dataclasses.replace(
        t, foreign_cpu_s=t.other_cpu_s + t.run_cpu_s, idle_cpus=float("nan")
    ),
    "now, user-space programs 0 where a kernel thread was the busiest": lambda t: dataclasses.replace(
        t, foreign_cpu_s=0.0 if (not t.busiest or t.busiest.startswith(KERNEL)) else t.busiest_cpu_s
    ),
    "now, the busiest process of any kind counted as a program": lambda t: dataclasses.replace(
        t, foreign_cpu_s=min(t.busiest_cpu_s, t.other_cpu_s) if t.busiest else 0.0
    ),
}

for path in sys.argv[1:]:
    with open(path) as f:
        entries = [json.loads(line) for line in f]
    instances = [[Turn(**t) for t in e["instance"]["turns"]] for e in entries if e["kind"] == "instance"]
    for label, reading in RULES.items():
        blocks = kept = 0
        for turns in instances:
            read = [reading(t) for t in turns]
            ids = {t.block for t in read}
            blocks += len(ids)
            kept += len(ids - {t.block for t in read if is_disturbed(t)})
        print(f"{path.split('/')[-1]}: {label}: {kept} of {blocks} blocks kept")
