"""JAX operations from cuforge kernels: `op` (``Kernel.jax_op``).

The op is one XLA FFI call (target ``cuforge_launch``), served by a small C++ handler that
cuforge compiles on first use against the installed jaxlib's headers: on the GPU it launches
the kernel on XLA's stream (and is declared command-buffer compatible, so XLA's CUDA graphs
replay it); on the CPU it runs the kernel on cuforge's CPU backend, on XLA's buffers in place.
Shapes, dtypes and the launch configuration are checked when the call is traced; the
kernel's scalar parameters are static (compiled into the call). ``jax.grad`` uses the
``backward=`` given (``jax.custom_vjp``), ``jax.vmap`` the ``vmap_method=``.

This module imports JAX; ``import cuforge`` does not import it (``cf.jax`` does, on first use).
"""

from .integrations.jax import op as op

__all__ = ["op"]
