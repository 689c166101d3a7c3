"""Bad input, tried systematically: a property-based test over every command's flags and values.

For each command of :func:`harness.commands.build_parser`, Hypothesis builds command lines from the
parser's own options (so a new flag is covered without touching this file): the accepted values of
each axis (:data:`harness.spec.axes.AXES`) and of each option's choices, near misses of them
(typos, case, whitespace, look-alike unicode, empty), numbers (0, negative, huge, fractions, nan,
inf), comma lists with duplicates and empty items, repeated flags, unknown and abbreviated flags,
and paths (a missing folder, an empty one, a small results folder and its pack, a file where a
folder is expected, a folder where a file is). ``main(argv)`` runs in this process; ``run``, ``verify``,
``ab`` and ``doctor`` get ``--dry-run``, so every check before their first process runs and
nothing is started. The property:

- the exit code is 0 (accepted; ``compare`` may also say 1 or 3: findings about
  accepted input) or 2 (bad input);
- nothing is a traceback; no subprocess is started and TensorFlow is never imported;
- on 2 from argparse, stderr is its usage lines and one ``error:`` line that names the offending
  flag or value (argparse's own wording: "invalid choice: 'x' (choose from ...)", "unrecognized
  arguments: ...");
- on 2 from a :class:`~harness.errors.HarnessError`, stderr is one line ``error: ...`` naming the
  value received and what is expected.

The platform (what ``nvidia-smi`` lists) and ``TF_CONFIG`` are drawn too, so the GPU and cluster
checks are tried without a GPU or a cluster. stdout is strict UTF-8, as on a terminal. What runs
after every check is made cheaper where it is slow: figures are built but not rendered (their
files hold placeholder bytes); re-reading the sandbox's results folder (its tables, and each of its files
``check`` reads) gives the first answer again. Examples are derandomized (settings profile
``bad-input``: CI sees the same ones every run); ``BAD_INPUT_EXAMPLES`` changes their number per
command, ``BAD_INPUT_MESSAGES=FILE`` collects every error line for reading.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness.commands as commands
import harness.commands.report as report_command
import harness.launch.system.platform as platform_module
import harness.results.check as check_module
from harness.analysis.comparisons import hardware_figure
from harness.analysis.run import plots
from harness.commands import COMMANDS, build_parser, main
from harness.contract.columns import flatten, unflatten
from harness.contract.records import CellRow
from harness.launch.system.platform import NvidiaGpus
from harness.launch.versions import builds as builds_module
from harness.launch.versions.ab import MODES
from harness.results import history, store
from harness.results.measurement import cell_row
from harness.results.pack import FORMAT, VERSION, Manifest, open_pack, stored_runs, write_pack
from harness.results.store import RunFiles
from harness.spec.axes import (
    AXES,
    AXIS_BY_NAME,
    COMMUNICATION_NAMES,
    CROSS_DEVICE_OPS_NAMES,
    REPLICAS_TO_MAX,
)
from harness.spec.cell import Cell
from harness.spec.protocol import Protocol
from harness.spec.sweeps import SWEEPS
from tests.harness.commands.test_predict import BASE as PREDICT_BASE
from tests.support.figures import save_unrendered

EXAMPLES = int(os.environ.get("BAD_INPUT_EXAMPLES", "150"))
settings.register_profile(
    "bad-input",
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
BAD_INPUT = settings.get_profile("bad-input")

SUBPARSERS: dict[str, argparse.ArgumentParser] = dict(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]

OK_CODES = {"compare": {0, 1, 3}}
"""Exit codes of accepted input besides 0: compare's regression (1) and short history (3)."""

# ------------------------------------------------------------------------------------------------
# Values
# ------------------------------------------------------------------------------------------------

NUMBERS = (
    "0",
    "1",
    "2",
    "3",
    "-1",
    "-0",
    "2147483648",
    "1" + "0" * 30,
    "0.5",
    "1.5",
    "1e-9",
    "1e308",
    "1e400",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-0.0",
    "0x10",
    "1_000",
    " 3",
    "٣",
    "",
)
"""Numbers as typed: zero, negative, huge, fractions, nan, inf, odd spellings (Python's int()
takes '1_000' and Arabic-Indic digits), empty."""

WORDS = (
    "",
    " ",
    ",",
    ",,",
    "none",
    "None",
    "null",
    "true",
    "-",
    "--",
    "x",
    "é",
    "名前",
    "a" * 300,
    "$HOME",
    "~",
    "../..",
    "\udcff",
    "1..max",
    "max",
    "auto",
    "default",
)
"""Words that are nobody's value: empties, separators, unicode (and an undecodable byte as
Python passes it in argv), a very long one, shell-isms."""

