"""``python -m cuforge cache info|clear|prune``: look after the persistent compile cache."""

from __future__ import annotations

import argparse
import sys

from . import _config, _disk


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cuforge", description="cuforge's command line")
    sub = parser.add_subparsers(dest="command", required=True)
    cache = sub.add_parser("cache", help="the persistent compile cache")
    cache.add_argument("action", choices=("info", "clear", "prune"), help="print location and size, empty it, or trim it")
    cache.add_argument("--dir", help="the cache directory (default: CUFORGE_CACHE_DIR or the user cache dir)")
    cache.add_argument("--max-mb", type=float, help="prune: trim to this many MiB (default: the configured cap)")
    args = parser.parse_args(argv)

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
