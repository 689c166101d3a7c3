"""The run's peak processes: the closing ones go on until the peak is known within ±5%."""

from __future__ import annotations

from harness.launch.cells.peak import PEAK_MAX, PeakLog
from harness.spec.protocol import Platform


def fake(figures: list[float], seconds: float = 4.0) -> PeakLog:
    """A log whose each measurement takes the next of ``figures`` (FLOP/s) in ``seconds``."""
    log, calls = PeakLog(Platform(), ("float32",)), [0]

    def measure() -> None:
        log.samples.setdefault("float32", []).append(figures[calls[0] % len(figures)])
        log.seconds += seconds
        calls[0] += 1

    log.measure = lambda env=None: measure()  # type: ignore[method-assign]
    return log


def test_steady_peaks_stop_once_the_ci_is_within_five_percent() -> None:
    log = fake([100e9, 101e9, 99e9, 100.5e9])
    log.measure()
    log.close(log.measure, lambda: 60.0)
    assert 2 <= log.processes < PEAK_MAX and not log.wide()


def test_scattered_peaks_stop_at_the_cap_or_the_budget() -> None:
    log = fake([60e9, 140e9])
    log.measure()
    log.close(log.measure, lambda: 600.0)
    assert log.processes == PEAK_MAX and log.wide()
    short = fake([60e9, 140e9])
    short.measure()
    short.close(short.measure, lambda: 3.0)  # another 4-second process would not fit
    assert short.processes == 1


def test_a_peak_process_that_gives_nothing_ends_the_closing_peaks() -> None:
    log = fake([60e9, 140e9])
    log.measure()
    log.measure()
    log.close(lambda: None, lambda: 600.0)
    assert log.processes == 2