KNOWN_TOKENS = tuple(sorted({*SWEEPS, *MODES, *(c for a in AXES for c in a.choices)}))
"""Every named value the harness accepts somewhere (a new flag with no table entry draws these
and their near misses)."""

LOOKALIKE = str.maketrans({"a": "а", "c": "с", "e": "е", "o": "о", "p": "р", "x": "х"})  # noqa: RUF001 -- look-alikes on purpose
"""Latin letters to their Cyrillic look-alikes."""


@st.composite
def near_miss(draw: st.DrawFn, word: str) -> str:
    """``word`` changed a little: a typo, case, whitespace, unicode, separators."""
    i = draw(st.integers(0, max(len(word) - 1, 0)))
    return draw(
        st.sampled_from(
            (
                word[:i] + word[i + 1 :],  # dropped letter
                word[:i] + word[i : i + 1] * 2 + word[i + 1 :],  # doubled letter
                word[:i] + word[i + 1 : i + 2] + word[i : i + 1] + word[i + 2 :],  # swapped letters
                word.upper(),
                word.title(),
                f" {word} ",
                word + "\u200b",
                word.translate(LOOKALIKE),
                word.replace("_", "-"),
                word.replace("_", ""),
                word + "s",
                word + "=",
                "=" + word,
                word + ",",
                "," + word,
                f"{word},{word}",
                f"'{word}'",
                word + "\t",
            )
        )
    )


@dataclass(frozen=True)
class Domain:
    """What may follow a flag: ``good`` values (accepted on their own) and ``bad`` ones."""

    good: st.SearchStrategy[str]
    bad: st.SearchStrategy[str]

    def any(self) -> st.SearchStrategy[str]:
        return st.one_of(self.good, self.good, self.bad)


def words(accepted: tuple[str, ...]) -> Domain:
    """Accepted words; near misses of them and words that are nobody's value."""
    accepted = accepted or KNOWN_TOKENS
    return Domain(
        st.sampled_from(accepted),
        st.one_of(st.sampled_from(accepted).flatmap(near_miss), st.sampled_from(WORDS + NUMBERS)),
    )


def counts(good: tuple[str, ...]) -> Domain:
    """Small integers; near misses of them and odd numbers."""
    return Domain(
        st.sampled_from(good), st.one_of(st.sampled_from(good).flatmap(near_miss), st.sampled_from(NUMBERS))
    )


def comma_list(item: Domain) -> Domain:
    """1 to 3 items joined by commas (duplicates happen); bad lists mix in bad items, empty items
    and spaces."""

    def joined(items: st.SearchStrategy[str], seps: tuple[str, ...]) -> st.SearchStrategy[str]:
        return st.tuples(st.lists(items, min_size=1, max_size=3), st.sampled_from(seps)).map(
            lambda t: t[1].join(t[0])
        )

    return Domain(joined(item.good, (",",)), joined(item.any(), (",", ", ", ",,", " , ")))


def axis_domain(name: str) -> Domain:
    axis = AXIS_BY_NAME[name]
    if axis.kind is int:
        good = tuple(str(v) for v in range(max(axis.minimum, 1), axis.minimum + 3))
        return comma_list(counts(good + ((REPLICAS_TO_MAX, "max") if name == "replicas" else ())))
    return comma_list(words(axis.choices))


def numbers(kind: type) -> Domain:
    small = ("1", "2", "3", "5", "10", "30") if kind is int else ("0.02", "0.1", "0.5", "1", "3.5", "60")
    return Domain(st.sampled_from(small), st.sampled_from(NUMBERS + WORDS))


@dataclass(frozen=True, eq=False)
class Sandbox:
    """The folders and files the drawn paths point at (hashed by identity: :func:`domain` is
    cached per sandbox)."""

    root: Path
    empty: Path
    results: Path
    pack: Path
    """The runs of ``results``, packed (``python -m harness pack``)."""
    file: Path
    scratch: Path
    inputs: dict[str, tuple[str, ...]]
    """Files to read, by option dest: the good ones first, then broken ones (see :func:`_inputs`)."""

    def __repr__(self) -> str:
        return f"Sandbox({self.root})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # how Hypothesis prints a failing example
        p.text(repr(self))


