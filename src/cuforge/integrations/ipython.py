"""The ``%%cuda`` cell magic and ``%cuda_info``; the public face is ``cuforge.ipython``."""

from __future__ import annotations

import contextlib
import keyword
import re
import shlex
from typing import Any

import jinja2
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .. import _config
from .._compile import cache as _cache
from .._compile import disk as _disk
from .._compile import identity as _identity
from .._compile import parallel as _parallel
from .._compile import stats as _stats
from .._compile import toolchain as _toolchain
from .._compile.targets import default_arch
from .._declare import cparse as _cparse
from .._declare import render as _render
from .._declare.dtypes import BY_NAME
from .._kernel.decorator import Kernel, kernel
from .._kernel.kernel import current_cc, refuse_compile_in_capture, run_on_cpu
from .._kernel.template import KernelTemplate
from .._runtime import cuda as _cuda
from ..errors import ArgumentError, CellCompileError, CompileError, DeclarationError, NoDeviceError, ParseError
from ..options import CompileOptions, check_arch

__all__ = ["CellCompileError", "CudaMagics", "KernelTemplate", "load_ipython_extension"]


NO_GPU = (
    "%%cuda: no GPU to compile for; pass --device cpu to compile the cell for the CPU and run its kernels there "
    "(or choose the CPU first: cf.set_device('cpu'), or CUFORGE_DEVICE=cpu), or --arch sm_90 (CUFORGE_ARCH=sm_90) "
    "to compile it for a GPU without launching"
)


def _default_arch(gpu: int | None) -> str:
    """The arch of GPU ``gpu`` (None: the thread's), else CUFORGE_ARCH; without either, a
    UsageError that says how to go on: first, on the CPU."""
    try:
        return default_arch("%%cuda", current_cc if gpu is None else lambda: _cuda.device_info(gpu).cc)
    except NoDeviceError:
        raise UsageError(NO_GPU) from None


def _device(text: str) -> str | int | None:
    """``--device``: ``cpu``, or a GPU as ``cuda`` (None: the thread's) or ``cuda:N`` (N)."""
    try:
        return _cuda.parse_device(text, "%%cuda: --device")
    except ArgumentError:
        raise UsageError(f"%%cuda: --device expects cpu, cuda or cuda:N, got {text!r}") from None


