"""The launch cost of a cuforge installed where no C compiler was present (the general path,
cuda.bindings underneath), against cuda.core launch timed in the same process.

    python benchmarks/no_extension.py

launch_overhead.py runs this in a subprocess: the extension has to be hidden before cuforge
is imported.
"""

from __future__ import annotations

import json
import os
import sys

sys.modules["cuforge._claunch"] = None  # type: ignore[assignment]  # as if built without a compiler
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from launch_overhead import Empty4, measure  # noqa: E402


def main() -> dict[str, float]:
    import cupy as cp
    from cuda.core import Device, LaunchConfig, launch

    from cuforge._runtime import cuda as _cuda

    assert _cuda.claunch is None
    dev = Device()
    dev.set_current()
    x, y = cp.ones(1024, dtype=cp.float32), cp.ones(1024, dtype=cp.float32)
    sync = cp.cuda.runtime.deviceSynchronize
    kern = Empty4.compile().function(dev.device_id)
    cfg = LaunchConfig(grid=1, block=32)
    stream = dev.default_stream
    a32, n64, xp, yp = np.float32(1.0), np.int64(1024), x.data.ptr, y.data.ptr
    grid, block = (1,), (32,)
    return measure({
        "cuforge checked, no C extension (cupy arrays)": (lambda: Empty4(1.0, x, y, 1024, grid=grid, block=block), sync),
        "cuda.core launch (same process)": (lambda: launch(stream, cfg, kern, a32, xp, yp, n64), sync),
    })  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(main()))