def paths(dest: str, box: Sandbox, command: str) -> Domain:
    """Paths for an option by its role: a results folder to read, a file to read, or somewhere to
    write; each role's bad paths are missing, empty or of the wrong kind."""
    missing = str(box.root / "missing" / "deeper")
    wrong = (str(box.file / "sub"), "/proc/nope", "", "~nobody-here/x", str(box.root / "名前"))
    if dest == "results" and command == "pack":  # one folder, packed
        good, bad = (str(box.results),), (str(box.empty), missing, str(box.file), str(box.pack), *wrong)
    elif dest == "results":  # a folder or a pack file (the same runs: given with the folder, refused)
        good, bad = (str(box.results), str(box.pack)), (str(box.empty), missing, str(box.file), *wrong)
    elif dest == "out" and command == "pack":  # a pack file to write
        good = (str(box.scratch / "runs.tar.gz"), str(box.scratch / "new" / "runs.tar.gz"))
        bad = (str(box.scratch), str(box.file), str(box.scratch / "runs.zip"), ".tar.gz", *wrong)
    elif dest in box.inputs:
        good, bad = box.inputs[dest][:1], (*box.inputs[dest][1:], missing, str(box.empty), *wrong)
    elif dest in ("markdown", "csv"):
        good = (str(box.scratch / f"out.{dest}"), str(box.scratch / "new" / f"x.{dest}"))
        bad = (str(box.scratch), missing + "/", *wrong)
    else:  # a folder to write: out, figures
        good = (
            str(box.scratch / "out"),
            str(box.scratch / "new" / dest),
            missing,
            str(box.scratch / "\udcff"),
        )  # a name that is not UTF-8, as Python passes it
        bad = (str(box.file), *wrong)
    return Domain(st.sampled_from(good), st.sampled_from(bad))


PATH_DESTS = {
    "results",
    "out",
    "figures",
    "markdown",
    "csv",
    "prices",
    "json",
    "mnist_path",
    "a",
    "b",
    "candidate",
    "reference",
    "envs",
    "index",
}
"""Options whose value is a path (by dest); :func:`paths` draws them by role."""

NAMED = {
    "sweep": tuple(SWEEPS),
    "mode": tuple(MODES),
    "op": tuple(dict.fromkeys(CROSS_DEVICE_OPS_NAMES + COMMUNICATION_NAMES)),
}
"""Options the harness checks itself (no argparse choices), by dest: their accepted names."""

GOOD_SPECS = ("tensorflow-cpu==2.20.*", "tensorflow-cpu==2.21.*", "tensorflow-cpu>=2.20", "tf-nightly-cpu")
BAD_SPECS = ("tensorflow cpu", "==2.20", "", "tensorflow-cpu==2.30.*", "tensorflow-cpu===", "2.20")
_TAG = next(iter(builds_module.sys_tags()))
FAKE_INDEX = {
    dist: [(f"{dist.replace('-', '_')}-{v}-{_TAG}.whl", "2026-01-01") for v in versions]
    for dist, versions in {
        "tensorflow-cpu": ("2.19.0", "2.20.0", "2.21.0"),
        "tf-nightly-cpu": ("2.21.0.dev20250818", "2.21.0.dev20251001", "2.22.0.dev20260301"),
    }.items()
}
"""bisect's package index, offline: a few wheels' names as the simple repository lists them."""

GOOD_REFS = ("latest", "previous", "last:1", "last:2", "2026-01-01", "2026-01-01..2026-01-03", "20260102")
BAD_REFS = (
    "last:0",
    "last:9",
    "last:-1",
    "last:x",
    "last:",
    "2026-13-45",
    "2026-01-03..2026-01-01",
    "1999-01-01",
    "2026",
    "zzz",
    "",
    " ",
)
"""Run references (:mod:`harness.results.history`) of the sandbox's results: some name runs,
some are out of range or malformed."""


@functools.cache
def domain(action: argparse.Action, box: Sandbox, command: str) -> Domain:
    """What may follow ``action``'s flag, from what the parser says about it (a new option falls
    through to its choices, its type, or every known word). Built once per option: building
    Hypothesis strategies anew in every example cost more than drawing from them."""
    if action.dest in AXIS_BY_NAME and action.type is None and not action.choices:
        return axis_domain(action.dest)
    if action.dest in PATH_DESTS:
        return paths(action.dest, box, command)
    if action.choices:
        return words(tuple(map(str, action.choices)))
    if action.type in (int, float):
        return numbers(action.type)
    if action.dest in NAMED:
        return words(NAMED[action.dest])
    if action.metavar == "REF":
        return Domain(
            st.sampled_from(GOOD_REFS),
            st.one_of(st.sampled_from(BAD_REFS), st.sampled_from(GOOD_REFS).flatmap(near_miss)),
        )
    if action.metavar == "SPEC":
        return Domain(st.sampled_from(GOOD_SPECS), st.sampled_from(BAD_SPECS))
    if action.metavar == "K=V":
        return Domain(
            st.sampled_from(("TF_ENABLE_ONEDNN_OPTS=0", "A=1", "A=", "A=1=2", "é=ü")),
            st.sampled_from(("=1", "A", "", "=")),
        )
    if action.metavar in ("LIST", "N[,N...]"):
        return comma_list(counts(("1", "2", "3")))
    return words(KNOWN_TOKENS)


