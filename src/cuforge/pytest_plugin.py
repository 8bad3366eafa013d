"""The cuforge pytest plugin (``pytest11`` entry point ``cuforge``): a thin adapter.

Nothing heavy is imported and CUDA is not touched at start-up or collection (safe under
pytest-xdist): cuforge itself is imported by the hooks and fixtures that need it, and the
GPU is first looked at when a ``gpu`` or ``launches`` test is set up (or when a module
calling ``gpu_module()`` is collected).

Markers: ``gpu`` (the test needs a CUDA GPU; skipped with the reason without one) and
``launches`` (the test runs on the chosen device, ``--cuforge-device=auto|cuda|cpu``: under
``auto`` the GPU where one is usable, else cuforge's CPU backend where a C++ compiler is
found, else skipped naming both reasons). While a ``launches`` test runs on the CPU, launches
that name no device go to the CPU in this process (``CUFORGE_DEVICE=cpu`` for the
subprocesses it starts) and compile-only calls target ``sm_90`` unless an arch is set; all
is restored after it. A test written once on NumPy arrays thus runs on the CPU in CI and on
the GPU on a GPU machine.

Options (group ``cuforge``): ``--cuforge-device``, ``--cuforge-require-gpu``,
``--cuforge-arch``, ``--cuforge-cpu-timeout`` (a CPU launch that runs longer fails its test;
default 60 s), ``--cuforge-check=on|off`` (CPU launches run checked; on by default),
``--cuforge-sanitize[=TOOLS]`` (GPU tests run again under compute-sanitizer, a subprocess per
tool, and fail with its findings), ``--cuforge-compile-all``, ``--cuforge-modules``. Fixtures:
``cuforge_device`` (``"cuda"`` or ``"cpu"``; makes the test a ``launches`` one),
``cuda_device``, ``cuda_stream``, ``cuforge_cache_dir``, ``cuforge_compile_counter``.
``pytestmark = gpu_module()`` skips a module whose every test needs the GPU once, with
the reason.
"""

from .integrations.pytest_plugin import *  # noqa: F403  (the hooks and fixtures pytest looks up here)
from .integrations.pytest_plugin import __all__ as __all__
