"""Declaring kernels: dtypes and annotations, template parameters, a kernel's signature and
its parameter records, launch rules, rendering and ``%%cuda`` parsing. No CUDA and no compiler;
imports only the foundation (``errors``, ``options``, ``_config``)."""
