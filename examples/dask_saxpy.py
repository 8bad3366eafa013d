"""saxpy over a Dask array of CuPy chunks, on a local Dask cluster with one worker per GPU.

    python examples/dask_saxpy.py

Each worker is pinned to one GPU (CUDA_VISIBLE_DEVICES, set by a worker plugin before the
worker touches CUDA, as dask-cuda's LocalCUDACluster does). The kernel is declared here, in
__main__, so Dask (cloudpickle) sends it by declaration; each worker compiles it once, or
reads it from the disk cache that the workers of one machine share. The same code runs on a
multi-node cluster (dask-cuda's dask-cuda-worker on each node): each node compiles once.
Needs dask[array], distributed and CuPy.
"""

from __future__ import annotations

import os

import numpy as np

import cuforge as cf


@cf.kernel
class Saxpy:
    """y <- a*x + y"""

    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    body = """
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
    """


def saxpy_block(x, y, a=2.0):
    """One pair of chunks, on the worker's GPU (x and y are CuPy arrays there)."""
    out = y.copy()
    Saxpy(a, x, out, out.size)
    return out


def gpus_in_use(client) -> dict[str, str]:
    """Each worker's GPU, as the worker reports it (its PCI bus id)."""

    def which() -> str:
        import cupy

        return cupy.cuda.Device(0).pci_bus_id

    return client.run(which)


def run(n: int = 10_000_000, chunk: int = 1_000_000) -> dict[str, str]:
    import cupy
    import dask.array as da
    from distributed import Client, LocalCluster, WorkerPlugin

    gpus = cupy.cuda.runtime.getDeviceCount()

    class PinGPU(WorkerPlugin):
        def setup(self, worker) -> None:  # runs in the worker before any task touches CUDA
            os.environ["CUDA_VISIBLE_DEVICES"] = str(int(worker.name) % gpus)

    rng = np.random.default_rng(0)
    x_host = rng.standard_normal(n).astype(np.float32)
    y_host = rng.standard_normal(n).astype(np.float32)
    with LocalCluster(n_workers=gpus, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:  # fmt: skip
        client.register_plugin(PinGPU())
        x = da.from_array(x_host, chunks=chunk).map_blocks(cupy.asarray)
        y = da.from_array(y_host, chunks=chunk).map_blocks(cupy.asarray)
        result = da.map_blocks(saxpy_block, x, y, dtype=np.float32).map_blocks(cupy.asnumpy).compute()
        used = gpus_in_use(client)
    np.testing.assert_allclose(result, 2.0 * x_host + y_host, rtol=1e-6)
    print(f"saxpy over {n // chunk} CuPy chunks matches NumPy; workers and their GPUs: {used}")
    return used


def missing() -> str | None:
    """What this example needs and this environment lacks (a message), or None."""
    import importlib.util

    lacking = [pip for module, pip in (("cupy", "cupy-cuda12x"), ("dask", "dask[array]"), ("distributed", "distributed"))
               if importlib.util.find_spec(module) is None]  # fmt: skip
    if lacking:
        return f"this example needs {', '.join(lacking)}: pip install {' '.join(repr(p) if '[' in p else p for p in lacking)}"
    if not cf.gpu_available():
        return "this example runs CuPy arrays on NVIDIA GPUs, and no GPU is usable here (see examples/saxpy.py for the CPU)"
    return None


if __name__ == "__main__":
    why = missing()
    if why:
        raise SystemExit(f"examples/dask_saxpy.py: {why}")
    run()
