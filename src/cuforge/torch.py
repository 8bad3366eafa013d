"""PyTorch custom operators from cuforge kernels: `custom_op` (``Kernel.torch_op``).

The operator is defined with ``torch.library``, so that PyTorch sees it as one opaque
operator: ``torch.compile(fullgraph=True)`` traces it without a graph break (through the
fake implementation registered here), ``torch.cuda.graph`` captures it (its launches go on
the current PyTorch stream), CPU tensors run it on cuforge's CPU backend, and autograd uses
the ``backward`` given, which may call another cuforge operator. Its schema comes from the
kernel's annotations:

- an ``In`` array is a ``Tensor`` argument; an ``Array`` or ``Out`` array is a ``Tensor``
  argument that the operator mutates, unless ``outputs=`` names it: then the operator
  allocates it and returns it;
- a ``cf.Optional`` array is a ``Tensor?`` argument, which may be None (a null pointer); one
  named in ``outputs=`` is still allocated and returned;
- a float scalar is a ``float``, an integer an ``int``, a bool a ``bool``;
- a parameter named in ``sizes=`` is no argument: it is computed from the arguments.

This module imports PyTorch; ``import cuforge`` does not import it (``cf.torch`` does, on
first use).
"""

from .integrations.torch import custom_op as custom_op

__all__ = ["custom_op"]
