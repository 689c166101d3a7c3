"""Which TCP ports a command's processes listen on, and where they can be reached from.

    python -m benchmarks.listening -- python -m harness run --model dense \\
        --strategy multi_worker_mirrored,parameter_server --workers 2 --budget-min 2

runs the command, looks at its process tree every 0.2 s, and prints each listening socket seen
once: the process, the address, and whether it shows in this machine's namespace (``host``:
reachable from every interface it names) or only in the process's own (``own``). The last line
counts both and the processes that listened (``tests/support/listeners.py``). Run it from the
repository's root.
"""

from __future__ import annotations

import subprocess
import sys
import time

from tests.support import listeners


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return " ".join(f.read().decode(errors="replace").split("\0")[1:4])
    except OSError:
        return "?"


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1 :] if "--" in argv else argv
    proc = subprocess.Popen(command)
    seen: dict[tuple[str, int, str, int], str] = {}
    while proc.poll() is None:
        pids = listeners.descendants(proc.pid) | {proc.pid}
        for where, found in (("host", listeners.in_host(pids)), ("own", listeners.in_own(pids))):
            for pid, sockets in found.items():
                for s in sockets:
                    seen.setdefault((where, pid, s.text, s.inode), _name(pid))
        time.sleep(0.2)
    for (where, pid, text, _), name in sorted(seen.items()):
        print(f"{where:4s} pid {pid:7d} {text:24s} {name}")
    host = {k for k in seen if k[0] == "host"}
    own = {k for k in seen if k[0] == "own"}
    print(
        f"listening sockets: {len(host)} in the host's namespace "
        f"({sum(1 for k in host if k[2].startswith(('127.', '[::1]')))} on loopback), "
        f"{len(own)} in the processes' own, from {len({k[1] for k in seen})} processes; "
        f"exit code {proc.returncode}"
    )
    return proc.returncode or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
