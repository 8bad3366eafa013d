"""The pytest plugin's per-session state, shared by its modules (kept in ``config.stash``)."""

from __future__ import annotations

import re

import pytest


class _State:
    """Per-session plugin state, kept in ``config.stash``."""

    def __init__(self) -> None:
        self.gpu_reason: str | None = None  # why there is no usable GPU, once looked at
        self.gpu_checked = False
        self.device: str | None = None  # where `launches` tests run: "cuda", "cpu", or None (skipped)
        self.device_reason: str | None = None  # why they cannot run anywhere, once looked at
        self.device_checked = False
        self.context_broken: str | None = None  # set after a kernel fault
        self.skip_details: dict[str, str] = {}  # what a skip's short reason stands for: the terminal summary's
        self.registered_before: set[int] = set()
        self.batches: dict[int, BaseException | None] = {}
        self.sanitizer: str | None = None  # compute-sanitizer's path under --cuforge-sanitize
        self.sanitize_tools: tuple[str, ...] = ()


STATE = pytest.StashKey[_State]()
config_of_session: list[pytest.Config] = []  # the running session's, for gpu_module() at import


def brief(config: pytest.Config, what: str, reason: str) -> str:
    """``reason`` in a few words, for a skip line that ``-ra`` repeats for each test; the
    whole is written once, in the terminal summary, under ``what``."""
    config.stash[STATE].skip_details[what] = reason
    missing = re.search(r"(lib[\w.+-]+\.so[\d.]*): cannot open shared object file", reason)
    if missing:
        return f"{missing.group(1)} missing"
    first = reason.split("; ")[0].split(". ")[0]
    return first if len(first) <= 60 else first[:57] + "..."
