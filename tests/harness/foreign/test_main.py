"""The co-tenant's entry point: a co-tenant asked for a GPU that trains elsewhere fails with one line
saying so (the parent quotes the log's tail in the row), never with a CPU figure."""

from __future__ import annotations

import pytest

from harness.contract.tenant import TENANT_FAULT_ENV, TenantJob
from harness.foreign import main as foreign_main
from harness.foreign.trainer import ForeignTrainer


class OnTheCpu(ForeignTrainer):
    """A framework that fell back to the CPU without raising."""

    version, platform = "0.0", "cpu"

    def __init__(self, job: TenantJob) -> None:
        pass

    def _update(self, batch: int) -> float:
        return 0.0

    def device_name(self) -> str:
        return "cpu:0"

    def flops_per_example(self) -> int:
        return 1


def _job_file(tmp_path, framework: str = "jax", device: str = "gpu") -> str:
    path = tmp_path / "job.json"
    path.write_text(TenantJob(framework, "dense", 8, device, "k").to_json(), encoding="utf-8")
    return str(path)


def test_a_co_tenant_on_the_cpu_when_a_gpu_was_asked_fails_with_the_reason(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(foreign_main.TRAINERS, "jax", OnTheCpu)
    assert foreign_main.main([_job_file(tmp_path)]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == "error: jax found no GPU: it trains on cpu:0 (it would run on the CPU)"


@pytest.mark.usefixtures("jax_without_a_gpu")
def test_jax_without_a_gpu_backend_fails_in_its_own_words(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(TENANT_FAULT_ENV, "gpu")  # a GPU cell, whatever the job file says
    assert foreign_main.main([_job_file(tmp_path, device="cpu")]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: jax found no GPU: ") and last.endswith("(it would run on the CPU)")
    assert "gpu" in last.removeprefix("error: jax found no GPU")
