"""cuforge kernels as PyTorch operators, without a GPU: schemas from annotations, the fake
implementation on meta tensors, and declaration errors (skipped where PyTorch is absent)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import cuforge as cf

from .. import examples

torch = pytest.importorskip("torch")
example = examples.load("torch_ops")  # its kernels: BiasSilu, a family over float32 and float64


@cf.kernel
class Saxpy:
    a: cf.float32
    x: cf.In[cf.float32]
    y: cf.Array[cf.float32]
    n: cf.int64
    flag: cf.bool_
    body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n && flag) y[i] += a * x[i];"


@cf.kernel
class Split:
    x: cf.In[cf.float32, 2]
    rows: cf.Out[cf.float32]
    cols: cf.Out[cf.int32]
    body = "/* no-op */"
    grid = 1


@cf.kernel
class Moments:
    T = cf.typeparam(cf.float32, cf.float64)
    out: cf.Out[T]
    mean: cf.Out[T]
    rstd: cf.Out[cf.float32]
    inp: cf.In[T, 2]
    weight: cf.In[T]
    body = "/* no-op */"
    grid = 1


@cf.kernel
class Norm:  # llm.c's layernorm: mean is kept only for the backward pass, bias may be absent
    T = cf.typeparam(cf.float32, cf.float64)
    out: cf.Out[T]
    mean: cf.Optional[cf.Out[T]]
    inp: cf.In[T, 2]
    bias: cf.Optional[cf.In[T]]
    body = "/* no-op */"
    grid = 1


act = example.bias_silu
saxpy_ = Saxpy.torch_op("cuforge_unit::saxpy_", sizes={"n": lambda x: x.numel()})
moments = Moments.torch_op(
    "cuforge_unit::moments",
    outputs={"out": "zeros like inp", "mean": lambda inp: (inp.shape[0],), "rstd": lambda inp: inp.shape[0]},
)
split = Split.torch_op("cuforge_unit::split", outputs={"rows": lambda x: (x.shape[0],), "cols": lambda x: x.shape[1]})


def test_schemas_come_from_the_annotations():
    assert str(torch.ops.cuforge_examples.bias_silu.default._schema) == (
        "cuforge_examples::bias_silu(Tensor x, Tensor bias) -> Tensor"
    )
    assert str(torch.ops.cuforge_unit.saxpy_.default._schema) == (
        "cuforge_unit::saxpy_(float a, Tensor x, Tensor(a2!) y, bool flag) -> ()"
    )
    assert str(torch.ops.cuforge_unit.split.default._schema) == "cuforge_unit::split(Tensor x) -> (Tensor, Tensor)"


def test_fake_implementation_gives_shapes_and_dtypes_on_meta_tensors():
    x = torch.empty(5, 7, device="meta", dtype=torch.float64)
    y = act(x, torch.empty(7, device="meta", dtype=torch.float64))
    assert (y.shape, y.dtype, y.device.type) == ((5, 7), torch.float64, "meta")  # a family's Out[T] takes x's dtype
    rows, cols = split(torch.empty(3, 4, device="meta"))
    assert (rows.shape, rows.dtype, cols.shape, cols.dtype) == ((3,), torch.float32, (4,), torch.int32)
    assert saxpy_(1.0, torch.empty(3, device="meta"), torch.empty(3, device="meta"), True) is None


def test_outputs_of_a_family_take_their_dtype_from_the_inputs_or_their_own_annotation():
    inp, weight = torch.empty(3, 4, device="meta", dtype=torch.float64), torch.empty(4, device="meta", dtype=torch.float64)
    out, mean, rstd = moments(inp, weight)
    assert [(t.shape, t.dtype) for t in (out, mean, rstd)] == [
        ((3, 4), torch.float64), ((3,), torch.float64), ((3,), torch.float32)
    ]  # fmt: skip


def test_optional_arrays_are_optional_tensors_and_none_passes_the_fake_implementation():
    norm = Norm.torch_op("cuforge_unit::norm", outputs={"out": lambda inp: inp.shape})
    assert str(torch.ops.cuforge_unit.norm.default._schema) == (
        "cuforge_unit::norm(Tensor(a0!)? mean, Tensor inp, Tensor? bias) -> Tensor"
    )
    inp = torch.empty(3, 4, device="meta", dtype=torch.float64)
    out = norm(None, inp, None)  # out's dtype is read off inp, the first input that is not None
    assert (out.shape, out.dtype) == ((3, 4), torch.float64)
    mean, bias = torch.empty(3, device="meta", dtype=torch.float64), torch.empty(4, device="meta", dtype=torch.float64)
    assert norm(mean, inp, bias).dtype == torch.float64
    wrong = r"argument 'bias' expects Optional\[In\[T\]\] \(float32 or float64\), got a torch.float16 tensor"
    with pytest.raises(cf.ArgumentTypeError, match=wrong):
        norm(None, inp, torch.empty(4, device="meta", dtype=torch.float16))


def test_an_optional_output_is_allocated_and_a_shape_cannot_be_like_an_optional_input():
    _, mean = Norm.torch_op("cuforge_unit::norm_all", outputs={"out": "like inp", "mean": lambda inp: inp.shape[0]})(
        torch.empty(3, 4, device="meta"), None
    )
    assert (mean.shape, mean.dtype) == ((3,), torch.float32)
    with pytest.raises(cf.DeclarationError, match=(
        r"^Norm \(torch op cuforge_unit::norm_bad\): outputs\['out'\] = 'like bias', and bias is Optional: it may be "
        r"None; take the shape from a tensor that is always given, or give a function"
    )):  # fmt: skip
        Norm.torch_op("cuforge_unit::norm_bad", outputs={"out": "like bias"})


def test_an_output_whose_type_parameter_only_none_inputs_set_is_named():
    @cf.kernel
    class Fill:
        T = cf.typeparam(cf.float32, cf.float64)
        out: cf.Out[T]
        like: cf.Optional[cf.In[T]]
        n: cf.int64
        body = "/* no-op */"

    fill = Fill.torch_op("cuforge_unit::fill_like", outputs={"out": lambda n: n})
    assert fill(torch.empty(2, device="meta", dtype=torch.float64), 3).dtype == torch.float64
    with pytest.raises(cf.ArgumentTypeError, match=(
        r"Fill \(torch op cuforge_unit::fill_like\): output 'out' takes its dtype from tensor argument 'like', which got "
        r"None; pass it as a tensor, or index the family$"
    )):  # fmt: skip
        fill(None, 3)


def test_an_output_whose_type_parameter_no_input_sets_is_refused():
    @cf.kernel
    class Fill:
        T = cf.typeparam(cf.float32, cf.float64)
        out: cf.Out[T]
        n: cf.int64
        body = "/* no-op */"

    with pytest.raises(cf.DeclarationError, match=(
        r"Fill \(torch op cuforge_unit::fill\): no input argument sets T, the dtype of output 'out' "
        r"\(outputs are allocated, not read\); index the family first: Fill\[cf.float32\].torch_op\(...\)"
    )):  # fmt: skip
        Fill.torch_op("cuforge_unit::fill", outputs={"out": lambda n: n})


def test_fake_implementation_names_a_wrong_dtype():
    with pytest.raises(cf.ArgumentTypeError, match=(
        r"BiasSilu \(torch op cuforge_examples::bias_silu\): argument 'x' expects In\[T\] \(float32 or float64\), got a torch.float16 "
        r"tensor; cast it with x.to\(torch.float32\)"
    )):  # fmt: skip
        act(torch.empty(2, 2, device="meta", dtype=torch.float16), torch.empty(2, device="meta"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"outputs": {"q": "like x"}}, r"outputs= names 'q', which are not parameters \(x, bias, y, n, cols\)"),
        ({"outputs": {"x": "like bias"}}, r"outputs\['x'\] must name an Out or Array parameter, not In\[T\]"),
        ({"outputs": {"y": "like n"}}, r"outputs\['y'\] = 'like n'; a shape rule is 'like <tensor argument>'"),
        ({"outputs": {"y": "same as x"}}, r"a shape rule is 'like <tensor argument>', 'zeros like <tensor argument>' or a"),
        ({"outputs": {"y": "zeros as x"}}, r"outputs\['y'\] = 'zeros as x'; a shape rule is 'like <tensor argument>'"),
        ({"outputs": {"y": 3}}, r"outputs\['y'\] must be 'like <argument>', 'zeros like <argument>' or a function, got 3"),
        ({"outputs": {"y": lambda z: z}}, r"outputs\['y'\] asks for 'z', which are not arguments of the op"),
        ({"sizes": {"x": lambda bias: 1}}, r"sizes\['x'\] must name an integer scalar parameter"),
        ({"sizes": {"n": 4}}, r"sizes\['n'\] must be a function of the arguments, got 4"),
        ({"sizes": {"n": lambda n: n}}, r"sizes\['n'\] asks for 'n', which are not arguments of the op"),
        ({"setup_context": lambda ctx, i, o: None}, r"setup_context= was given without backward="),
    ],
)
def test_declaration_mistakes_are_named(options, message):
    with pytest.raises(cf.DeclarationError, match=message):
        example.BiasSilu.torch_op("cuforge_unit::bad", **options)


def test_only_kernels_and_families_become_ops():
    with pytest.raises(cf.DeclarationError, match=r"expects a cuforge Kernel or Family, got 'saxpy'"):
        cf.torch.custom_op("saxpy", "cuforge_unit::nope")


def test_a_complex_scalar_has_no_schema_type():
    @cf.kernel
    class Rot:
        z: cf.complex64
        y: cf.Array[cf.complex64]
        body = "y[0] = z;"
        grid = 1

    with pytest.raises(cf.DeclarationError, match=r"a complex64 scalar has no PyTorch schema type"):
        Rot.torch_op("cuforge_unit::rot")


def test_cf_torch_imports_torch_only_when_asked(tmp_path):
    code = "import sys, cuforge as cf\nassert 'torch' not in sys.modules\ncf.torch.custom_op\nprint('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


def test_the_op_is_the_registered_overload_and_a_taken_name_is_refused():
    assert saxpy_ is torch.ops.cuforge_unit.saxpy_.default
    with pytest.raises(cf.DeclarationError, match=r"^Saxpy \(torch op cuforge_unit::saxpy_\): torch.library refused to define "):
        Saxpy.torch_op("cuforge_unit::saxpy_", sizes={"n": lambda x: x.numel()})


def test_backward_needs_a_functional_op():
    with pytest.raises(cf.DeclarationError, match=(
        r"^Saxpy \(torch op cuforge_unit::saxpy_bw\): backward= needs a functional operator, and this one writes y; "
        r"name it in outputs= so that the operator allocates and returns it$"
    )):  # fmt: skip
        Saxpy.torch_op("cuforge_unit::saxpy_bw", sizes={"n": lambda x: x.numel()}, backward=lambda ctx, g: g)