@magics_class
class CudaMagics(Magics):
    """``%%cuda`` and ``%cuda_info``."""

    @property
    def _user_ns(self) -> dict[str, Any]:
        assert self.shell is not None  # registered on a shell by load_ipython_extension
        return self.shell.user_ns  # type: ignore[no-any-return]

    @magic_arguments()
    @argument("--arch", help="target arch, e.g. sm_90 (default: the GPU's; CUFORGE_ARCH without one)")
    @argument(
        "--device",
        help="cpu: compile for the CPU, and the kernels' calls run there (cuforge's CPU backend); "
        "cuda or cuda:N: compile for the GPU (default: the thread's or process's choice, cf.set_device or "
        "CUFORGE_DEVICE; with --arch, that GPU arch)",
    )
    @argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]", help="a macro (repeatable)")
    @argument("--std", help="C++ dialect: c++11, c++14, c++17 (default) or c++20")
    @argument("--options", default="", help="further NVRTC flags, as one quoted string")
    @argument("--name", help="bind the cell's one kernel under this name")
    @argument("--instantiate", action="append", default=[], metavar="EXPR", help="e.g. 'k<float, 256>' (repeatable)")
    @argument("--signature", action="append", default=[], metavar="SIG", help="e.g. 'k(a: float32, x: In[float32])'")
    @argument("--show", action="append", choices=["source", "ptx", "sass-summary"], default=[], help="print what was compiled")
    @argument("--no-cache", action="store_true", help="do not read or write the disk cache for this cell")
    @argument(
        "--check",
        action="store_true",
        help="the cell's kernels run checked on the CPU (out-of-bounds accesses, uninitialised reads, races, warp and "
        "barrier misuse raised as errors), as with check=True at each call",
    )
    @argument("--cooperative", action="store_true", help="launch the cell's kernels cooperatively (grid sync)")
    @argument("--cluster", metavar="X[,Y[,Z]]", help="launch in thread-block clusters of this shape (sm_90+)")
    @cell_magic
    def cuda(self, line: str, cell: str) -> None:
        """Compile the cell's CUDA C++ and bind each ``__global__`` kernel as a checked callable."""
        args = parse_argstring(self.cuda, line)
        for attr in ("instantiate", "signature", "defines"):
            setattr(args, attr, [_unquote(v) for v in getattr(args, attr)])
        args.options, args.name, args.arch = _unquote(args.options), _unquote(args.name), _unquote(args.arch)
        opts = self._options(args)
        args.launch = {"cooperative": args.cooperative, "cluster": _cluster(_unquote(args.cluster))}
        # No --device: the thread's or the process's choice, as the cell's calls follow it; an
        # explicit --arch is a GPU compile (compile-only without a GPU)
        device = _device(_unquote(args.device)) if args.device else None
        chosen = device == "cpu"
        on_cpu = chosen or (args.device is None and not args.arch and _cuda.on_cpu())
        if args.check and not on_cpu:
            raise UsageError(
                "%%cuda: --check runs the cell's kernels checked on cuforge's CPU backend; add --device cpu (on the GPU, "
                "run the kernels under NVIDIA's compute-sanitizer, e.g. pytest --cuforge-sanitize)"
            )
        try:
            arch = check_arch(args.arch) if args.arch else "" if on_cpu else _default_arch(device)  # type: ignore[arg-type]
        except DeclarationError as exc:
            raise UsageError(f"%%cuda: --{exc}") from None
        # extern __shared__ arrays as one array of bytes: a template's, instantiated for two
        # types, would otherwise clash and split the cell into a program per instantiation
        source, _ = _cparse.share_dynamic_shared(self._render(cell))
        bound = self._build(source, args, opts)
        with _config.scope(cache="0") if args.no_cache else contextlib.nullcontext():
            kernels = [k for obj in bound.values() for k in _kernels_of(obj)]
            try:  # every kernel of the cell in one program (NVRTC's, or the CPU's library): the cell is one source
                if on_cpu:
                    run_on_cpu(kernels, prefer=chosen, check=args.check)
                    compiled = []
                else:
                    compiled = _cache.compile_together(kernels, arch, None, who="%%cuda", guard=refuse_compile_in_capture)
            except CompileError as exc:
                raise CellCompileError(str(exc), log=exc.log, source=exc.source, options=exc.options) from None
        if any(_parallel.fell_back(ck.log) for ck in compiled):  # this cell's results, not another thread's
            names = ", ".join(k.name_expression for k in kernels)
            print(f"note: the cell's kernels ({names}) could not share one NVRTC program, so each was compiled alone: "
                  f"their declarations clash (NVRTC: 'declaration is incompatible with previous'), as an extern "
                  f"__shared__ array of a template's type does where cuforge cannot rewrite it as one array of bytes; "
                  f"each kernel then has its own copy of the cell's __device__ and __constant__ variables")  # fmt: skip
        for what in args.show:
            if on_cpu and what != "source":
                raise UsageError(f"%%cuda: --show {what} shows GPU code; with --device cpu only --show source is there")
            self._show(what, bound, arch)
        self._user_ns.update(bound)
        print("bound: " + "; ".join(_describe(name, obj) for name, obj in bound.items()))
        renamed = sorted({q.name[:-1] for k in kernels for q in k.signature.params
                          if q.name.endswith("_") and keyword.iskeyword(q.name[:-1])})  # fmt: skip
        if len(renamed) == 1:
            print(f"note: C++ parameter '{renamed[0]}' is a Python keyword: pass it as {renamed[0]}_=...")
        elif renamed:
            print(f"note: C++ parameters {', '.join(repr(n) for n in renamed)} are Python keywords: pass them as "
                  f"{', '.join(n + '_=...' for n in renamed)}")  # fmt: skip

    def _options(self, args: Any) -> CompileOptions:
        defines: list[tuple[str, str | None]] = []
        for d in args.defines:
            name, _, value = d.partition("=")
            defines.append((name, value if "=" in d else None))
        try:
            extra = tuple(shlex.split(args.options))
            return CompileOptions(std=args.std or "c++17", defines=tuple(defines), extra=extra)
        except (DeclarationError, ValueError) as exc:
            raise UsageError(f"%%cuda: {exc}") from None

    def _render(self, cell: str) -> str:
        if not any(mark in cell for mark in ("{{", "{%", "{#")):
            return cell
        try:
            return _render.environment().from_string(cell).render(self._user_ns)
        except jinja2.UndefinedError as exc:
            m = re.search(r"'([^']+)' is undefined", exc.message or "")
            name = m.group(1) if m else str(exc)
            raise UsageError(f"%%cuda: the cell uses {{{{ {name} }}}}, but '{name}' is not defined in the notebook") from None
        except jinja2.TemplateSyntaxError as exc:
            raise UsageError(f"%%cuda: Jinja syntax error at cell line {exc.lineno}: {exc.message}") from None

    def _build(self, source: str, args: Any, opts: CompileOptions) -> dict[str, Any]:
        try:
            parsed = _cparse.find_kernels(source)
            signatures = dict(_cparse.parse_signature(s) for s in args.signature)
            wanted: dict[str, list[list[str]]] = {}
            for expr in args.instantiate:
                base, targs = _cparse.split_instantiation(expr)
                wanted.setdefault(base, []).append(targs)
        except ParseError as exc:
            raise UsageError(f"%%cuda: {exc}") from None
        if not parsed:
            raise UsageError("%%cuda: the cell declares no __global__ kernel")
        names = {p.name for p in parsed}
        for base in wanted:
            if base not in names:
                raise UsageError(f"%%cuda: --instantiate names '{base}', but the cell's kernels are {', '.join(sorted(names))}")
        if args.name and len(parsed) != 1:
            raise UsageError(f"%%cuda: --name binds one kernel, but the cell has {len(parsed)} ({', '.join(sorted(names))})")
        if None in signatures and len(parsed) == 1:
            signatures[parsed[0].name] = signatures.pop(None)
        bound: dict[str, Any] = {}
        for p in parsed:
            binding = args.name or p.name
            try:
                if p.template_params:
                    if p.name not in wanted:
                        raise UsageError(
                            f"%%cuda: kernel '{p.name}' is a template; add --instantiate '{p.name}<...>' for each "
                            f"instantiation to bind (its parameters: {', '.join(n for _, n in p.template_params)})"
                        )
                    instances = {}
                    for targs in wanted[p.name]:
                        k = _make(p, source, opts, signatures.get(p.name), targs, args.launch)
                        instances[tuple(_spell(a) for a in targs)] = k
                    bound[binding] = KernelTemplate(binding, instances)
                else:
                    if p.name in wanted:
                        raise UsageError(f"%%cuda: --instantiate names '{p.name}', which is not a template")
                    bound[binding] = _make(p, source, opts, signatures.get(p.name), None, args.launch)
            except (ParseError, DeclarationError) as exc:
                raise UsageError(f"%%cuda: {exc}") from None
        return bound

    def _show(self, what: str, bound: dict[str, Any], arch: str) -> None:
        for obj in bound.values():
            for k in _kernels_of(obj):
                if what == "source":
                    print(f"// ---- {k.name_expression}: source\n{k.render()}")
                elif what == "ptx":
                    ptx_arch = arch.replace("sm_", "compute_")
                    print(f"// ---- {k.name_expression}: PTX for {ptx_arch}\n{k.compile(ptx_arch).ptx}")
                else:
                    ck = k.compile(arch)
                    res = ck.resources()
                    print(
                        f"{k.name_expression}: {ck.code_type} for {ck.arch}, {len(ck.code)} bytes, symbol {ck.lowered_name}; "
                        f"registers {res.get('registers', '?')}, static shared {res.get('shared_bytes', '?')} B, "
                        f"stack frame {res.get('frame_bytes', '?')} B"
                    )

    @line_magic
    def cuda_info(self, line: str = "") -> None:
        """Print the device, driver, NVRTC version, the CPU backend's compiler, and the cache's
        location and counters."""
        try:
            dev = _cuda.current_device()
            version = _cuda.check(_cuda.bindings().cuDriverGetVersion(), "cuDriverGetVersion")
            print(f"device:  {dev.name} (device {dev.id}, compute capability {dev.cc // 10}.{dev.cc % 10})")
            print(f"driver:  CUDA {int(version) // 1000}.{int(version) % 1000 // 10}")
        except NoDeviceError as exc:
            print(f"device:  none ({exc})")
        wheel = _identity.nvrtc_wheel_library()
        where = f"wheel: {wheel}" if wheel is not None else "the system's CUDA toolkit"
        print(f"NVRTC:   {'.'.join(map(str, _toolchain.nvrtc_version()))} ({where})")
        print(f"CPU:     {_cpu_line()}")
        disk = _disk.current()
        if disk is None:
            print(f"cache:   disk cache off or unavailable ({_config.cache_dir()})")
        else:
            info = disk.info()
            print(f"cache:   {info['path']}: {info['entries']} entries, {info['bytes'] / 2**20:.2f} MiB")
        s = _stats.cache_stats()
        print(
            f"counters: memory_hits={s.memory_hits} disk_hits={s.disk_hits} compiles={s.compiles} "
            f"compile_seconds={s.compile_seconds:.3f} disk_errors={s.disk_errors} pch_creations={s.pch_creations} "
            f"pch_hits={s.pch_hits} cpu_compiles={s.cpu_compiles}"
        )


