"""A TensorFlow cell with a co-tenant from another framework: the TensorFlow worker and one
``python -m harness.foreign`` process on the same devices, both taking the turns of the cell's
group instance (:mod:`harness.launch.instances.turns` grants them alone and together; docs/how-to/co-tenants.md).

The co-tenant runs only inside a group instance; elsewhere (``verify``) the TensorFlow side runs
alone. A co-tenant that fails stops the cell: the TensorFlow worker is killed at once (it would
wait for turns forever) and the row carries the co-tenant's own error."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from harness.contract.events import Event, EventLine
from harness.contract.job import WorkerOptions
from harness.contract.tenant import TenantJob
from harness.contract.turns import MEMBER_ENV, TURNS_ENV
from harness.launch.cells.single import run_worker
from harness.launch.system.platform import installed_version
from harness.launch.system.process import (
    POLL_S,
    Deadline,
    Phase,
    Process,
    harness_path,
    instance_processes,
    kill_live,
)
from harness.spec.cell import Cell
from harness.spec.frameworks import Framework, TenantEnv, framework, tenant_key

TENANT_EXIT_S = 10.0
"""Seconds a co-tenant may take to exit after the cell's end before it is stopped."""


def tenant_job(cell: Cell, options: WorkerOptions, member: str) -> TenantJob:
    """The co-tenant of ``cell`` as member ``member``: the same model at the cell's examples per
    update, on the cell's kind of device."""
    return TenantJob(
        framework=cell.tenant_framework,
        model=cell.model,
        batch=cell.effective_batch,
        device="gpu" if options.platform.device_kind == "gpu" else "cpu",
        tenant_key=tenant_key(member, cell.tenant_framework),
        seed=options.settings.seed,
    )


def tenant_env(f: Framework) -> TenantEnv:
    """The co-tenant's environment relative to ours: the settings its installed release accepts (its
    version from its distributions' metadata, never by importing it; "" when none is found), and
    the inherited variables it must not get (TensorFlow's ``XLA_FLAGS`` for JAX)."""
    version = next((v for d in f.distributions if (v := installed_version(d))), "")
    return f.process_env(version, os.environ)


def start_tenant(job: TenantJob, options: WorkerOptions, folder: Path, name: str) -> Process:
    """``python -m harness.foreign JOB`` with the turns channel, the GPU settings its framework's
    installed release accepts (less what it must not inherit) and the run's (``ab``: the side's)
    variables; its log beside the workers'."""
    path = folder / "tenant-job.json"
    path.write_text(job.to_json(), encoding="utf-8")
    settings = tenant_env(framework(job.framework))
    env = {**settings.variables, **dict(options.env)}
    if options.python:  # another interpreter finds this harness through PYTHONPATH
        env["PYTHONPATH"] = harness_path(env)
    return Process(
        ["-m", "harness.foreign", str(path)],
        env,
        options.log_dir / f"{name}.log",
        folder / "tenant-events.jsonl",
        deadline=Deadline(Phase.CELL, float("inf")),
        python=options.python,
        unset=settings.removed,
    )


def _stop_partner(tenant: Process, stopped: set[int]) -> None:
    """SIGKILL the TensorFlow processes of the co-tenant's member (its channel and key) not yet in
    ``stopped`` (then added), so that a cell whose co-tenant failed ends now rather than at the
    TensorFlow worker's deadline."""
    member = instance_processes(tenant.env.get(TURNS_ENV, "")).get(tenant.env.get(MEMBER_ENV, ""), [])
    stopped.update(kill_live([pid for pid in member if pid not in stopped and pid != tenant.proc.pid]))


def _watch(tenant: Process, done: threading.Event) -> None:
    """Until ``done``: once the co-tenant has exited with an error, stop its partner, and each one
    that appears after (a co-tenant that fails at once, e.g. for want of a GPU, can exit before the
    TensorFlow worker has started)."""
    stopped: set[int] = set()
    while not done.is_set():
        code = tenant.proc.poll()
        if code == 0:
            return
        if code is not None:
            _stop_partner(tenant, stopped)
        done.wait(POLL_S)


def run_with_tenant(cell: Cell, options: WorkerOptions, name: str) -> Iterator[EventLine]:
    """The events of the TensorFlow worker of ``cell``, with its co-tenant from another framework
    beside it in a group instance; a co-tenant that failed turns the cell's end into its failure."""
    env = dict(options.env)
    if TURNS_ENV not in env:
        yield from run_worker(cell, options, name)
        return
    label = framework(cell.tenant_framework).label
    with tempfile.TemporaryDirectory(prefix="harness-tenant-") as folder:
        tenant = start_tenant(
            tenant_job(cell, options, env.get(MEMBER_ENV, cell.id)),
            options,
            Path(folder),
            f"{name}-{cell.tenant_framework}",
        )
        done = threading.Event()
        watcher = threading.Thread(target=_watch, args=(tenant, done), daemon=True)
        watcher.start()
        try:
            for ev in run_worker(cell, options, name):
                if ev["event"] == Event.FAILED and tenant.proc.poll() not in (None, 0):
                    ev = {
                        **ev,
                        "reason": f"the {label} co-tenant failed: {tenant.failure('already exited', label)}",
                    }
                yield ev
        finally:
            done.set()
            tenant.wait(TENANT_EXIT_S)  # it exits by itself after its finishing reply
            tenant.stop()  # SIGTERM, then SIGKILL, if it did not; always leaves the live registry
