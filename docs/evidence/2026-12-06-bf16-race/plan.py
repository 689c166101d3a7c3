"""The default sweep's race as `run --dry-run` plans it, for the CPU whose /proc/cpuinfo is given:
`python docs/evidence/2026-12-06-bf16-race/plan.py ../shared/machines/2026-12-06-xeon/cpuinfo.txt`
(at most 8 live processes, as on a 2-core VM with 24 GiB)."""

import sys
from pathlib import Path

from harness.launch.platform import machine_facts
from harness.spec.groups import race_lines
from harness.spec.protocol import Platform, bf16_reason
from harness.spec.rules import unsupported_reason
from harness.spec.sweep import contenders, expand
from harness.spec.sweeps import DEFAULT

facts = machine_facts(cpuinfo=Path(sys.argv[1]), gpus="")
platform = Platform(cpu_bf16=facts.bf16_units)
cells = [c for c in expand(DEFAULT, platform) if unsupported_reason(c, platform) is None]
print(f"{facts.cpu_model} (family {facts.cpu_family}, model {facts.cpu_model_number}): {bf16_reason(facts.bf16_units)}")
print("\n".join(race_lines(cells, contenders(DEFAULT, platform), 8)))
