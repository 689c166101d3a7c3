"""The suite's MNIST models in PyTorch, trained with plain SGD on a fixed pool of synthetic batches.

Layer for layer as :mod:`harness.worker.training.models` builds them in Keras (3x3 valid convolutions
with ReLU, 2x2 max pooling, logits and cross-entropy), in PyTorch's NCHW layout. FLOPs are counted
by PyTorch's own ``FlopCounterMode`` over one update (2 per multiply-add of matrix products and
convolutions, the TensorFlow side's convention)."""

from __future__ import annotations

import os
from typing import Any

from harness.contract.tenant import TenantJob
from harness.foreign.trainer import CLASSES, POOL_BATCHES, ForeignTrainer, no_gpu


def build_model(nn: Any, model: str) -> Any:
    """The model as an ``nn.Sequential``."""
    if model == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(5 * 5 * 64, CLASSES),
        )
    if model == "dense":
        return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 128), nn.ReLU(), nn.Linear(128, CLASSES))
    raise ValueError(f"no PyTorch version of model {model!r}; expected cnn or dense")


def first_device(torch: Any, kind: str) -> Any:
    """PyTorch's first device of ``kind`` (``gpu`` or ``cpu``); :class:`NoGpu` when a GPU is asked
    for and CUDA is not available to PyTorch (a CPU build, or no driver)."""
    if kind != "gpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise no_gpu(
            "torch",
            f"torch.cuda.is_available() is False (PyTorch {torch.__version__}, "
            f"built for CUDA {torch.version.cuda or 'none: a CPU build'})",
        )
    return torch.device("cuda:0")


class TorchTrainer(ForeignTrainer):
    """One SGD update per :meth:`step` (eager), synchronised with the device."""

    def __init__(self, job: TenantJob) -> None:
        import torch

        self.torch, self.job = torch, job
        self.version = torch.__version__
        # as many threads as the CPUs this process may use (TensorFlow's default), not PyTorch's
        # physical-core count
        torch.set_num_threads(len(os.sched_getaffinity(0)))
        self.device = first_device(torch, job.device)
        self.platform = "gpu" if self.device.type == "cuda" else "cpu"
        torch.manual_seed(job.seed)
        self.model = build_model(torch.nn, job.model).to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=job.learning_rate)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        generator = torch.Generator().manual_seed(job.seed + 1)
        self.xs = torch.rand((POOL_BATCHES, job.batch, 1, 28, 28), generator=generator).to(self.device)
        self.ys = torch.randint(0, CLASSES, (POOL_BATCHES, job.batch), generator=generator).to(self.device)

    def _update(self, batch: int) -> Any:
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model(self.xs[batch]), self.ys[batch])
        loss.backward()
        self.optimizer.step()
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)
        return loss

    def device_name(self) -> str:
        if self.device.type == "cuda":
            return f"cuda:0 {self.torch.cuda.get_device_name(0)}"
        return "cpu"

    def flops_per_example(self) -> int:
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
        with counter:
            self._update(self._batch)
        return int(counter.get_total_flops()) // self.job.batch
