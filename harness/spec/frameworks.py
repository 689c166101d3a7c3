"""Co-tenants from other frameworks: one descriptor per framework that can train beside a
TensorFlow cell (``--tenant-framework``; what is measured: docs/how-to/co-tenants.md). Pure data.

The co-tenant's process environment is the parent's, less what the descriptor says it must not
inherit, plus the settings its installed release accepts (:meth:`Framework.process_env`): the
parent reads that release from package metadata, never by importing the framework."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

NONE = "none"
"""The axis value of a cell with no co-tenant from another framework."""

Release = tuple[int, ...]
"""A release's numbers, e.g. (0, 4, 32)."""


def release(version: str) -> Release | None:
    """The release numbers a version string starts with ("0.4.32" -> (0, 4, 32), "2.9.0+cu130" ->
    (2, 9, 0), "0.5.0.dev20250101" -> (0, 5, 0)); None when it starts with none ("" included)."""
    found = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(part) for part in found.group().split(".")) if found else None


def _compare(a: Release, b: Release) -> int:
    """-1, 0 or 1 as ``a`` is older than, the same as or newer than ``b`` ((2, 9) == (2, 9, 0))."""
    width = max(len(a), len(b))
    pa, pb = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    return (pa > pb) - (pa < pb)


@dataclass(frozen=True)
class EnvSetting:
    """A variable a co-tenant process gets (``name`` = ``value``, and why), for the framework's
    releases from ``since`` (inclusive) to ``until`` (exclusive); None: no bound. A version that
    cannot be read counts as the newest."""

    name: str
    value: str
    why: str
    since: Release | None = None
    until: Release | None = None

    def applies(self, version: Release | None) -> bool:
        """Whether a process of release ``version`` gets this variable."""
        if version is None:
            return self.until is None
        after = self.since is None or _compare(version, self.since) >= 0
        return after and (self.until is None or _compare(version, self.until) < 0)


@dataclass(frozen=True)
class Unset:
    """An inherited variable a co-tenant process must not get, and why. ``path_flag``: a flag of its
    value (``--flag=DIR``) whose directory's entries leave ``PATH`` too (the tools set up beside it)."""

    name: str
    why: str
    path_flag: str = ""


@dataclass(frozen=True)
class TenantEnv:
    """A co-tenant process's environment, relative to the parent's: ``variables`` set (replacing the
    inherited values), ``removed`` the inherited names it does not get."""

    variables: dict[str, str]
    removed: tuple[str, ...]


def path_without(path: str, roots: Sequence[str]) -> str:
    """``path`` (``os.pathsep``-separated) without its entries inside any of ``roots``."""
    tops = [posixpath.normpath(r) for r in roots if r]
    kept = [
        entry
        for entry in path.split(os.pathsep)
        if not any(
            (e := posixpath.normpath(entry)) == top or e.startswith(top.rstrip("/") + "/") for top in tops
        )
    ]
    return os.pathsep.join(kept)


def flag_values(value: str, flag: str) -> tuple[str, ...]:
    """The values of ``flag`` in a flags string such as XLA_FLAGS (``--flag=V``, space-separated)."""
    return tuple(part.split("=", 1)[1] for part in value.split() if part.startswith(f"{flag}="))


