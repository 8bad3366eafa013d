"""The CUDA driver: libcuda, the device state, faults, loading a library and its limits, the
launch entry, and arrays. Imports ``_compile``, ``_declare`` and the foundation."""
