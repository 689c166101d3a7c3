"""The default sweep as planned on faked 1- and 8-GPU hosts: cells, what each model's headline
races, the groups and the minimum by the GPU estimate. Run from the repository root:
python docs/evidence/2026-11-27-gpu-plan/plan_on_gpus.py"""

from harness.launch.budget import PRIORS, minimum_s, plan_groups
from harness.launch.turns import Plan
from harness.spec.protocol import Platform
from harness.spec.rules import unsupported_reason
from harness.spec.sweep import contenders, expand
from harness.spec.sweeps import get_sweep

sweep = get_sweep("default")
for platform in (
    Platform(),
    Platform("gpu", 1, gpu_memory_mib=81_559),
    Platform("gpu", 8, gpu_memory_mib=81_559),
):
    cells = expand(sweep, platform)
    why = {c.id: unsupported_reason(c, platform) for c in cells}
    runnable = [c for c in cells if why[c.id] is None]
    heads = contenders(sweep, platform)
    host = f"{platform.gpu_count} GPU(s)" if platform.device_kind == "gpu" else "CPU, 2 logical devices"
    print(f"== {host}: {len(cells)} cells, {len(runnable)} runnable, {len(heads)} contenders")
    for c in cells:
        mark = "H" if c.id in heads else ("x" if why[c.id] else " ")
        print(f"  {mark} {c.id}" + (f"   <- {why[c.id][:90]}" if why[c.id] else ""))
    for live in (8, 16):
        found = plan_groups(runnable, heads, live)
        need = minimum_s(found, sweep.protocol, Plan.of(sweep.protocol, 0.0), PRIORS[platform.device_kind])
        print(
            f"  at most {live} live: groups {[len(g.members) for g in found]}, minimum {need:.0f} s "
            f"({need / 60:.1f} min) of the {sweep.protocol.budget_s:.0f} s budget"
        )
