"""The pytest plugin's checks of launches: ``--cuforge-check`` (CPU launches run checked) and
``--cuforge-cpu-timeout`` (a CPU launch that never ends fails its test)."""

from __future__ import annotations

import contextlib
import os

import pytest

CPU_TIMEOUT = 60.0  # seconds a CPU launch may run in a test, unless told: a kernel that never ends fails its test


def configure_checks(config: pytest.Config) -> None:
    """The session's checked mode (``--cuforge-check``) and CPU time limit, put back at its end."""
    from .. import _config

    checks = contextlib.ExitStack()  # (a test's own _config.scope(check=...) still wins inside it)
    checks.enter_context(_config.scope(check="1" if config.getoption("cuforge_check") == "on" else "0"))
    config.add_cleanup(checks.close)
    _limit_cpu_launches(config)


def _limit_cpu_launches(config: pytest.Config) -> None:
    """The CPU launches' time limit for the session (CUFORGE_CPU_TIMEOUT's), put back at its end:
    the option's, else the environment's, else CPU_TIMEOUT."""
    seconds = config.getoption("cuforge_cpu_timeout")
    if seconds is None and "CUFORGE_CPU_TIMEOUT" not in os.environ:
        seconds = CPU_TIMEOUT
    if seconds is None:
        return
    if not seconds >= 0:
        raise pytest.UsageError(f"--cuforge-cpu-timeout expects seconds >= 0 (0: no limit), got {seconds:g}")
    from .. import _config

    saved = _config.overrides_of("cpu_timeout")
    _config.override(cpu_timeout=str(seconds))
    config.add_cleanup(lambda: _config.restore_overrides(("cpu_timeout",), saved))
