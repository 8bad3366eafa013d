"""The ctypes prototypes of cuforge._libcuda against cuda.h (from the nvidia-cuda-runtime
wheel, a dependency) and its numbers against cuda.bindings' enums: a wrong argument size or
count would pass garbage to the driver, which no CPU test could otherwise see."""

from __future__ import annotations

import ctypes
import os
import re

import pytest

from cuforge._compile import headers as _headers
from cuforge._runtime import libcuda as _libcuda

HANDLES = {"CUcontext", "CUlibrary", "CUkernel"}  # typedef struct ... *: a pointer
FOUR_BYTES = {"int", "unsigned int", "CUdevice", "CUresult", "CUdevice_attribute", "CUfunction_attribute",
              "CUpointer_attribute"}  # fmt: skip
EIGHT_BYTES = {"size_t", "cuuint64_t", "CUdeviceptr"}


def _declarations() -> dict[str, list[str]]:
    include = _headers.cuda_include_dir()
    if include is None or not os.path.exists(os.path.join(include, "cuda.h")):
        pytest.fail("cuda.h not found: the nvidia-cuda-runtime wheel is a dependency of cuforge")
    with open(os.path.join(include, "cuda.h")) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    found: dict[str, list[str]] = {}
    for name, params in re.findall(r"CUresult CUDAAPI (\w+)\(([^;]*?)\);", text, flags=re.S):
        found.setdefault(name, [p.strip() for p in params.split(",")] if params.strip() not in ("", "void") else [])
    return found


def _size_of(param: str) -> int:
    """The size a C parameter declaration passes (all pointers and handles 8 bytes)."""
    kind = re.sub(r"\b(const)\b", "", param).strip()
    if "*" in kind:
        return 8
    kind = " ".join(kind.split()[:-1])  # drop the parameter's name
    if kind in HANDLES or kind in EIGHT_BYTES:
        return 8
    assert kind in FOUR_BYTES, f"unclassified C type {kind!r} in {param!r}"
    return 4


@pytest.mark.parametrize("name", sorted(_libcuda.PROTOTYPES))
def test_each_prototype_matches_cuda_h(name):
    declared = _declarations()[name]
    argtypes = _libcuda.PROTOTYPES[name][1]
    assert len(argtypes) == len(declared), f"{name}: {len(argtypes)} ctypes arguments, cuda.h declares {declared}"
    for param, argtype in zip(declared, argtypes, strict=True):
        assert ctypes.sizeof(argtype) == _size_of(param), f"{name}: {param!r} is passed as {argtype}"
        assert ("*" in param or param.split()[0] in HANDLES) == (argtype is ctypes.c_void_p or argtype is ctypes.c_char_p
                                                                 or hasattr(argtype, "contents")), param  # fmt: skip


def test_the_numbers_match_cuda_bindings():
    from cuda.bindings import driver

    for name, value in _libcuda.DEVICE_ATTRIBUTES.items():
        assert int(getattr(driver.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")) == value
    for name, value in _libcuda.FUNCTION_ATTRIBUTES.items():
        assert int(getattr(driver.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")) == value
    assert int(driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) == _libcuda.POINTER_DEVICE_ORDINAL
    flags = driver.CUdriverProcAddress_flags
    assert (int(flags.CU_GET_PROC_ADDRESS_DEFAULT), int(flags.CU_GET_PROC_ADDRESS_LEGACY_STREAM),
            int(flags.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) == (
        _libcuda.DEFAULT, _libcuda.LEGACY_STREAM, _libcuda.PER_THREAD_DEFAULT_STREAM)  # fmt: skip


def test_a_machine_without_the_driver_gets_no_device_error(monkeypatch):
    """No libcuda (this CPU machine, or a renamed library): NoDeviceError, not an OSError."""
    import cuforge as cf
    from cuforge._runtime import cuda as _cuda

    monkeypatch.setattr(_libcuda, "_library_name", lambda: "libcuda-absent.so.1")
    monkeypatch.setattr(_libcuda, "_proc_address", None)
    monkeypatch.setattr(_cuda.state, "failure", None)
    monkeypatch.setattr(_cuda.state, "devices", {})
    with pytest.raises(cf.NoDeviceError, match=r"no CUDA device is available \(OSError: libcuda-absent"):
        _cuda.state.open(0)
    assert _cuda.error_text(700) == "CUresult 700 (unknown)"  # an error text without a driver to ask
