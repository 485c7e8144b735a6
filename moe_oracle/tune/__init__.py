"""``moe-oracle tune``: measure every eligible path on this machine's GPU and write a calibration file.

:mod:`~moe_oracle.tune.plan` says what is measured (no torch); :mod:`~moe_oracle.tune.measure` measures it
(torch, the real kernels through the runtime); :mod:`moe_oracle.cost.local` reads, writes and chooses the file.
"""
