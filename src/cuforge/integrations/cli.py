"""cuforge's command line.

- ``python -m cuforge cache info|clear|prune``: look after the persistent compile cache;
- ``python -m cuforge build PKG.MODULE ... --arch sm_80 --arch sm_90 -o DIR``: fatbins and a
  manifest that ``cf.use_build(DIR)`` serves kernels from, with no NVRTC (exit status 1,
  with the list, where some instantiations failed to compile: the rest are built);
- ``python -m cuforge precompile PKG.MODULE ...``: warm the compile cache for this GPU
  (or ``--arch``), or with ``--device cpu`` the CPU backend's builds.

Progress goes to stderr: one line rewritten in place on a terminal, a line per step elsewhere.
"""

from __future__ import annotations

import argparse
import sys

from .. import _config
from .._compile import disk as _disk
from .._compile.targets import device_target
from .._kernel import aot as _aot
from .._kernel.registry import registry
from .._runtime import cuda as _cuda
from ..errors import ArgumentError, CuforgeError, NoDeviceError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cuforge", description="cuforge's command line")
    sub = parser.add_subparsers(dest="command", required=True)
    cache = sub.add_parser("cache", help="the persistent compile cache")
    cache.add_argument("action", choices=("info", "clear", "prune"), help="print location and size, empty it, or trim it")
    cache.add_argument("--dir", help="the cache directory (default: CUFORGE_CACHE_DIR or the user cache dir)")
    cache.add_argument("--max-mb", type=float, help="prune: trim to this many MiB (default: the configured cap)")
    build = sub.add_parser("build", help="compile modules' kernels ahead of time into fatbins and a manifest")
    build.add_argument("modules", nargs="+", metavar="PKG.MODULE", help="Python modules that declare kernels")
    build.add_argument("--arch", action="append", required=True, help="sm_XY (cubin) or compute_XY (PTX); repeatable")
    build.add_argument("-o", "--out", required=True, help="the build directory")
    pre = sub.add_parser("precompile", help="compile modules' kernels into the cache (for this GPU, or --arch)")
    pre.add_argument("modules", nargs="+", metavar="PKG.MODULE", help="Python modules that declare kernels")
    pre.add_argument("--arch", help="default: the GPU's arch, else CUFORGE_ARCH")
    pre.add_argument("--device", help="cpu: build for cuforge's CPU backend; cuda or cuda:N: compile for that GPU's arch "
                     "(default: CUFORGE_DEVICE's choice, else the GPU)")  # fmt: skip
    pre.add_argument("--workers", type=int, default=None,
                     help="worker processes a heavy family may use (default: the CPUs)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            manifest = _aot.build(args.modules, args.arch, args.out, progress=True)
            print(f"built {len(manifest['kernels'])} kernels for {', '.join(args.arch)} into {args.out}")
            return _failures(manifest["failed"], len(manifest["kernels"]))
        if args.command == "precompile":
            device = _cuda.parse_device(args.device, "--device") if args.device else None
            on_cpu = device == "cpu" or (args.device is None and not args.arch and _cuda.state.default_on_cpu())
            if on_cpu and args.arch:
                raise ArgumentError("--device cpu builds for the CPU, --arch for a GPU: pass one of them")
            chosen = _aot.declarations(args.modules)
            if on_cpu:
                built = _aot.precompile_cpu(chosen, progress=True)
                print(f"built {built} kernels for the CPU into the cache")
                return 0
            arch = args.arch or _this_gpu(device)  # type: ignore[arg-type]
            done = registry.precompile(arch, kernels=chosen, workers=args.workers, progress=True)
            print(f"precompiled {sum(len(v) for v in done.values())} kernels into the cache")
            return 0
    except CuforgeError as exc:
        print(f"cuforge {args.command}: {exc}", file=sys.stderr)
        return 1
    return _cache_command(args)


def _failures(failed: list[dict[str, str]], built: int) -> int:
    """List the instantiations a build left out (on stderr); the exit status: 1 if any."""
    if not failed:
        return 0
    print(f"cuforge build: left out of the build, as they failed to compile (the other {built} kernels are in it):",
          file=sys.stderr)  # fmt: skip
    for f in failed:
        said = " ".join(line.strip() for line in f["error"].splitlines()[:2])  # what failed, and the first message
        print(f"  {f['kernel']} ({f['qualname']}, for {f['arch']}): {said}", file=sys.stderr)
    return 1


def _this_gpu(gpu: int | None) -> str:
    """precompile's arch without --arch: GPU ``gpu``'s (None: the default one), else
    CUFORGE_ARCH (as ``targets.default_arch``), else an error that names the flags."""
    try:
        return device_target((_cuda.current_device() if gpu is None else _cuda.device_info(gpu)).cc)
    except NoDeviceError as exc:
        if _config.arch():
            return _config.arch()
        reason = str(exc).split(";")[0]  # why there is no device; the rest advises Python code
        raise NoDeviceError(
            f"{reason}; pass --device cpu to build the kernels for cuforge's CPU backend, or --arch sm_90 (or set "
            f"CUFORGE_ARCH=sm_90) to compile them for a GPU this machine does not have"
        ) from None


def _cache_command(args: argparse.Namespace) -> int:
    if args.dir:
        _config.set_cache(path=args.dir)
    if not _config.cache_enabled():
        print("cuforge: the disk cache is off (CUFORGE_CACHE=0)")
        return 0
    disk = _disk.current()
    if disk is None:
        print(f"cuforge: cannot open the cache at {_config.cache_dir()}", file=sys.stderr)
        return 1
    if args.action == "clear":
        before = disk.info()
        disk.clear()
        print(f"cleared {before['entries']} entries ({before['bytes'] / 2**20:.1f} MiB) from {disk.root}")
    elif args.action == "prune":
        cap = int(args.max_mb * 2**20) if args.max_mb is not None else disk.max_bytes
        removed = disk.prune(cap)
        info = disk.info()
        print(f"removed {removed} entries; {info['entries']} left ({info['bytes'] / 2**20:.1f} MiB of {cap / 2**20:.1f} MiB)")
    else:
        info = disk.info()
        print(f"location: {info['path']}")
        print(f"entries:  {info['entries']}")
        print(f"size:     {info['bytes'] / 2**20:.2f} MiB (cap {info['max_bytes'] / 2**20:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