@dataclass(frozen=True)
class Framework:
    """A framework a co-tenant can be written in: ``module``, whose presence says it is installed
    (looked up by the parent, never imported); ``extra``, the optional dependency group installing it;
    ``distributions``, whose first one found decides the settings by its version; ``settings``, the
    variables (each for the releases that accept it) that make it share one GPU with TensorFlow, which
    grows its memory on demand; ``unset``, inherited variables its process must not get."""

    name: str
    label: str
    module: str
    extra: str
    distributions: tuple[str, ...]
    settings: tuple[EnvSetting, ...]
    unset: tuple[Unset, ...] = ()
    models: tuple[str, ...] = ("cnn", "dense")
    """The models written in this framework (the suite's MNIST models, layer for layer)."""

    def env(self, version: str) -> dict[str, str]:
        """The variables a process of installed ``version`` gets (only those its release accepts)."""
        found = release(version)
        return {s.name: s.value for s in self.settings if s.applies(found)}

    def removed(self, version: str) -> tuple[str, ...]:
        """The inherited names a process of ``version`` does not get: :attr:`unset`, and every other
        spelling of a setting (an exported deprecated name beside the new one can stop it)."""
        kept = self.env(version)
        names = [u.name for u in self.unset] + [s.name for s in self.settings if s.name not in kept]
        return tuple(dict.fromkeys(names))

    def process_env(self, version: str, inherited: Mapping[str, str]) -> TenantEnv:
        """The co-tenant's environment for installed ``version``, given the parent's ``inherited``
        one: :meth:`env` set, :meth:`removed` removed, and ``PATH`` without the directories that an
        unset variable's ``path_flag`` names."""
        variables = self.env(version)
        roots = [
            d for u in self.unset if u.path_flag for d in flag_values(inherited.get(u.name, ""), u.path_flag)
        ]
        path = inherited.get("PATH")
        if roots and path is not None and (kept := path_without(path, roots)) != path:
            variables["PATH"] = kept
        return TenantEnv(variables, self.removed(version))


JAX_MEM_RENAME: Release = (0, 4, 32)
"""The first jaxlib that reads ``XLA_CLIENT_MEM_FRACTION`` (XLA's openxla/xla#16457, in jaxlib
0.4.32's XLA); it refuses it together with ``XLA_PYTHON_CLIENT_MEM_FRACTION`` (ValueError, then
JAX falls back to the CPU: seen with 0.10 and 0.11)."""

JAX = Framework(
    "jax",
    "JAX",
    "jax",
    "jax",
    # jaxlib's xla_client reads the variables (its generate_pjrt_gpu_plugin_options)
    ("jaxlib", "jax"),
    (
        # JAX preallocates 75 % of a GPU's memory at its first computation; TensorFlow (memory growth
        # on) would then find almost none
        EnvSetting(
            "XLA_PYTHON_CLIENT_PREALLOCATE", "false", "allocate on demand, not 75 % of the GPU at start"
        ),
        # on demand, its BFC allocator keeps a limit of 75 % of the GPU unless a fraction is set: one
        # name, never both (JAX's "GPU memory allocation" page)
        EnvSetting(
            "XLA_CLIENT_MEM_FRACTION", "0.45", "at most 45 % of the GPU's memory", since=JAX_MEM_RENAME
        ),
        EnvSetting(
            "XLA_PYTHON_CLIENT_MEM_FRACTION",
            "0.45",
            "at most 45 % of the GPU's memory (the name before jaxlib 0.4.32)",
            until=JAX_MEM_RENAME,
        ),
    ),
    (
        Unset(
            "XLA_FLAGS",
            "TensorFlow's XLA flags (a CUDA 12 --xla_gpu_cuda_data_dir) would steer JAX's XLA too; "
            "that directory's ptxas leaves PATH with it",
            path_flag="--xla_gpu_cuda_data_dir",
        ),
    ),
)
TORCH = Framework(
    "torch",
    "PyTorch",
    "torch",
    "torch",
    ("torch",),
    (
        # PyTorch's caching allocator grows on demand already; expandable segments return memory in
        # smaller pieces and fragment less when another process allocates beside it. The option
        # came in 2.1 (2.0 stops at its first CUDA allocation: "Unrecognized CachingAllocator
        # option"); PYTORCH_ALLOC_CONF, the newer name, ignored it for CUDA in 2.9.1
        # (pytorch/pytorch#183387), while the old name still works everywhere (recent releases warn)
        EnvSetting(
            "PYTORCH_CUDA_ALLOC_CONF",
            "expandable_segments:True",
            "grow segments rather than cache large blocks",
            since=(2, 1),
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
