"""CUDA graphs of cuforge launches: `graph` captures them, `Graph` replays them.

A `Graph` opens a capture (`cuforge._launch.capture.Capture`) on one stream of one device
when its ``with`` block starts, and turns what the block recorded into an executable graph
when it ends, or updates the one it holds in place (``with g.update():``).

The capture calls the driver (cuStreamBeginCapture ... cuStreamEndCapture, cuGraphInstantiate,
cuGraphExecUpdate) rather than cuda.core's GraphBuilder: cuda.core 1.2's ``end_building``
raises on an invalidated capture without ending it, which leaves the stream capturing, and a
capture that cuforge begins it must end, whatever happened inside.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

from .._runtime import cuda as _cuda
from ..errors import ArgumentError, CuforgeError, GraphCaptureError, GraphUpdateError, NoDeviceError
from . import general as _launch
from .capture import Capture, end_capture

__all__ = ["Graph", "graph"]

MODES = ("thread_local", "global", "relaxed")


def graph(stream: Any = None, *, device: int | str | None = None, mode: str = "thread_local") -> Graph:
    """A CUDA graph of the cuforge launches made in a ``with`` block, replayed by calling it.

    Parameters
    ----------
    stream : stream-like, optional
        Capture on this stream (a CuPy, PyTorch or cuda.core stream, anything with
        ``__cuda_stream__``, or a handle), so that CuPy or PyTorch work issued on it joins the
        graph. Default: a non-blocking stream of the graph's own, which work on the legacy
        default stream never waits for (see ``mode``); such a graph replays on the default
        stream, in order with CuPy's, PyTorch's and cuforge's work there.
    device : int or str, optional
        The device to capture on: an ordinal or ``"cuda:N"`` (default, or ``"cuda"``: the
        thread's current device).
    mode : str
        CUDA's capture mode: ``"thread_local"`` (default: CUDA calls that a capture cannot
        hold are refused in this thread only), ``"global"`` (in every thread, as
        ``torch.cuda.graph`` does) or ``"relaxed"`` (none refused: another library's
        synchronous copy in the block, ``cp.asnumpy``, runs at once, outside the graph).

    Returns
    -------
    Graph
        Captured when its ``with`` block ends.

    Raises
    ------
    GraphCaptureError
        At a launch the capture cannot hold (host arrays, a first compile, a stream outside
        the capture), or at the block's end where CUDA ended the capture with an error, also
        where that error was raised by another library's call in the block (the original
        exception is its ``__cause__``).

    Examples
    --------
    >>> @cf.kernel
    ... class Inc:
    ...     x: cf.Array[cf.float32]
    ...     n: cf.int64
    ...     body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) x[i] += 1;"
    >>> x = cf.zeros(1000, cf.float32)  # doctest: +GPU
    >>> Inc(x, 1000)  # compiled and loaded before the capture  # doctest: +GPU
    >>> with cf.graph() as g:  # nothing runs here: the launches are recorded  # doctest: +GPU
    ...     Inc(x, 1000)
    ...     Inc(x, 1000)
    >>> g()  # both, as one graph launch  # doctest: +GPU
    >>> x.to_numpy()[:3]  # doctest: +GPU
    array([3., 3., 3.], dtype=float32)
    >>> y = cf.zeros(1000, cf.float32)  # doctest: +GPU
    >>> with g.update():  # the same launches with another array  # doctest: +GPU
    ...     Inc(y, 1000)
    ...     Inc(y, 1000)
    >>> g()  # doctest: +GPU
    >>> y.to_numpy()[:3]  # doctest: +GPU
    array([2., 2., 2.], dtype=float32)
    """
    return Graph(stream, device=device, mode=mode)


class Graph:
    """Launches captured once and replayed as one CUDA graph (made by [`cuforge.graph`][cuforge.graph]).

    Calling it (or [`launch`][cuforge.Graph.launch]) replays every launch captured, in order,
    on the stream given to [`cuforge.graph`][cuforge.graph] (else the default stream) unless
    ``stream=`` is given. It keeps the captured arrays alive for as long as it exists; their
    contents may change between replays, their memory may not.

    Attributes
    ----------
    launches : tuple of str
        The kernels captured, in order.
    device : int or None
        The device it was captured on.

    Examples
    --------
    >>> g = cf.graph()      # captured by `with g:`; see cuforge.graph
    >>> g.launches
    ()
    """

    __module__ = "cuforge"

    def __init__(self, stream: Any = None, *, device: int | str | None = None, mode: str = "thread_local"):
        if mode not in MODES:
            raise ArgumentError(f"cf.graph(): mode expects one of {', '.join(map(repr, MODES))}, got {mode!r}")
        gpu = None if device is None else _cuda.parse_device(device, "cf.graph()")
        if gpu == "cpu":
            raise ArgumentError(
                "cf.graph(): device='cpu': a graph captures GPU launches; on the CPU, launch the kernels themselves"
            )
        self._stream_arg, self._mode = stream, mode
        self.device: int | None = gpu  # type: ignore[assignment]  # (not "cpu": refused above)
        self.launches: tuple[str, ...] = ()
        self._cooperative: tuple[bool, ...] = ()
        self._exec: Any = None  # the CUgraphExec once captured
        self._stream = 0  # the capture stream's handle
        self._replay = 0  # where a replay goes by default: the stream given, else the default stream
        self._own_stream: Any = None  # a non-blocking CUstream the graph made to capture on, destroyed with it
        self._keep: list[Any] = []
        self._modules: tuple[Any, ...] = ()
        self._restore: int | None = None
        self._updating = False

    # ------------------------------------------------------------ capture

    def __enter__(self) -> Graph:
        self._begin(updating=False)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._end(exc)

    def update(self) -> contextlib.AbstractContextManager[Graph]:
        """Capture the block again, with new arrays (same shapes) or scalars, and update the
        executable graph in place: ``with g.update(): ...``. The launches must be the same
        kernels in the same order; otherwise [`GraphUpdateError`][cuforge.errors.GraphUpdateError] is raised and the
        graph is left as it was. Costs a capture, not an instantiation.

        Returns
        -------
        context manager
            Its ``with`` block is captured again.

        Raises
        ------
        GraphCaptureError
            Where the graph was never captured.
        """
        if self._exec is None:
            raise GraphCaptureError("Graph.update(): the graph has not been captured yet; use `with cf.graph() as g:` first")
        return self._recapture()

    @contextlib.contextmanager
    def _recapture(self) -> Iterator[Graph]:
        """``with g.update():``: the capture of a graph's update."""
        self._begin(updating=True)
        try:
            yield self
        except BaseException as exc:
            self._end(exc)
            raise
        self._end(None)

    def _begin(self, updating: bool) -> None:
        if _cuda.state.tls.capture is not None:
            raise GraphCaptureError(
                "cf.graph(): this thread is already capturing a graph, and captures do not nest; "
                "end the first `with` block before opening another"
            )
        if not updating and self._exec is not None:
            raise GraphCaptureError("cf.graph(): this graph was captured already; use `with g.update():` to capture it again")
        try:
            device = self.device if self.device is not None else _cuda.current_device().id
            info, self._restore = _cuda.enter_device(device)
        except NoDeviceError as exc:
            raise _cuda.gpu_only("cf.graph()", exc, "a CUDA graph", "call the kernels themselves") from None
        driver = _cuda.bindings()
        try:
            if self._stream_arg is not None:
                self._stream = self._replay = _launch.stream_handle(self._stream_arg, "cf.graph()")
            elif self._own_stream is None:
                # Non-blocking: work on the legacy default stream implicitly waits for every
                # blocking stream, so while a blocking stream captures, any (a CuPy or PyTorch
                # copy to the host, a synchronous cudaMemcpy) is an error, CUDA's
                # cudaErrorStreamCaptureImplicit. A non-blocking stream is not waited for.
                self._own_stream = _cuda.check(driver.cuStreamCreate(_NON_BLOCKING), "cuStreamCreate")
                self._stream = int(self._own_stream)
            mode = getattr(driver.CUstreamCaptureMode, f"CU_STREAM_CAPTURE_MODE_{self._mode.upper()}")
            err = driver.cuStreamBeginCapture(self._stream, mode)[0]
            if int(err) != 0:
                raise GraphCaptureError(
                    f"cf.graph(): CUDA cannot capture stream {self._stream:#x}: {_cuda.error_text(err)}; the legacy "
                    f"default stream (0) cannot be captured, nor a stream already capturing: pass another stream"
                )
            capture_id = int(_cuda.check(driver.cuStreamGetCaptureInfo(self._stream), "cuStreamGetCaptureInfo")[1])
        except BaseException:
            self._leave()
            raise
        self.device, self._updating = info.id, updating
        _cuda.state.begin_capture(Capture(info.id, self._stream, capture_id))

    def _leave(self) -> None:
        if self._restore is not None:
            _cuda.set_context(self._restore)
            self._restore = None

    def _end(self, exc: BaseException | None) -> None:
        """End the capture whatever happened in the block: the thread's capture state is
        cleared first, the stream's capture always ended, and a graph made only from a
        capture that CUDA ended cleanly and that raised nothing."""
        cap: Capture = _cuda.state.end_capture()
        try:
            err, captured = (0, None) if cap.failed is not None else end_capture(cap.stream)
            if exc is not None or cap.failed is not None:
                _destroy(captured)
                if exc is None:
                    raise cap.failed  # type: ignore[misc]  # the refusal, caught in the block
                if err and not isinstance(exc, CuforgeError):  # another library's call broke the capture
                    raise GraphCaptureError(invalidated(_cuda.error_text(err), exc)) from exc
                return  # the block's own exception goes on
            if err:
                raise GraphCaptureError(invalidated(_cuda.error_text(err)))
            if self._updating:
                self._update_from(captured, cap)
            else:
                self._instantiate(captured, cap)
        finally:
            self._leave()

    def _instantiate(self, captured: Any, cap: Capture) -> None:
        driver = _cuda.bindings()
        try:
            self._exec = _cuda.check(driver.cuGraphInstantiate(captured, 0), "cuGraphInstantiate")
        finally:
            _destroy(captured)
        self._adopt(cap)

    def _update_from(self, captured: Any, cap: Capture) -> None:
        try:
            new = tuple(label for label, _ in cap.launches)
            if new != self.launches or tuple(c for _, c in cap.launches) != self._cooperative:
                raise GraphUpdateError(
                    f"Graph.update(): the block launched {describe(new)}, but the graph holds {describe(self.launches)}; "
                    f"an update changes arrays, scalars, grids and blocks, not which kernels run or in what order: "
                    f"capture a new cf.graph() for that"
                )
            err = _cuda.bindings().cuGraphExecUpdate(self._exec, captured)[0]
            if int(err) != 0:
                raise GraphUpdateError(
                    f"Graph.update(): CUDA refused to update the graph in place ({_cuda.error_text(err)}): work other "
                    f"than cuforge launches in the block changed its shape; capture a new cf.graph()"
                )
        finally:
            _destroy(captured)
        self._adopt(cap)

    def _adopt(self, cap: Capture) -> None:
        self.launches = tuple(label for label, _ in cap.launches)
        self._cooperative = tuple(c for _, c in cap.launches)
        self._keep, self._modules = cap.keep, tuple(cap.modules)

    # ------------------------------------------------------------ replay

    def __call__(self, stream: Any = None) -> None:
        """Replay the graph: the same as [`launch`][cuforge.Graph.launch].

        Parameters
        ----------
        stream : stream-like, optional
            Default: the stream given to [`cuforge.graph`][cuforge.graph], else the default stream.
        """
        self.launch(stream)

    def launch(self, stream: Any = None) -> None:
        """Replay every launch captured, in order, as one graph launch.

        Parameters
        ----------
        stream : stream-like, optional
            Default: the stream given to [`cuforge.graph`][cuforge.graph], else the default stream.

        Raises
        ------
        GraphCaptureError
            Where the graph was never captured, or was closed, or a module it uses was
            unloaded.
        """
        handle, device = self._ready("launch()", stream), self.device or 0  # set by the capture
        state = _cuda.state
        info = state.tls.device
        restore = None
        if info is None or info.id != device or (state.multi_gpu and _cuda.current_context() != state.contexts.get(device)):
            _, restore = _cuda.enter_device(device)
        try:
            _cuda.note_launch(self._label, (0, 0, 0), (0, 0, 0), 0)  # named if a later CUDA call reports a fault (no dims)
            err = _cuda.bindings().cuGraphLaunch(self._exec, handle)[0]
        finally:
            if restore is not None:
                _cuda.set_context(restore)
        if int(err) != 0:
            if int(err) in _cuda.STICKY:
                raise _cuda.fault(err, f"the replay of {self._label}", current=self._label)
            raise GraphCaptureError(f"Graph.launch(): replaying {self._label} failed: {_cuda.error_text(err)}")

    def upload(self, stream: Any = None) -> None:
        """Upload the graph to the device ahead of its first replay, so that replay does not
        pay for it (``cuGraphUpload``).

        Parameters
        ----------
        stream : stream-like, optional
            Default: the stream given to [`cuforge.graph`][cuforge.graph], else the default stream.
        """
        handle = self._ready("upload()", stream)
        with _cuda.on_device(self.device):  # type: ignore[arg-type]
            _cuda.check(_cuda.bindings().cuGraphUpload(self._exec, handle), "cuGraphUpload")

    def _ready(self, what: str, stream: Any) -> int:
        if self._exec is None:
            raise GraphCaptureError(f"Graph.{what}: the graph has no captured launches (it was never captured, or closed)")
        for module in self._modules:
            module._check_loaded(f"Graph.{what}")
        return self._replay if stream is None else _launch.stream_handle(stream, f"Graph.{what}")

    @property
    def _label(self) -> str:
        return f"cf.graph [{describe(self.launches)}]"

    def close(self) -> None:
        """Free the executable graph and the graph's own stream now (else when it is collected)."""
        exec_, own = self._exec, self._own_stream
        self._exec = self._own_stream = None
        self._keep, self._modules = [], ()
        if _cuda.state.failure is not None or (exec_ is None and own is None):
            return
        if exec_ is not None:
            _cuda.bindings().cuGraphExecDestroy(exec_)
        if own is not None:
            _cuda.bindings().cuStreamDestroy(own)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown, or the context gone: nothing left to free
            pass

    def __repr__(self) -> str:
        state = describe(self.launches) if self._exec is not None else "not captured"
        return f"<cuforge.Graph {state} on device {self.device}>"


