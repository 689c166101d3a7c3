"""Each cost across the link the step breakdown timed apart (median over a setting's runs, ms per
update) against the model's term for it, fitted over every setting (harness.analysis.scale_out).

    .venv/bin/python docs/evidence/2026-12-07-nodes/parts.py docs/evidence/2026-12-07-nodes/links.tar.gz
"""

import statistics
import sys

from harness.analysis import links, scale_out
from harness.contract.columns import unflatten_all
from harness.contract.records import CellRow
from harness.formulas.across_runs import CALIBRATION
from harness.results import history

cells, _ = history.load(sys.argv[1:])
rows = unflatten_all(CellRow, cells.to_dict("records"))
multi = [r for r in rows if r.status == "ok" and (r.ran.nodes or 1) >= 2 and r.ran.link_gbps]
configs = {r.cell.cell_id: c for r in multi if (c := links._config(r, rows, CALIBRATION))}
settings = scale_out.group_links(links._run_links(multi))
names = {"multi_worker_mirrored": ("gradient all-reduce", "scalar reduction"), "parameter_server": ("reads + updates",)}
print("| model | strategy | cost | link setting | timed apart, ms | model's term, ms |")
print("|---|---|---|---|---|---|")
for strategy in scale_out.ACROSS:
    fit = scale_out.fit(multi, configs, strategy)
    assert fit is not None
    for cid, config in configs.items():
        if config.strategy != strategy:
            continue
        for s in settings:
            mine = [r for r in multi if r.cell.cell_id == cid and r.run.run_id in s.run_ids]
            parts = [scale_out.parts_of(r, config.nbytes) for r in mine]
            for i, name in enumerate(names[strategy]):
                timed = statistics.median(p[i][1] for p in parts) * 1e3
                term = statistics.median(fit.time_s(p[i][0]) for p in parts) * 1e3
                print(f"| {config.model} | {strategy} | {name} | {s.label} | {timed:.3g} | {term:.3g} |")
    a, kappa, gamma = fit.coef
    rests = ", ".join(f"{configs[k].model} {statistics.mean(v) * 1e3:.2g} ms" for k, v in fit.rests.items())
    print(
        f"\n{strategy}: {scale_out.ACROSS[strategy].trips} {a * 1e6:.0f} us, wire time x{kappa:.2f}, "
        f"CPU {gamma:.2g} ns per byte handled (relative RMS {fit.rms:.0%}, {fit.df} df); rest {rests}\n"
    )
