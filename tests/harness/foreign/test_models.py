"""The co-tenant's models in JAX and PyTorch: the same FLOPs per example as the suite counts for the
TensorFlow models, a step that trains (the loss falls on a fixed batch pool), one synced step at a time."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from harness.contract.tenant import TenantJob
from harness.spec.models import cnn_layers, dense_layers, training_flops

EXPECTED = {"cnn": training_flops(cnn_layers()), "dense": training_flops(dense_layers())}


def _job(framework: str, model: str) -> TenantJob:
    return TenantJob(
        framework=framework, model=model, batch=16, device="cpu", tenant_key="k", learning_rate=0.05
    )


@pytest.mark.parametrize("model", ["cnn", "dense"])
def test_jax_counts_the_flops_the_suite_counts(model):
    pytest.importorskip("jax")
    from harness.foreign.jax_models import JaxTrainer

    trainer = JaxTrainer(_job("jax", model))
    assert trainer.flops_per_example() == EXPECTED[model]


TORCH_CHECK = """
import json, sys
from harness.contract.tenant import TenantJob
from harness.foreign.torch_models import TorchTrainer
out = {}
for model in ("cnn", "dense"):
    trainer = TorchTrainer(TenantJob("torch", model, 16, "cpu", "k", learning_rate=0.05))
    trainer.step()
    first = trainer.loss()
    for _ in range(60):
        trainer.step()
    out[model] = [trainer.flops_per_example(), first, trainer.loss(), trainer.device_name()]
out["tensorflow imported"] = "tensorflow" in sys.modules
print(json.dumps(out))
"""


@pytest.mark.process  # in a process of its own, as the co-tenant runs (importing PyTorch runs ldconfig)
def test_torch_counts_the_flops_the_suite_counts_and_trains():
    if importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed (pip install -e '.[torch]')")
    proc = subprocess.run([sys.executable, "-c", TORCH_CHECK], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for model in ("cnn", "dense"):
        flops, first, last, device = out[model]
        assert flops == EXPECTED[model]
        assert last < first and device == "cpu"
    assert out["tensorflow imported"] is False


def test_jax_steps_train():
    pytest.importorskip("jax")
    from harness.foreign.main import TRAINERS

    trainer = TRAINERS["jax"](_job("jax", "dense"))
    trainer.step()
    first = trainer.loss()
    for _ in range(60):
        trainer.step()
    assert trainer.loss() < first
    assert trainer.device_name().startswith("cpu")
