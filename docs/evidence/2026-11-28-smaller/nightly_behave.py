"""Six faked nights (tests/harness/commands/test_nightly.py's fakes) into OUT; prints each night's exit code and
keeps each markdown summary and the dashboard."""
import math, sys, shutil
from pathlib import Path
import numpy as np
out = Path(sys.argv[1]); shutil.rmtree(out, ignore_errors=True); out.mkdir()
import harness.launch.runner as runner
import harness.launch.envs as envs
from harness.commands import main
from harness.launch import nightly as launch_nightly
from harness.launch.ab import CellOutcome
from harness.launch.envs import Env
from harness.launch.nightly import NightResult
runner.git_sha = lambda: "0123456789ab"
ref = Env("tensorflow-cpu==2.20.*", "/ref/python", "TensorFlow 2.20.0, Keras 3.15.1", "a1b2c3d4e5f6", "x\n")
cand = Env("tensorflow-cpu==2.21.*", "/cand/python", "TensorFlow 2.21.0, Keras 3.15.1", "0" * 12, "y\n")
envs.reference = lambda spec, e, folder: ref
envs.candidate = lambda spec, e: cand
n = iter(range(100))
def fake(ratio, sd=0.01, fail=""):
    def measure(cells, protocol, platform, o, *a, **k):
        rng = np.random.default_rng(7)
        result = NightResult(f"2026-11-25T00-00-00Z-fake{next(n)}", "2026-11-25")
        for cell in cells:
            c = CellOutcome(cell, "turns")
            if fail:
                c.failure = fail
            else:
                c.a_facts = {"fingerprint": "f" * 16, "host_cpu": "Test CPU", "device_name": "Test CPU"}
                logs = rng.normal(0, sd, 20)
                c.ratios = list(np.exp(logs - logs.mean() + math.log(ratio)))
            result.outcomes.append(c)
        return result
    launch_nightly.measure = measure
for label, args in (("c1", (1.0,)), ("c2", (1.0,)), ("c3", (0.95,)), ("c4", (0.95,)), ("c5", (0.95, 0.2)), ("c6", (1.0, 0.01, "side B, pair 0: failed: worker exited 1"))):
    fake(*args)
    rc = main(["nightly", "--candidate", "tensorflow-cpu==2.21.*", "--baseline", "tensorflow-cpu==2.20.*", "--label", label,
               "--model", "dense", "--strategy", "default", "--no-fork", "--results", str(out / "res"), "--markdown", str(out / f"{label}.md")])
    print(label, rc)