def long_flags(action: argparse.Action) -> list[str]:
    return [s for s in action.option_strings if s.startswith("--")]


def pick(values: Domain, how: str) -> st.SearchStrategy[str]:
    """``values``' good ones, bad ones, or either (``any``)."""
    return values.any() if how == "any" else getattr(values, how)


@st.composite
def option_text(draw: st.DrawFn, action: argparse.Action, values: Domain, how: str) -> list[str]:
    """One option as typed, its value ``good``, ``bad`` or ``any``; with ``any``, sometimes an
    abbreviation (argparse takes unique prefixes), ``--flag=value``, or the value left out."""
    flag = draw(st.sampled_from(long_flags(action)))
    chaos = how == "any"
    if chaos and draw(st.integers(0, 19)) == 0:
        flag = flag[: draw(st.integers(3, len(flag)))]
    if action.nargs == 0:
        return [flag]
    if action.nargs == "*":
        return [flag, *draw(st.lists(pick(values, how), max_size=3))]
    if chaos and draw(st.integers(0, 29)) == 0:
        return [flag]
    value = draw(pick(values, how))
    return [f"{flag}={value}"] if chaos and draw(st.integers(0, 4)) == 0 else [flag, value]


UNKNOWN = (
    "--modle",
    "--Model",
    "--model-name",
    "-m",
    "-x",
    "--",
    "---model",
    "--no-such-flag",
    "--dry_run",
    "extra",
    "—model",
)


@st.composite
def command_line(draw: st.DrawFn, command: str, box: Sandbox) -> list[str]:
    """argv for ``command``: its required options and a few others (repeats allowed), its
    positionals; ``--dry-run`` first where the command has it. A third of the lines have only good
    values, a third exactly one bad value, a third anything (with unknown flags, abbreviations,
    values left out)."""
    parser = SUBPARSERS[command]
    options = [
        a
        for a in parser._actions
        if long_flags(a) and not isinstance(a, argparse._HelpAction) and a.dest != "dry_run"
    ]
    positionals = [a for a in parser._actions if not a.option_strings]
    chosen = [a for a in options if a.required] + draw(st.lists(st.sampled_from(options), max_size=5))
    mode = draw(st.sampled_from(("good", "one bad", "any")))
    hows = ["any" if mode == "any" else "good"] * (len(chosen) + len(positionals))
    if mode == "one bad" and hows:
        hows[draw(st.integers(0, len(hows) - 1))] = "bad"
    argv = [command]
    if any(a.dest == "dry_run" for a in parser._actions):
        argv.append("--dry-run")
    for action, how in zip(chosen, hows, strict=False):  # hows also covers the positionals
        argv += draw(option_text(action, domain(action, box, command), how))
    for action, how in zip(positionals, hows[len(chosen) :], strict=True):
        if how != "any" or draw(st.integers(0, 19)):
            argv.append(draw(pick(domain(action, box, command), how)))
    if mode == "any" and draw(st.integers(0, 4)) == 0:
        argv.insert(draw(st.integers(1, len(argv))), draw(st.sampled_from(UNKNOWN)))
    return argv


# ------------------------------------------------------------------------------------------------
# The machine around the command: GPUs, TF_CONFIG
# ------------------------------------------------------------------------------------------------

GPUS = (
    NvidiaGpus(),
    NvidiaGpus(),
    NvidiaGpus(("0",)),
    NvidiaGpus(("0", "1")),
    NvidiaGpus(("MIG-a", "MIG-b"), mig=True),
)
"""What nvidia-smi lists: nothing (most often), one GPU, two, two MIG instances."""

TF_CONFIGS = (
    None,
    None,
    None,
    json.dumps({"cluster": {"worker": ["h:1", "h:2"]}, "task": {"type": "worker", "index": 0}}),
    json.dumps(
        {"cluster": {"chief": ["h:1"], "worker": ["h:2"], "ps": ["h:3"]}, "task": {"type": "ps", "index": 0}}
    ),
    "not json",
    "{}",
    json.dumps({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 5}}),
)


# ------------------------------------------------------------------------------------------------
# Guards: no process, no TensorFlow
# ------------------------------------------------------------------------------------------------


class Started(AssertionError):
    """A subprocess or a forbidden import was attempted."""


