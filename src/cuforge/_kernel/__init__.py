"""Kernels as users hold them: ``Kernel``, ``Family``, autotuning, ``@cf.kernel``, the
registry, pickling. Imports every layer below; never an integration."""
