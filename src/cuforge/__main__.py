"""``python -m cuforge``: the command line (build, cache, info); see ``cuforge.integrations.cli``."""

from .integrations.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