class _Blocker:
    """A meta-path finder that refuses TensorFlow, Keras and the worker package."""

    BLOCKED = ("tensorflow", "keras", "harness.worker")

    def __init__(self) -> None:
        self.attempts: list[str] = []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if any(name == b or name.startswith(b + ".") for b in self.BLOCKED):
            self.attempts.append(name)
            raise Started(f"imported {name}")
        return None


@contextlib.contextmanager
def no_tensorflow() -> Iterator[_Blocker]:
    """Hide TensorFlow, Keras and harness.worker from imports for the duration (another test in
    this process may have imported them: they are put back afterwards)."""
    roots = [b for b in _Blocker.BLOCKED if b in sys.modules]
    hidden = {
        k: sys.modules.pop(k)
        for k in list(sys.modules)
        if roots and any(k == b or k.startswith(b + ".") for b in roots)
    }
    blocker = _Blocker()
    sys.meta_path.insert(0, blocker)
    try:
        yield blocker
    finally:
        sys.meta_path.remove(blocker)
        sys.modules.update(hidden)


def _refuse_process(*args: Any, **kwargs: Any) -> Any:
    raise Started(f"subprocess started: {args[:1]}")


def _write_results(out: Path) -> None:
    """Three runs of two mirrored cells, two on one machine and one on another, and the all-reduce
    times predict needs."""
    base = {k: v for k, v in PREDICT_BASE.items() if k not in ("fingerprint", "run_id", "timestamp")}
    for k, (day, machine) in enumerate((("2026-01-01", "fp"), ("2026-01-02", "fp"), ("2026-01-03", "fp2"))):
        run_id = f"{day.replace('-', '')}T000000Z-{'abc'[k] * 6}"
        files = RunFiles(out, day, run_id)
        rows = (
            {
                "cell_id": "cnn/mirrored/r1w1",
                "replicas": 1,
                "cross_device_ops": "none",
                "effective_batch": 64,
                "examples_per_sec": 6400.0 + k,
            },
            {
                "cell_id": "cnn/mirrored[auto]/r2w1",
                "replicas": 2,
                "cross_device_ops": "auto",
                "effective_batch": 128,
                "examples_per_sec": 6000.0 + k,
                "examples_per_sec_ci_low": 5800.0,
                "examples_per_sec_ci_high": 6200.0,
            },
        )
        for i, row in enumerate(rows):
            files.write_row(
                i,
                unflatten(
                    CellRow,
                    {
                        **base,
                        **row,
                        "run_id": run_id,
                        "timestamp": f"{day}T00:00:00",
                        "fingerprint": machine,
                        "device_name": machine,
                        "machine": machine,
                    },
                ),
            )
        common = {
            "run_id": run_id,
            "timestamp": f"{day}T00:00:00",
            "strategy": "mirrored",
            "op": "auto",
            "replicas": 2,
            "workers": 1,
            "devices": 2,
            "status": "ok",
        }
        for i, (payload, nbytes, seconds) in enumerate(
            (
                ("bytes", 4096, 1.0e-4),
                ("bytes", 65536, 1.3e-4),
                ("bytes", 2**20, 6.0e-4),
                ("cnn", 4 * 34_826, 1.0e-3),
            )
        ):
            files.write_collective(i, {**common, "payload": payload, "bytes": nbytes, "time_s": seconds})


def _inputs(root: Path) -> dict[str, tuple[str, ...]]:
    """Files to read, by option: good ones and broken ones."""

    def write(name: str, text: str | bytes) -> str:
        path = root / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return str(path)

    cell = Cell(strategy="default")
    row = {
        **flatten(cell_row(cell, Protocol())),
        "status": "ok",
        "examples_per_sec": 1000.0,
        "fingerprint": "fp",
    }
    bench = {
        "datetime": "2026-01-03T00:00:00",
        "benchmarks": [{"name": "fidelity", "extra_info": {}}, {"name": "cell", "extra_info": row}],
    }
    partial = {
        **bench,
        "benchmarks": [
            {"name": "cell", "extra_info": {"cell_id": cell.id, "status": "ok", "examples_per_sec": 1000.0}}
        ],
    }
    json_files = (
        write("bench.json", json.dumps(bench)),
        write("no-rows.json", json.dumps({**bench, "benchmarks": bench["benchmarks"][:1]})),
        write("partial.json", json.dumps(partial)),
        write("bad.json", "{not json"),
        write("list.json", "[1, 2]"),
        write("no-list.json", json.dumps({"benchmarks": 3})),
        write("bad-date.json", json.dumps({**bench, "datetime": "yesterday"})),
        write("bad-extra.json", json.dumps({"benchmarks": [{"extra_info": 5}, 7]})),
        write("binary.json", b"\xff\xfe\x00"),
    )
    prices = (
        write("prices.csv", "machine,price_per_device_hour,purchase_price\nfp,1.5,1000\n"),
        write("prices.toml", '[machines."fp"]\nprice_per_device_hour = 1.5\n'),
        write("bad.csv", "machine,price_per_device_hour\nfp,cheap\n"),
        write("bad.toml", "[machines\n"),
        write("empty.csv", ""),
    )
    mnist = root / "mnist.npz"
    np.savez(mnist, x_train=np.zeros((4, 28, 28), np.uint8), y_train=np.zeros(4, np.int64))
    python = root / "python-not-executable"
    python.write_text("")
    return {
        "json": json_files,
        "prices": prices,
        "mnist_path": (str(mnist), write("not-mnist.npz", b"PK\x03\x04junk")),
        "a": (sys.executable, str(python)),
        "b": (sys.executable, str(python)),
        "candidate": ("tensorflow-cpu==2.21.*", str(python), "./no/python", ""),
        "reference": (sys.executable, str(python), "./no/python", " "),
    }


