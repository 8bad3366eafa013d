"""Compiling kernels: NVRTC, the compiled artifact as data, the one identity of a compile,
the memory and disk stores, batching, worker processes and the PCH, linking, ahead-of-time
builds. No GPU; imports ``_declare`` and the foundation."""
