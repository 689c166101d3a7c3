"""TODO docstring: commands.listing."""

from __future__ import annotations

from harness.commands.selection import Selection, _platform_text


def cmd_list(sel: Selection) -> int:
    from harness.launch.runner import plan

    planned = plan(sel.cells, sel.platform)
    width = max((len(c.id) for c, _ in planned), default=0)
    for cell, why in planned:
        print(f"{cell.id.ljust(width)}  {'run' if why is None else 'unsupported: ' + why}")
    n_unsup = sum(why is not None for _, why in planned)
    print(f"\n{len(planned)} cells in sweep {sel.sweep.name!r}: {len(planned) - n_unsup} to run, "
          f"{n_unsup} unsupported on this machine ({_platform_text(sel.platform)}).")
    print(f"protocol: {sel.protocol}")
    return 0
