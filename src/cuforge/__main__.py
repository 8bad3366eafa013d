"""cuforge's command line.

- ``python -m cuforge cache info|clear|prune``: look after the persistent compile cache;
- ``python -m cuforge build PKG.MODULE ... --arch sm_80 --arch sm_90 -o DIR``: fatbins and a
  manifest that ``cf.use_build(DIR)`` serves kernels from, with no NVRTC;
- ``python -m cuforge precompile PKG.MODULE ...``: warm the compile cache for this GPU.
"""

from __future__ import annotations

import argparse
import sys

from . import _builder, _config, _disk
from .errors import CuforgeError
from .registry import registry


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
    pre.add_argument("--workers", type=int, default=None,
                     help="worker processes a heavy family may use (default: the CPUs)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            manifest = _builder.build(args.modules, args.arch, args.out, progress=sys.stderr.isatty())
            print(f"built {len(manifest['kernels'])} kernels for {', '.join(args.arch)} into {args.out}")
            return 0
        if args.command == "precompile":
            chosen = _builder.declarations(args.modules)
            done = registry.precompile(args.arch, kernels=chosen, workers=args.workers, progress=True)
            print(f"precompiled {sum(len(v) for v in done.values())} kernels into the cache")
            return 0
    except CuforgeError as exc:
        print(f"cuforge {args.command}: {exc}", file=sys.stderr)
        return 1
    return _cache_command(args)


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
