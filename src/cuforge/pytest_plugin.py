"""The cuforge pytest plugin (``pytest11`` entry point ``cuforge``): a thin adapter.

Nothing heavy is imported and CUDA is not touched at start-up or collection (safe under
pytest-xdist): cuforge itself is imported by the hooks and fixtures that need it, and the
GPU is first looked at when a ``gpu`` test is set up.

Options (group ``cuforge``): ``--cuforge-require-gpu``, ``--cuforge-arch``,
``--cuforge-compile-all``, ``--cuforge-modules``. Marker: ``gpu``. Fixtures:
``cuda_device``, ``cuda_stream``, ``cuforge_cache_dir``, ``cuforge_compile_counter``.
"""

from .integrations.pytest_plugin import *  # noqa: F403  (the hooks and fixtures pytest looks up here)
from .integrations.pytest_plugin import __all__ as __all__
