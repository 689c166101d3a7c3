"""The formulas every side shares: throughput and MFU (:mod:`metrics`), CIs over processes and
runs and ratios between cells (:mod:`stats`), the step-time breakdown's shares and verdict
(:mod:`breakdown`), all-reduce bandwidths (:mod:`bandwidth`).

Pure functions of numbers: the worker (MFU's FLOPs), ``results`` (a row's figures and CIs),
``launch`` and ``analysis`` all import them; they import only :mod:`harness.spec` and
:mod:`harness.errors`."""
