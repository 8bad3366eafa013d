"""The pytest plugin's ``--cuforge-compile-all``: one test item per instantiation of every
kernel and family the collected modules (and ``--cuforge-modules``) register."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from ._pytest_state import STATE


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    if session.config.getoption("cuforge_compile_all"):
        from .._kernel.registry import registry

        session.config.stash[STATE].registered_before = {id(obj) for obj in registry.values()}
    return (yield)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("cuforge_compile_all"):
        return
    from .._kernel.family import Family
    from .._kernel.registry import registry

    modules = config.getoption("cuforge_modules")
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise pytest.UsageError(f"--cuforge-modules {name}: cannot import it: {exc}") from None
    before = config.stash[STATE].registered_before
    chosen = [
        obj
        for obj in registry.values()
        if id(obj) not in before
        or any(obj.__wrapped__.__module__ == m or obj.__wrapped__.__module__.startswith(m + ".") for m in modules)
    ]
    parent = CompileAll.from_parent(session, name="cuforge", nodeid="cuforge")
    for obj in chosen:
        kernels = obj.instantiations() if isinstance(obj, Family) else [obj]
        for k in kernels:
            items.append(CompileItem.from_parent(parent, name=f"compile[{_item_id(obj, k)}]", kernel=k, family=obj))


def _item_id(obj: Any, k: Any) -> str:
    if not k.template_args:
        return str(obj.__name__)
    return f"{obj.__name__}[{'-'.join(getattr(v, 'name', str(v)) for v in k.template_args.values())}]"


class CompileAll(pytest.Collector):
    """The parent of the compile items (their ids read ``cuforge::compile[Axpy[float32-256]]``)."""

    def collect(self) -> list[Any]:
        return []


class CompileItem(pytest.Item):
    """Compiles one instantiation for the session's arch (``--cuforge-arch``, the GPU's, or CUFORGE_ARCH)."""

    def __init__(self, *, kernel: Any, family: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kernel = kernel
        self.family = family

    def _arch(self) -> str:
        arch = self.config.getoption("cuforge_arch")
        if arch:
            return str(arch)
        from .._compile.targets import default_arch
        from .._kernel.kernel import current_cc
        from ..errors import CuforgeError

        try:
            return default_arch(f"compile {self.kernel.name_expression}", current_cc)  # the GPU's, else CUFORGE_ARCH
        except CuforgeError as exc:
            pytest.fail(f"{exc}. Under pytest: pass --cuforge-arch=sm_90 to compile for a GPU without one, or "
                        f"--cuforge-device=cpu to build the kernels for the CPU instead", pytrace=False)  # fmt: skip

    def runtest(self) -> None:
        from .._kernel.family import Family

        if self.config.getoption("cuforge_device") == "cpu":  # the CPU library, built and cached as a first launch would
            self.kernel._cpu_entry()
            return
        arch = self._arch()
        batches = self.config.stash[STATE].batches
        if isinstance(self.family, Family) and id(self.family) not in batches:
            # One NVRTC program for the whole family; if it fails, each item compiles alone
            # and reports its own error.
            try:
                self.family.precompile(arch)
                batches[id(self.family)] = None
            except Exception as exc:
                batches[id(self.family)] = exc
        self.kernel.compile(arch)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        from ..errors import CuforgeError

        if isinstance(excinfo.value, CuforgeError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        cls = self.kernel.__wrapped__
        try:
            path, line = inspect.getsourcefile(cls), inspect.getsourcelines(cls)[1]
        except (OSError, TypeError):
            path, line = None, None
        return (path or self.path, line, f"compile {self.kernel.name_expression}")
