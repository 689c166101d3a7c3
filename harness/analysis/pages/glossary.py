"""The words the suite's output keeps, each said once in plain terms for a TensorFlow user: one
source for docs/explanation/glossary.md (:func:`markdown`) and the report's pages (:func:`html`).
Pure: no TensorFlow, no file read.

:data:`REGENERATE` writes the page (:mod:`tools.reference`, which writes the generated
pages); with ``--check`` it only compares, and exits 1 when the committed page differs (a test
checks the same)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.analysis.run import render

REGENERATE = "python -m tools.reference docs/explanation/glossary.md"
"""The command that rewrites the page (named in the page's header and in every failure)."""


@dataclass(frozen=True)
class Word:
    """One word of the output and what it means, in one or two sentences without jargon."""

    word: str
    meaning: str


TERMS: tuple[Word, ...] = (
    Word(
        "configuration",
        "One model trained one way: a strategy, a number of devices, a batch size, a training loop "
        "and the other choices, all fixed. The code and the results files call it a cell; its id "
        "lists those choices.",
    ),
    Word(
        "leader",
        "Of a model's contenders (the configurations raced for its fastest one, measured first, "
        "together: those the default sweep names, with mixed bfloat16 on a CPU with bfloat16 "
        "units; every configuration of any other run), the one measured fastest so far in turns; each other "
        "contender is compared with it. It is called fastest only once every other contender is "
        "decided lower than it; until then it is leading.",
    ),
    Word(
        "closest rival",
        "The contender measured closest to the leader in turns (the highest ratio to it). The "
        "answer says where its update's time goes beside the leader's; the default sweep times "
        "the parts of only these two updates per model.",
    ),
    Word(
        "measured in turns",
        "The processes of the configurations being compared are all alive at once and take turns: "
        "one at a time times a window of about 0.2 s with the whole machine while the others wait "
        "without using the CPU. Whatever the machine does during a block it does to every side, "
        "so their ratio is far steadier than either figure alone.",
    ),
    Word(
        "turn",
        "One timed window of about 0.2 s (--turn-s) in which one configuration's process has the "
        "whole machine.",
    ),
    Word(
        "block",
        "A round of turns in which each compared configuration gets two, in a balanced order "
        "(A B B A for two). A block in which another program took CPU time during a turn is left "
        "out of the ratios.",
    ),
    Word(
        "instance",
        "One set of fresh processes of the compared configurations, started together and taking "
        "turns for a set number of blocks (--blocks). A ratio's 95% CI is over instances, because "
        "a fresh process by itself moves a ratio by a few percent.",
    ),
    Word(
        "replica",
        "A copy of the model on one device; each copy trains on its share of the batch, and the "
        "copies are kept equal. On a CPU the replicas are logical devices sharing the same cores, "
        "so a second replica adds no compute.",
    ),
    Word(
        "worker",
        "A separate training process that takes part through TensorFlow's cluster runtime (one "
        "task of TF_CONFIG). Here a configuration's workers are local processes on 127.0.0.1, in a "
        "network namespace of their own so that no other machine reaches their servers, unless the "
        "run is on a real cluster.",
    ),
    Word(
        "parameter server",
        "A process that holds the model's variables for ParameterServerStrategy (a ps task): the "
        "workers read the variables from it and send it their updates.",
    ),
    Word(
        "all-reduce",
        "Adding up the gradients of every replica and giving each replica the sum, once per "
        "update, so that the copies of the model stay equal.",
    ),
    Word(
        "cross-device ops",
        "How a MirroredStrategy does its all-reduce between the devices of one process (auto, "
        "nccl, hierarchical_copy, reduction_to_one_device); between workers the same choice is "
        "called communication (auto, ring, nccl).",
    ),
    Word(
        "gradient accumulation",
        "Each replica adds up the gradients of k smaller batches before one all-reduce and one "
        "optimizer update, so the devices exchange gradients k times less often per example "
        "(acc1 in an id: none).",
    ),
    Word(
        "steps per execution",
        "Optimizer updates per tf.function call (spe in an id): more updates per call means fewer "
        "calls from Python for the same work.",
    ),
    Word(
        "custom loop (ctl)",
        "The suite's own training loop: strategy.run called inside a loop in a tf.function. It "
        "is the reference the Keras fit loop is compared with.",
    ),
    Word(
        "Keras fit (fit)",
        "Keras Model.fit running the same training update as the custom loop, so that the ratio "
        "between them is what Keras's loop costs or saves.",
    ),
    Word(
        "scaling efficiency",
        "Throughput on N devices divided by N times the throughput of the same configuration on "
        "one device in the same run: 1.0 means every added device adds its full share. Its "
        "verdict is on the speed-up, so equivalent means no faster than one device.",
    ),
    Word(
        "95% CI",
        "The range that holds the true value in 95 of 100 runs like this one. Every CI of the "
        "suite is over fresh processes (or instances), never over windows of one process, so it "
        "includes how much a new process moves the figure.",
    ),
    Word(
        "higher",
        "Faster than the configuration it is compared with: the 95% CI lies wholly above no "
        "change, the difference is at least 5% (--min-effect), and it still stands once the run "
        "allows for making many comparisons at once.",
    ),
    Word(
        "lower",
        "Slower than the configuration it is compared with: the same three conditions as higher, "
        "the other way.",
    ),
    Word(
        "equivalent",
        "No difference of 5% or more: the whole 95% CI lies within 5% of no change either way "
        "(between 1/1.05 and 1.05 times the other side).",
    ),
    Word(
        "undecided",
        "The evidence cannot tell yet: the 95% CI reaches more than 5% from no change, but it "
        "also includes no change, or the measured difference is under 5%, or making many "
        "comparisons at once holds it back. The run says how much more budget would likely decide "
        "it; undecided never means the same.",
    ),
    Word(
        "not measured",
        "No instance of the comparison ran, for example because the budget ran out first; the "
        "row's note says why.",
    ),
    Word(
        "false-discovery control",
        "What keeps a run's many comparisons from turning chance into findings: of the "
        "comparisons it calls higher or lower, at most 5% are expected to be wrong "
        "(Benjamini-Hochberg over their p-values). It can only turn a higher or lower into "
        "undecided.",
    ),
    Word(
        "unstable",
        "A configuration whose processes disagree on its throughput by more than 10% (their "
        "spread over their mean, --unstable-cv): its figure moves between re-runs. Its ratios "
        "measured in turns are not affected.",
    ),
    Word(
        "cv between / within processes",
        "Two spreads, each a standard deviation over a mean. Between: of a configuration's "
        "process figures in the run, what a fresh process moves it by. Within: the median over its "
        "processes of the spread of one process's timed windows. Between is usually the larger, "
        "which is why every CI is over processes, not windows.",
    ),
    Word(
        "MFU",
        "Model FLOPs utilisation: the arithmetic the model's training needs per second, as a "
        "share of the peak this machine's matrix multiply reaches, measured in the same run (not "
        "a datasheet figure).",
    ),
    Word(
        "bound",
        "The part of an update that takes the largest share of its time: compute, communication "
        "(the all-reduce), input or dispatch (the cost of each call from Python). On a GPU: "
        "device (the GPU busy with the model), communication (collectives), input (the GPU "
        "waiting for data) or host (the GPU waiting for the host to launch its work). None where "
        "more of the update is unexplained (time no part accounts for) than any part takes.",
    ),
    Word(
        "co-tenant",
        "Another training process on the same devices at the same time: another copy of the same "
        "configuration (--tenants), or the same model in PyTorch or JAX (--tenant-framework). "
        "Each side's throughput is measured alone and together.",
    ),
    Word(
        "oversubscribed",
        "Measured on shared cores: a configuration's workers (and parameter-server tasks) were "
        "given more cores in all than the machine has, or each co-tenant was given every core. "
        "Such a figure is marked (* in the terminal's table).",
    ),
    Word(
        "machine",
        "What a run measured on: a name (run --machine, else the CPU model and cores or the GPU's "
        "name, plus a short hash of the facts), the facts that tell machines apart (CPU model, "
        "family, flags, cores, caches, memory; GPUs) and its measured matmul peak. Runs of one "
        "name and facts on two host instances are instances of one machine type; runs that "
        "recorded no facts are told apart by their peaks.",
    ),
    Word(
        "run-to-run spread",
        "How far the same configuration's figure moves between runs on one machine: a shift "
        "every configuration of a run shares, plus each configuration's own. Machines cannot take "
        "turns, so a ratio between machines carries it, fitted on A/A runs (the project's "
        "calibration set and your own repeated runs).",
    ),
    Word(
        "fingerprint",
        "A 16-hex-digit hash of what a worker process ran on and with: CPU model and cores, GPU "
        "models, count and driver, TensorFlow, Keras and Python versions, the CUDA, cuDNN or ROCm "
        "build, thread settings and the environment variables that change behaviour (TF_*, "
        "NCCL_*, OMP_* and the like). compare judges a run only against earlier runs with the same "
        "fingerprint.",
    ),
    Word(
        "series",
        "The history a configuration is judged against over time. In compare: its runs on one "
        "machine with one fingerprint, one median per run. In nightly: its nights on one machine "
        "fingerprint, suite version and reference pin. Runs of another series are never its "
        "history.",
    ),
    Word(
        "robust z-score",
        "How far the candidate runs' median lies from the series' history, in units of the "
        "history's spread measured robustly (1.4826 x the median absolute deviation, so that one "
        "odd run cannot inflate it). compare calls a change only when it passes 3.5 (--z), with "
        "at least 10 earlier runs (--min-history).",
    ),
    Word(
        "family-wise alpha",
        "The chance compare accepts of calling any change at all when none is there, over every "
        "series it judges together (--false-alarm, 5%): each series' CI is widened for the number "
        "of series compared (Bonferroni).",
    ),
    Word(
        "change point",
        "A night after which a nightly series' level moved for good: among the nights since the "
        "last one, the split whose two sides differ most, kept when a permutation test finds it "
        "unlikely by chance and the shift is large enough. It catches drifts too small for one "
        "night's alarm; the series restarts from it.",
    ),
    Word(
        "pin",
        "The reference build nightly compares against, held fixed: its first install's pip "
        "freeze is saved (RESULTS/nightly/reference-<pin>.txt) and every later night installs "
        "exactly that. The pin is the first 12 hex digits of the freeze's sha256.",
    ),
)
"""The glossary, in reading order (what is measured, how, then what the verdicts say)."""


def markdown() -> str:
    """docs/explanation/glossary.md: a title, the do-not-edit note and a table of every term."""
    return render.markdown("glossary.md", terms=TERMS, regenerate=REGENERATE)
