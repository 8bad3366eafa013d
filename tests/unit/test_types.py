import numpy as np
import pytest

import cuforge as cf
from cuforge._declare.dtypes import SCALAR_TYPES, dtype_of
from cuforge._runtime import cuda as _cuda


def test_every_scalar_type_knows_cpp_numpy_and_size():
    expected = {
        "bool": "bool", "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
        "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
        "uint64": "unsigned long long", "float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float",
        "float64": "double", "complex64": "cuforge::complex<float>",
        "complex128": "cuforge::complex<double>",
    }  # fmt: skip
    assert {t.name: t.cpp for t in SCALAR_TYPES} == expected
    for t in SCALAR_TYPES:
        assert str(t) == t.cpp
        assert t.numpy.itemsize == t.itemsize
        assert dtype_of(t.numpy) is t
        assert repr(t) == f"cuforge.{t.name}"


def test_dtype_properties():
    assert cf.float16.is_float and not cf.float16.is_integer
    assert cf.uint8.is_integer and cf.complex64.is_complex
    assert cf.float16.header == "cuda_fp16.h" and cf.bfloat16.header == "cuda_bf16.h"
    assert dtype_of("float32") is cf.float32 and dtype_of(np.float64) is cf.float64
    assert dtype_of(np.dtype(">f4")) is None  # byte-swapped: no CUDA counterpart
    assert dtype_of(object) is None


def test_array_annotations():
    a = cf.Array[cf.float32]
    assert (a.dtype, a.ndim, a.intent, a.writes) == (cf.float32, None, "inout", True)
    assert repr(cf.In[cf.float64, 2]) == "In[float64, 2]"
    assert not cf.In[cf.int32].writes and cf.Out[cf.int32].writes
    assert cf.Array[cf.float32] == cf.Array[cf.float32]


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: cf.Array[np.float32], r"Array\[\.\.\.\] needs a cuforge dtype such as cf.float32"),
        (lambda: cf.In[cf.float32, 0], r"the rank must be a positive int"),
        (lambda: cf.Out[cf.float32, 2.0], r"the rank must be a positive int"),
        (lambda: cf.Array[cf.float32, 1, 2], r"takes a dtype and optionally a rank"),
    ],
)
def test_array_annotation_errors(build, match):
    with pytest.raises(cf.DeclarationError, match=match):
        build()


def test_every_public_type_and_value_pickles():
    import pickle

    import cloudpickle

    for name in cf.__all__:
        obj = getattr(cf, name)
        if isinstance(obj, type):
            assert pickle.loads(pickle.dumps(obj)) is obj, name
    for dt in SCALAR_TYPES:
        assert pickle.loads(pickle.dumps(dt)) is dt  # singletons stay singletons (cf.bool_ is named "bool")
        assert cloudpickle.loads(cloudpickle.dumps(dt)) is dt
    for value in (cf.In[cf.float32, 2], cf.Out[cf.bfloat16], cf.CompileOptions(fast_math=True, defines={"N": 4})):
        assert pickle.loads(pickle.dumps(value)) == value
    err = cf.CompileError("K: NVRTC failed", log="log", source="src", options=("-arch=sm_90",))
    back = pickle.loads(pickle.dumps(err))
    assert (str(back), back.log, back.source, back.options) == (str(err), "log", "src", ("-arch=sm_90",))
    assert str(pickle.loads(pickle.dumps(cf.ArgumentTypeError("K: argument 'x' expects ...")))) == "K: argument 'x' expects ..."


def test_a_compiled_kernel_pickles_as_its_binary(saxpy_sm90):
    import pickle

    back = pickle.loads(pickle.dumps(saxpy_sm90))
    assert (back.cubin, back.lowered_name, back.source, back.arch, back.flags) == (
        saxpy_sm90.cubin, saxpy_sm90.lowered_name, saxpy_sm90.source, saxpy_sm90.arch, saxpy_sm90.flags)
    assert back.resources() == saxpy_sm90.resources() and _cuda.compiled.loaded_handle(back) is None