def _read_once(read: Any, folders: tuple[Path, ...]) -> Any:
    """``read(root, table)`` (:func:`harness.results.store.read`, through which every reading
    command reads a results table), reading the sandbox's own results ``folders`` (the folder and
    its pack as extracted; their tables never change) once: copies of the first answer. Reading
    the tables is most of a reading command's example (tens of ms, several tables a command). Any
    other folder is read every time."""
    cache: dict[tuple[Path, str], Any] = {}

    def cached(root: Any, table: str) -> Any:
        where = Path(root).absolute()
        if not any(d == where or d in where.parents for d in folders):
            return read(root, table)
        if (where, table) not in cache:
            cache[where, table] = read(root, table)
        return cache[where, table].copy()

    return cached


def _read_file_once(read_file: Any, results: Path) -> Any:
    """``check``'s ``read_file(path, schema)``, reading each file under the sandbox's own results
    folder once (``check`` reads every one, 6 ms each, in every example): the first answer (an
    Arrow table, immutable), or its error again. Files anywhere else are read every time."""
    cache: dict[tuple[Path, Any], Any] = {}

    def cached(path: Path, schema: Any) -> Any:
        where = Path(path).absolute()
        if results not in where.parents:
            return read_file(path, schema)
        key = (where, schema)
        if key not in cache:
            try:
                cache[key] = read_file(path, schema)
            except Exception as e:  # noqa: BLE001 -- a damaged file stays damaged: raised again
                cache[key] = e
        if isinstance(cache[key], Exception):
            raise cache[key]
        return cache[key]

    return cached


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """The sandbox every example runs in: its own working directory, fake GPUs, no TF_CONFIG or
    Slurm, subprocesses refused, figures built but not rendered (they draw after every check), the
    report's page not built."""
    root = tmp_path_factory.mktemp("bad-input")
    results = root / "results"
    _write_results(results)
    (root / "empty").mkdir()
    (root / "scratch").mkdir()
    (root / "a-file.txt").write_text("not a folder\n")
    pack = root / "results.tar.gz"
    write_pack(results, Manifest(FORMAT, VERSION, tuple(sorted(stored_runs(results))), "", ""), pack)
    sandbox = Sandbox(
        root, root / "empty", results, pack, root / "a-file.txt", root / "scratch", _inputs(root)
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for name in [k for k in os.environ if k == "TF_CONFIG" or k.startswith("SLURM_")]:
            mp.delenv(name)
        mp.setenv("KERAS_HOME", str(root / "keras-home"))  # --data mnist without --mnist-path
        mp.setenv("COLUMNS", "100")
        parser = build_parser()  # main() builds one per call; 15 ms each is most of an example
        mp.setattr(commands, "build_parser", lambda loaded=None: parser)
        mp.setattr(subprocess, "Popen", _refuse_process)
        mp.setattr(os, "system", _refuse_process)
        mp.setattr(plots, "save", save_unrendered)
        mp.setattr(hardware_figure, "draw", lambda *args, **kwargs: [])  # building it is most of an example
        # the page is tests/harness/analysis/pages' to check; here only what report accepts
        mp.setattr(report_command, "write_report", lambda rows, out, *args: [out / "report.html"])
        mp.setattr(history, "read", _read_once(store.read, (results, open_pack(pack).folder)))
        mp.setattr(check_module, "read_file", _read_file_once(check_module.read_file, results))
        yield sandbox


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str
    argparse_error: bool


def call(argv: list[str], gpus: NvidiaGpus, tf_config: str | None, cwd: Path | None = None) -> Outcome:
    """``main(argv)`` with stdout and stderr as a UTF-8 terminal has them (stdout strict,
    stderr backslash-escaping), the given GPUs and TF_CONFIG; nothing started, TF not imported."""
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="backslashreplace", write_through=True)
    argparse_error = False
    with contextlib.ExitStack() as stack:
        mp = stack.enter_context(pytest.MonkeyPatch.context())
        mp.setattr(platform_module, "nvidia_gpus", lambda: gpus)
        mp.setattr(builds_module.Index, "_simple_files", lambda self, dist: FAKE_INDEX.get(dist, []))
        if cwd is not None:
            mp.chdir(cwd)
        if tf_config is not None:
            mp.setenv("TF_CONFIG", tf_config)
        blocker = stack.enter_context(no_tensorflow())
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            code = main(argv)
        except SystemExit as e:  # argparse
            code = e.code if isinstance(e.code, int) else 2
            argparse_error = code != 0
        assert not blocker.attempts and "tensorflow" not in sys.modules, blocker.attempts
    return Outcome(code, out_bytes.getvalue().decode(), err_bytes.getvalue().decode(), argparse_error)


