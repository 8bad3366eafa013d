"""A tiled 2-D transpose family: dtype x tile size, checked against NumPy.

    python examples/transpose.py

The four instantiations compile in one NVRTC program (NVRTC needs no GPU). On a GPU each one
transposes a 1000 x 1537 matrix in device memory; without one, each runs on the CPU instead
(cuforge's CPU backend, ``device="cpu"``) on NumPy arrays. Either way the result is checked
against NumPy.
"""

import numpy as np

import cuforge as cf


@cf.kernel
class Transpose:
    """dst = src.T through a shared-memory tile (padded against bank conflicts)."""

    T = cf.typeparam(cf.float32, cf.float64)
    TILE = cf.intparam(32, 16)
    src: cf.In[T, 2]
    dst: cf.Out[T, 2]
    rows: cf.int32
    cols: cf.int32
    block = ("TILE", "TILE")

    @staticmethod
    def grid(rows, cols, block):
        return ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])

    body = """
    __shared__ T tile[TILE][TILE + 1];
    int c = blockIdx.x * TILE + threadIdx.x, r = blockIdx.y * TILE + threadIdx.y;
    if (r < rows && c < cols) tile[threadIdx.y][threadIdx.x] = src[(long long)r * cols + c];
    __syncthreads();
    c = blockIdx.y * TILE + threadIdx.x;  // column of dst = row of src
    r = blockIdx.x * TILE + threadIdx.y;
    if (r < cols && c < rows) dst[(long long)r * rows + c] = tile[threadIdx.x][threadIdx.y];
    """


def check_all(rows: int = 1000, cols: int = 1537, device: str | None = None) -> None:
    """Every instantiation transposes a rows x cols matrix, checked against NumPy: in the GPU's
    memory, or with ``device="cpu"`` on NumPy arrays in place."""
    for k in Transpose.instantiations():
        dtype = k.template_args["T"]
        host = np.arange(rows * cols, dtype=dtype.numpy).reshape(rows, cols)
        if device == "cpu":
            got = np.zeros((cols, rows), dtype.numpy)
            k(host, got, rows, cols, device="cpu")
        else:
            dst = cf.zeros((cols, rows), dtype)
            k(cf.to_device(host), dst, rows, cols)
            got = dst.to_numpy()
        np.testing.assert_array_equal(got, host.T)
        print(f"{k.name_expression:24s} matches NumPy")


def main() -> None:
    compiled = Transpose.precompile(arch="sm_90")
    print(f"{len(compiled)} instantiations compiled in one NVRTC program")
    if not cf.gpu_available():
        print("no GPU here: each instantiation runs on the CPU instead (device='cpu')")
        check_all(device="cpu")
        return
    check_all()


if __name__ == "__main__":
    main()