def _cpu_line() -> str:
    """%cuda_info's line on the CPU backend: its compiler, and whether launches go there."""
    from .._cpu.toolchain import find_compiler  # (the CPU backend's side: imported on use)
    from ..errors import CompilerNotFoundError

    try:
        found = find_compiler()
    except CompilerNotFoundError as exc:
        return f"no C++ compiler, so kernels cannot run on the CPU ({exc})"
    chosen = "chosen for launches that name no device" if _cuda.on_cpu() else "launches go there with device='cpu'"
    return f"{found.version} ({' '.join(found.argv)}); {chosen}"


def _unquote(value: Any) -> Any:
    """IPython's argument splitting keeps quotes: 'k<float, 256>' arrives quoted."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _spell(arg: str) -> str:
    """A template argument as C++: cuforge dtype names (``float32``) become C++ types; anything
    else is C++ already (``float``, ``256``). NumPy's spellings are not guessed: to NumPy
    ``"float"`` means float64."""
    found = BY_NAME.get(arg.strip())
    return found.cpp if found is not None else " ".join(arg.split())


def _cluster(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(v) for v in text.replace(" ", "").split(","))
    except ValueError:
        raise UsageError(f"%%cuda: --cluster expects X[,Y[,Z]] positive ints, such as 2 or 2,1,1; got {text!r}") from None


def _make(p: _cparse.ParsedKernel, source: str, opts: CompileOptions, sig: Any, targs: list[str] | None,
          launch: dict[str, Any] | None = None) -> Kernel:  # fmt: skip
    """A cuforge kernel for one parsed declaration (one instantiation of a template);
    ``launch`` holds the class keys of its launch kind (cooperative, cluster)."""
    subs: dict[str, str] = {}
    expr = p.name
    if targs is not None:
        if len(targs) != len(p.template_params):
            raise ParseError(
                f"{p.name}<{', '.join(targs)}> gives {len(targs)} template arguments; {p.name} takes "
                f"{len(p.template_params)} ({', '.join(n for _, n in p.template_params)})"
            )
        subs = {n: a for (kind, n), a in zip(p.template_params, targs) if kind == "type"}
        expr = f"{p.name}<{', '.join(_spell(a) for a in targs)}>"
    if sig is not None:
        annotations = dict(sig)
    else:
        # A C++ name that is a Python keyword (`in`, `lambda`) is bound as `in_` on the Python
        # side, where it must be a keyword argument's name; the bound line says so. A pointer
        # defaulting to NULL is Optional: None, or left out, passes a null pointer.
        annotations = {_python_name(n): _cparse.cpp_type(ty, f"{expr}: parameter '{n}'", subs, p.defaults.get(n))
                       for n, ty in p.params}  # fmt: skip
    ns = {"__annotations__": annotations, "source": source, "name": expr, "options": opts, "__module__": "__main__",
          **(launch or {})}  # fmt: skip
    cls = type(p.name, (), ns)
    cls.__qualname__ = expr
    return kernel(cls)  # type: ignore[no-any-return]


def _python_name(name: str) -> str:
    return f"{name}_" if keyword.iskeyword(name) else name


def _kernels_of(obj: Any) -> list[Kernel]:
    return list(obj.instances.values()) if isinstance(obj, KernelTemplate) else [obj]


def _describe(name: str, obj: Any) -> str:
    if isinstance(obj, KernelTemplate):
        return ", ".join(k.signature.describe(k.name_expression) for k in obj.instances.values()).replace(
            obj.name + "<", name + "<", 1
        )
    return obj.signature.describe(name)


def load_ipython_extension(ipython: Any) -> None:
    """Called by ``%load_ext cuforge``."""
    ipython.register_magics(CudaMagics)