def _typed(argv: list[str]) -> set[str]:
    """What the user typed, as a message may quote it: each word, each value after '=', each
    comma-list item, stripped, their reprs, and each as stderr escapes it (a path that is not
    UTF-8, its surrogates backslash-escaped)."""
    words: set[str] = set()
    for token in argv[1:]:
        parts = [token, *token.split("=", 1)[1:], *token.split(",")]
        for p in parts:
            for form in (p, p.strip()):
                if form.strip():
                    words |= {form, repr(form), form.encode("utf-8", "backslashreplace").decode()}
    return words


def _options(command: str) -> set[str]:
    """The command's flags and their defaults (a message may name a default the user left)."""
    actions = SUBPARSERS[command]._actions
    return {s for a in actions for s in a.option_strings or [a.metavar or a.dest]} | {
        a.default for a in actions if isinstance(a.default, str) and a.default
    }


def _collect(command: str, outcome: Outcome) -> None:
    """With BAD_INPUT_MESSAGES=FILE, every error line goes to FILE, for reading them all."""
    if os.environ.get("BAD_INPUT_MESSAGES") and outcome.code:
        with open(os.environ["BAD_INPUT_MESSAGES"], "a", encoding="utf-8", errors="replace") as f:
            f.write(f"{command}\t{outcome.code}\t{outcome.err.strip().splitlines()[-1:]}\n")


def check(command: str, argv: list[str], outcome: Outcome, env: dict[str, Any]) -> None:
    _collect(command, outcome)
    where = f"argv={argv!r} env={env!r}\nstdout: {outcome.out[-2000:]}\nstderr: {outcome.err}"
    assert "Traceback" not in outcome.err, where
    assert outcome.code in {0, 2} | OK_CODES.get(command, set()), where
    if outcome.code != 2:
        return
    lines = outcome.err.rstrip("\n").split("\n")
    if outcome.argparse_error:  # usage lines, then "python -m harness CMD: error: ..."
        assert lines[0].startswith("usage: ") and all(line.startswith(" ") for line in lines[1:-1]), where
        error = lines[-1]
        assert re.match(r"python -m harness( [\w-]+)?: error: ", error), where
        names = _typed(argv) | _options(command)
        blank = error.endswith("unrecognized arguments: ") and any(not t.strip() for t in argv)
        assert blank or any(w in error for w in names), f"the error names nothing typed\n{where}"
        return
    assert len(lines) == 1 and lines[0].startswith(("error: ", "not enough history: ")), where
    message = lines[0]
    named = _typed(argv) | _options(command) | ({"TF_CONFIG"} if env["tf_config"] else set())
    assert any(w in message for w in named), f"the message names nothing typed\n{where}"
    assert re.search(r"expected|needs|must|use |run `|first|measure", message), f"no accepted value\n{where}"


@pytest.mark.parametrize("command", list(COMMANDS))
@BAD_INPUT
@given(data=st.data())
def test_every_command_line_is_accepted_or_refused_in_one_line(
    box: Sandbox, command: str, data: st.DataObject
) -> None:
    argv = data.draw(command_line(command, box), label="argv")
    env = {
        "gpus": data.draw(st.sampled_from(GPUS), label="gpus"),
        "tf_config": data.draw(st.sampled_from(TF_CONFIGS), label="TF_CONFIG"),
    }
    check(command, argv, call(argv, env["gpus"], env["tf_config"]), env)


