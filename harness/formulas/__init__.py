"""The formulas every side shares, pure functions of numbers: the worker (MFU's FLOPs), ``results``
(a row's figures and CIs), ``launch`` and ``analysis`` all import them; they import only
:mod:`harness.spec` and :mod:`harness.errors`."""
