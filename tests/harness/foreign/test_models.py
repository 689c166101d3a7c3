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


class _FakeTorch:
    """Just what :func:`first_device` reads of a PyTorch without CUDA."""

    __version__ = "2.14.1+cpu"

    class cuda:
        @staticmethod
        def is_available() -> bool:
            return False

    class version:
        cuda = None

    @staticmethod
    def device(name: str) -> str:
        return name


def test_torch_without_cuda_is_no_gpu_and_the_cpu_still_runs():
    from harness.foreign.torch_models import first_device
    from harness.foreign.trainer import NoGpu

    with pytest.raises(
        NoGpu, match=r"torch found no GPU: .*2\.14\.1\+cpu.*a CPU build.*would run on the CPU"
    ):
        first_device(_FakeTorch, "gpu")
    assert first_device(_FakeTorch, "cpu") == "cpu"


def test_jax_asked_for_a_gpu_it_lacks_is_no_gpu(jax_without_a_gpu):
    jax = jax_without_a_gpu
    from harness.foreign.jax_models import first_device
    from harness.foreign.trainer import NoGpu

    with pytest.raises(NoGpu, match=r"jax found no GPU: .*would run on the CPU"):
        first_device(jax, "gpu")
    assert first_device(jax, "cpu").platform == "cpu"