def test_the_guards_catch_a_started_process_and_a_tensorflow_import(box: Sandbox) -> None:
    """The property's guards work: a subprocess is refused, an import of TensorFlow is refused."""
    with pytest.raises(Started):
        subprocess.run(["true"])
    with no_tensorflow(), pytest.raises(Started):
        import tensorflow  # noqa: F401


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--dry-run", "--sweep", "smoke"],
        ["verify", "--dry-run"],
        ["ab", "--dry-run", "--model", "dense", "--strategy", "default"],
        ["doctor", "--dry-run"],
    ],
)
def test_a_dry_run_says_what_it_would_start_and_starts_nothing(box: Sandbox, argv: list[str]) -> None:
    outcome = call(argv, NvidiaGpus(), None)
    assert outcome.code == 0, outcome.err
    assert outcome.out.rstrip().endswith("dry run: nothing started."), outcome.out


def test_a_dry_run_leaves_no_results_folder_behind(box: Sandbox) -> None:
    out = box.scratch / "never" / "made"
    assert call(["run", "--dry-run", "--sweep", "smoke", "--results", str(out)], NvidiaGpus(), None).code == 0
    assert not (box.scratch / "never").exists()


FOUND = [
    # (argv with @root / @file / @scratch for the sandbox's paths, GPUs, exit code, in the output)
    (
        ["list", "--cpu-devices", "2147483648", "--replicas", "1..max"],
        NvidiaGpus(),
        2,
        "--cpu-devices=2147483648; expected an integer from 1 to 256",
    ),  # was: planning forever
    (
        ["list", "--workers", "2147483648", "--strategy", "multi_worker_mirrored"],
        NvidiaGpus(("0", "1")),
        2,
        "--workers=2147483648; expected integers of at least 1 and at most 1024",
    ),
    (["doctor", "--dry-run", "--replicas", ""], NvidiaGpus(), 2, "--replicas=''; expected"),
    (["doctor", "--dry-run", "--timeout", "inf"], NvidiaGpus(), 2, "--timeout=inf; expected finite"),
    (["compare-hardware", "--runs", ""], NvidiaGpus(), 2, "--runs=''; expected a run id"),
    (
        ["run", "--dry-run", "--repeats=--"],
        NvidiaGpus(),
        2,
        "--repeats: expected a value; received '--'",
    ),  # was: a TypeError
    (["report", "--run", "last:x"], NvidiaGpus(), 2, "--run='last:x': no run matches; expected"),
    (["compare-hardware"], NvidiaGpus(), 0, "- 'fp2':"),  # was: a pandas error on rows without suite_version
    (
        ["compare", "--markdown", "@scratch"],
        NvidiaGpus(),
        2,
        "--markdown='@scratch'; expected the path of a file",
    ),
    (["compare", "--figures", "@file"], NvidiaGpus(), 2, "--figures='@file'; expected a folder"),
    (["compare-hardware", "--csv", "@file/x.csv"], NvidiaGpus(), 2, "--csv='@file/x.csv'; expected a file"),
    (["compare-hardware", "--calibration", "@file"], NvidiaGpus(), 2, "--calibration='"),
    (["compare-links", "--calibration", "@file"], NvidiaGpus(), 2, "--calibration='"),
    (
        ["compare-hardware", "--min-effect", "1.5"],
        NvidiaGpus(),
        2,
        "--min-effect=1.5; expected a fraction in (0, 1)",
    ),
    (
        ["compare-links", "--min-effect", "0"],
        NvidiaGpus(),
        2,
        "--min-effect=0.0; expected a fraction in (0, 1)",
    ),
    (["report", "--report-dir", "@file"], NvidiaGpus(), 2, "--report-dir='@file'; expected a folder"),
    (
        ["ab", "--dry-run", "--sweep", "smoke", "--markdown", "@scratch"],
        NvidiaGpus(),
        2,
        "--markdown='@scratch'; expected",
    ),
    (["list", "--batch", ","], NvidiaGpus(), 2, "--batch=','"),
    (
        ["run", "--dry-run", "--sweep", "smoke", "--results", "@scratch/\udcff"],
        NvidiaGpus(),
        0,
        "results -> @scratch/\\udcff",
    ),  # was: UnicodeEncodeError printing a path that is not UTF-8
]
"""What the property found, kept as plain examples (see the module docstring)."""


@pytest.mark.parametrize("argv, gpus, code, text", FOUND)
def test_what_the_property_found(
    box: Sandbox, argv: list[str], gpus: NvidiaGpus, code: int, text: str
) -> None:
    def place(s: str) -> str:
        return (
            s.replace("@root", str(box.root))
            .replace("@file", str(box.file))
            .replace("@scratch", str(box.scratch))
        )

    argv = [place(a) for a in argv]
    outcome = call(argv, gpus, None)
    check(argv[0], argv, outcome, {"gpus": gpus, "tf_config": None})
    assert outcome.code == code and place(text) in outcome.out + outcome.err, outcome
