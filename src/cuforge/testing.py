"""Helpers for testing kernels with pytest (``cuforge.testing``).

- [`parametrize_family`][cuforge.testing.parametrize_family]: one test per instantiation of a family, with readable ids;
- [`assert_kernel_matches`][cuforge.testing.assert_kernel_matches]: run a kernel on device copies and a NumPy reference on host
  copies, and compare every array the kernel writes;
- [`random_array`][cuforge.testing.random_array]: reproducible test data of any cuforge dtype.
"""

from .integrations.testing import assert_kernel_matches as assert_kernel_matches
from .integrations.testing import default_tolerance as default_tolerance
from .integrations.testing import parametrize_family as parametrize_family
from .integrations.testing import random_array as random_array

__all__ = ["assert_kernel_matches", "default_tolerance", "parametrize_family", "random_array"]
