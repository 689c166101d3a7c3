"""Fresh processes of benchmarks/plain_loop.py with the whole machine ("full") and with the CPU
halved by a cgroup v1 CPU quota ("halved"), to check the suite's cross-machine ratio.

  python benchmarks/plain_cpu_halved.py --python PYTHON --pairs 8 --log LOG --summary SUMMARY

For each of ``--pairs`` pairs and each model (cnn, dense) it runs one full and one halved process,
in ABBA order (pair 1 full then halved, pair 2 halved then full, ...; the models alternate which
goes first likewise). A halved process is ``sh -c 'echo $$ > CGROUP/cgroup.procs; exec PYTHON
plain_loop.py MODEL'``: it joins the group (default /sys/fs/cgroup/cpu/halved, which must already
exist with its quota) before the interpreter starts; a full one runs the same without the echo.
Each process's JSON line goes to LOG (JSON lines) with its setting, its cgroup as read from
/proc/PID/cgroup while it ran, its CPU seconds (``cpu_s``), the CPU seconds the rest of the machine
used meanwhile (``others_cpu_s``: /proc/stat's non-idle time less the process's; a check that the
machine was otherwise idle) and, for halved ones, the group's throttling counters (cpu.stat
nr_throttled, throttled_time) over its run.

Summary per model: each setting's median examples/s over its processes, and the geometric mean
with a 95% Student t interval on the logs of the per-process figures; the ratio halved/full of
the medians, and the ratio of geometric means with a 95% Welch t interval (the difference of the
mean logs, Welch-Satterthwaite degrees of freedom). Standard library only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "plain_loop.py"
MODELS = ("cnn", "dense")
SETTINGS = ("full", "halved")


# --- Student t quantiles (regularized incomplete beta, Numerical Recipes' continued fraction) ---


def _betacf(a: float, b: float, x: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
            c = 1.0 + aa / c
            c = c if abs(c) > 1e-300 else 1e-300
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betai(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _betai(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    lo, hi = 0.0, 1000.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


# --- runs ---


def cgroup_stat(group: Path) -> dict[str, int]:
    lines = (group / "cpu.stat").read_text().split("\n")
    return {k: int(v) for k, v in (line.split() for line in lines if line.strip())}


def busy_s() -> float:
    """The machine's non-idle CPU seconds so far, all CPUs (/proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one(python: str, model: str, setting: str, group: Path) -> dict[str, object]:
    command = f"exec {python} {SCRIPT} {model}"
    if setting == "halved":
        command = f"echo $$ > {group}/cgroup.procs && " + command
    before = cgroup_stat(group)
    busy, own = busy_s(), children_cpu_s()
    t0 = time.time()
    proc = subprocess.Popen(["sh", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cgroup = ""
    deadline = time.time() + 10
    while time.time() < deadline and proc.poll() is None:  # after the exec: python's own cgroup
        try:  # sh's own command line names the script too: wait for its exec of the interpreter
            argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
            if argv[0] == python.encode() and str(SCRIPT).encode() in argv:
                cgroup = next(
                    line.split(":", 2)[2]
                    for line in Path(f"/proc/{proc.pid}/cgroup").read_text().splitlines()
                    if line.split(":", 2)[1] == "cpu"
                )
                break
        except (OSError, StopIteration):
            pass
        time.sleep(0.05)
    out, err = proc.communicate()
    after = cgroup_stat(group)
    own = children_cpu_s() - own
    busy = busy_s() - busy
    row: dict[str, object] = {
        "setting": setting,
        "model": model,
        "started": datetime.datetime.fromtimestamp(t0, datetime.UTC).isoformat(timespec="seconds"),
        "wall_s": round(time.time() - t0, 2),
        "cpu_cgroup": cgroup,
        "rc": proc.returncode,
        "cpu_s": round(own, 2),
        "others_cpu_s": round(busy - own, 2),
    }
    if setting == "halved":
        row["nr_throttled"] = after["nr_throttled"] - before["nr_throttled"]
        row["throttled_s"] = round((after["throttled_time"] - before["throttled_time"]) / 1e9, 2)
    if proc.returncode == 0:
        row.update(json.loads(out.strip().splitlines()[-1]))
    else:
        row["stderr_tail"] = err[-2000:]
    return row


def spread(values: list[float]) -> dict[str, object]:
    logs = [math.log(v) for v in values]
    n = len(logs)
    mean = statistics.fmean(logs)
    half = t_quantile(0.975, n - 1) * statistics.stdev(logs) / math.sqrt(n) if n > 1 else math.inf
    return {
        "n": n,
        "median_examples_per_sec": statistics.median(values),
        "geomean_examples_per_sec": math.exp(mean),
        "geomean_ci95": [math.exp(mean - half), math.exp(mean + half)],
        "min": min(values),
        "max": max(values),
        "cv_percent": 100 * statistics.stdev(values) / statistics.fmean(values) if n > 1 else None,
    }


def welch_ratio(full: list[float], halved: list[float]) -> dict[str, object]:
    a, b = [math.log(v) for v in full], [math.log(v) for v in halved]
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    diff = statistics.fmean(b) - statistics.fmean(a)
    half = t_quantile(0.975, df) * math.sqrt(va + vb)
    return {
        "ratio_of_medians": statistics.median(halved) / statistics.median(full),
        "ratio_of_geomeans": math.exp(diff),
        "ci95": [math.exp(diff - half), math.exp(diff + half)],
        "welch_df": df,
    }


def paired_ratio(rows: list[dict[str, object]], model: str) -> dict[str, object]:
    """A cross-check: the geometric mean of each pair's own ratio halved/full, with a 95% t interval
    (n - 1 degrees of freedom): a drift of the machine shared by a pair's two processes cancels."""
    by_pair: dict[object, dict[object, float]] = {}
    for r in rows:
        if r["model"] == model and r["rc"] == 0:
            by_pair.setdefault(r["pair"], {})[r["setting"]] = float(r["examples_per_sec"])
    logs = [math.log(p["halved"] / p["full"]) for p in by_pair.values() if len(p) == 2]
    mean = statistics.fmean(logs)
    half = t_quantile(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return {
        "pairs": len(logs),
        "ratio": math.exp(mean),
        "ci95": [math.exp(mean - half), math.exp(mean + half)],
    }


def summarize(rows: list[dict[str, object]], python: str, group: Path) -> dict[str, object]:
    ok = [r for r in rows if r["rc"] == 0]
    version = subprocess.run(
        [python, "-c", "import tensorflow as tf, keras; print(tf.__version__, keras.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout

    def lscpu_field(name: str) -> str:
        return next(
            (ln.split(":", 1)[1].strip() for ln in lscpu.splitlines() if ln.startswith(name + ":")), ""
        )

    first = datetime.datetime.fromisoformat(str(rows[0]["started"]))
    last = datetime.datetime.fromisoformat(str(rows[-1]["started"])).timestamp() + float(rows[-1]["wall_s"])
    summary: dict[str, object] = {
        "what": "benchmarks/plain_loop.py in fresh processes, full (2 CPUs) vs halved (cgroup v1 CPU quota)",
        "date": first.isoformat(timespec="seconds"),
        "seconds": round(last - first.timestamp(), 1),
        "python": python,
        "tensorflow": version[0],
        "keras": version[1],
        "cpu_model": lscpu_field("Model name"),
        "cpus": lscpu_field("CPU(s)"),
        "cgroup": {
            "path": str(group),
            "cfs_quota_us": int((group / "cpu.cfs_quota_us").read_text()),
            "cfs_period_us": int((group / "cpu.cfs_period_us").read_text()),
        },
        "pairs": max(int(r["pair"]) for r in rows),
        "order": "ABBA per model; pair i model j (cnn 0, dense 1): full first when i + j is even",
        "processes": len(rows),
        "failed_processes": len(rows) - len(ok),
        "others_cpu_s": {
            "total": round(sum(float(r["others_cpu_s"]) for r in rows), 1),
            "most_in_one_process": max(float(r["others_cpu_s"]) for r in rows),
        },
        "halved_throttled": {
            "processes_throttled": sum(
                1 for r in rows if r["setting"] == "halved" and int(r["nr_throttled"]) > 0
            ),
            "halved_processes": sum(1 for r in rows if r["setting"] == "halved"),
        },
        "models": {},
    }
    for model in MODELS:
        figures = {
            s: [float(r["examples_per_sec"]) for r in ok if r["model"] == model and r["setting"] == s]
            for s in SETTINGS
        }
        summary["models"][model] = {
            "full": spread(figures["full"]),
            "halved": spread(figures["halved"]),
            "halved_over_full": {
                **welch_ratio(figures["full"], figures["halved"]),
                "paired": paired_ratio(ok, model),
            },
        }
    return summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", required=True, help="the interpreter with TensorFlow")
    p.add_argument("--pairs", type=int, default=8)
    p.add_argument("--group", type=Path, default=Path("/sys/fs/cgroup/cpu/halved"))
    p.add_argument("--log", type=Path, required=True, help="JSON lines, one per process")
    p.add_argument("--summary", type=Path, required=True)
    p.add_argument("--from-log", action="store_true", help="no runs: summarize an existing --log")
    args = p.parse_args()

    if args.from_log:
        rows = [json.loads(line) for line in args.log.read_text().splitlines() if line.strip()]
    else:
        if (args.group / "cgroup.procs").read_text().strip():
            sys.exit(f"{args.group} is not empty: {(args.group / 'cgroup.procs').read_text().split()}")
        rows = []
        with args.log.open("w") as log:
            for i in range(args.pairs):
                for j, model in enumerate(MODELS):
                    order = SETTINGS if (i + j) % 2 == 0 else SETTINGS[::-1]
                    for setting in order:
                        row = one(args.python, model, setting, args.group)
                        row["pair"] = i + 1
                        rows.append(row)
                        log.write(json.dumps(row) + "\n")
                        log.flush()
                        print(json.dumps(row), flush=True)

    summary = summarize(rows, args.python, args.group)
    args.summary.write_text(json.dumps(summary, indent=2) + "\n")
    for model, m in summary["models"].items():
        r = m["halved_over_full"]
        print(
            f"{model}: full {m['full']['median_examples_per_sec']:.0f}, halved {m['halved']['median_examples_per_sec']:.0f}"
            f" examples/s (medians, n={m['full']['n']}/{m['halved']['n']}); halved/full {r['ratio_of_medians']:.3f}"
            f" (geomeans {r['ratio_of_geomeans']:.3f}, 95% CI {r['ci95'][0]:.3f} to {r['ci95'][1]:.3f};"
            f" paired {r['paired']['ratio']:.3f}, {r['paired']['ci95'][0]:.3f} to {r['paired']['ci95'][1]:.3f})"
        )


if __name__ == "__main__":
    main()