_NON_BLOCKING = 1  # CU_STREAM_NON_BLOCKING


def invalidated(error: str, exc: BaseException | None = None) -> str:
    """The message for a capture that CUDA ended with ``error`` (its name and text); ``exc``
    is the exception another library raised in the block, if one did."""
    raised = f"{type(exc).__name__} raised in the block ({exc}), and " if exc is not None else ""
    return (
        f"cf.graph(): {raised}CUDA ended the capture with an error, {error}: something in the block did what a "
        f"capture cannot hold (a synchronize, an allocation, a copy to or from pageable host memory on the capture "
        f"stream, work on the legacy default stream while a blocking stream=... captures); nothing was recorded, "
        f"and the thread can capture again: do that work before or after the `with` block, or capture with "
        f"cf.graph(mode='relaxed'), which lets the capturing thread's synchronous calls run outside the graph"
    )


def _destroy(captured: Any) -> None:
    if captured is not None and int(captured):
        _cuda.bindings().cuGraphDestroy(captured)


def describe(labels: tuple[str, ...]) -> str:
    """'3 launches: Saxpy x2, Scale' (in first-seen order)."""
    if not labels:
        return "no launches"
    counts = Counter(labels)
    parts = [f"{k} x{n}" if n > 1 else k for k, n in counts.items()]
    return f"{len(labels)} launch{'es' if len(labels) > 1 else ''}: {', '.join(parts)}"
