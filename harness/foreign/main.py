"""``python -m harness.foreign JOB``: build the model in its framework, take the first step
(compile), count its FLOPs, then take the turns the coordinator grants (:mod:`harness.foreign.serve`).

Any error ends the process with its traceback in the log, which the parent quotes in the cell's row
(an out-of-memory error on a GPU included). A co-tenant asked for a GPU that has none (JAX falls back
to the CPU when its GPU plugin fails to start) ends with one line saying so, last in its log, never
with a CPU figure for a GPU cell."""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.contract.tenant import TENANT_FAULT_ENV, TenantFacts, TenantJob
from harness.foreign.serve import connect, serve
from harness.foreign.trainer import ForeignTrainer, NoGpu, check_device

TRAINERS: dict[str, Callable[[TenantJob], ForeignTrainer]] = {
    "jax": lambda job: importlib.import_module("harness.foreign.jax_models").JaxTrainer(job),
    "torch": lambda job: importlib.import_module("harness.foreign.torch_models").TorchTrainer(job),
}
"""Framework name (:data:`harness.spec.frameworks.FRAMEWORKS`) -> its trainer, imported lazily."""


def facts_of(job: TenantJob, trainer: ForeignTrainer, compile_s: float) -> TenantFacts:
    """What the finishing reply reports; a FLOP count that fails is said, not guessed."""
    facts: TenantFacts = {
        "framework": job.framework,
        "version": trainer.version,
        "device": trainer.device_name(),
        "compile_s": compile_s,
    }
    try:
        facts["flops_per_example"] = trainer.flops_per_example()
    except Exception as e:  # noqa: BLE001 - the count is a check; the throughput stands without it
        facts["flops_per_example"] = None
        facts["flops_note"] = f"count failed: {type(e).__name__}: {e}"
    return facts


def main(argv: Sequence[str]) -> int:
    job = TenantJob.from_json(Path(argv[0]).read_text(encoding="utf-8"))
    fault = os.environ.get(TENANT_FAULT_ENV)
    if fault == "gpu":
        job = dataclasses.replace(job, device="gpu")
    try:
        trainer = TRAINERS[job.framework](job)
        check_device(job, trainer)
        t0 = time.perf_counter()
        trainer.step()
        compile_s = time.perf_counter() - t0
        if fault == "startup":
            raise RuntimeError(f"planted co-tenant failure ({TENANT_FAULT_ENV}=startup)")
        facts = facts_of(job, trainer, compile_s)
        serve(trainer, connect(), job.tenant_key, facts)
    except NoGpu as e:  # the framework's own lines about its GPU stay above, in the log's tail
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 1
    except Exception:  # noqa: BLE001 - the parent reads the traceback from the log
        traceback.print_exc()
        return 1
    return 0
