"""Co-tenants from other frameworks: one descriptor per framework that can train beside a
TensorFlow cell (``--tenant-framework``). Pure data.

A cell with ``tenant_framework`` F is the TensorFlow cell with one process of framework F training
the same model (same layers, batch, optimizer, synthetic data) on the same devices. The two
processes take turns with the machine in three ways, in balanced blocks: TensorFlow alone, F
alone, and both at once (:mod:`harness.launch.turns`), so each side's throughput alone and
together comes from the same live processes.
"""

from __future__ import annotations

from dataclasses import dataclass

NONE = "none"
"""The axis value of a cell with no co-tenant from another framework."""


@dataclass(frozen=True)
class Framework:
    """A framework a co-tenant can be written in.

    ``module``: the top-level module whose presence says the framework is installed (looked up,
    never imported, by the parent); ``extra``: the optional dependency group that installs it;
    ``gpu_env``: the variables that make it share one GPU with TensorFlow (which grows its own
    memory on demand), each with why."""

    name: str
    label: str
    module: str
    extra: str
    gpu_env: tuple[tuple[str, str, str], ...]
    models: tuple[str, ...] = ("cnn", "dense")
    """The models written in this framework (the suite's MNIST models, layer for layer)."""

    def install_hint(self) -> str:
        """What a user types to install it."""
        return f"pip install -e '.[{self.extra}]' (or pip install {self.module})"

    def env(self) -> dict[str, str]:
        """The co-tenant process's variables."""
        return {name: value for name, value, _why in self.gpu_env}


JAX = Framework(
    "jax",
    "JAX",
    "jax",
    "jax",
    (
        # JAX preallocates 75 % of a GPU's memory at its first computation; TensorFlow (memory growth
        # on) would then find almost none
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "false", "allocate on demand, not 75 % of the GPU at start"),
        # on demand, its BFC allocator keeps a limit of 75 % of the GPU unless a fraction is set; the
        # new name and the deprecated one (JAX's "GPU memory allocation" page)
        ("XLA_CLIENT_MEM_FRACTION", "0.45", "at most 45 % of the GPU's memory"),
        ("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.45", "the same, for JAX releases before the rename"),
    ),
)
TORCH = Framework(
    "torch",
    "PyTorch",
    "torch",
    "torch",
    (
        # PyTorch's caching allocator grows on demand already; expandable segments return memory in
        # smaller pieces and fragment less when another process allocates beside it
        (
            "PYTORCH_CUDA_ALLOC_CONF",
            "expandable_segments:True",
            "grow segments rather than cache large blocks",
        ),
    ),
)

FRAMEWORKS: dict[str, Framework] = {f.name: f for f in (JAX, TORCH)}
"""Framework name -> descriptor (the ``tenant_framework`` axis's values besides ``none``)."""


def framework(name: str) -> Framework:
    """The descriptor of ``name`` (KeyError naming the accepted ones)."""
    try:
        return FRAMEWORKS[name]
    except KeyError:
        raise KeyError(f"unknown framework {name!r}; expected one of: {', '.join(FRAMEWORKS)}") from None


SEPARATOR = "~"
"""Joins a member's key and a framework name: the co-tenant's key in a group's turns."""
TOGETHER = "+together"
"""Suffix of a side's key for the turns in which both sides ran at once."""


def tenant_key(key: str, name: str) -> str:
    """The key of member ``key``'s co-tenant of framework ``name`` (its turns alone)."""
    return f"{key}{SEPARATOR}{name}"


def together_key(key: str) -> str:
    """The key of one side's turns taken with the other side running (``key`` a side's key)."""
    return f"{key}{TOGETHER}"


def member_of(key: str) -> str:
    """The member key a turn or channel key belongs to (itself for a member's own)."""
    return key.split(SEPARATOR, 1)[0].removesuffix(TOGETHER)


def overlapping(key: str) -> bool:
    """Whether the turns of ``key`` ran at the same time as another key's (a co-tenant's turns
    taken together, timed inside the TensorFlow side's window): wall time counts them once."""
    return SEPARATOR in key and key.endswith(TOGETHER)
