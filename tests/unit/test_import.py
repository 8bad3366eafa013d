import os
import subprocess
import sys


def test_import_starts_no_cuda_and_imports_no_ipython(tmp_path):
    code = (
        "import sys, cuforge\n"
        "heavy = [m for m in ('cuda.core', 'cuda.bindings.driver', 'IPython', 'cupy', 'torch', 'jax') if m in sys.modules]\n"
        "print('heavy:', heavy)\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip() == "heavy: []"
    assert list(tmp_path.iterdir()) == []  # no cache or config folder was created


def test_compiling_and_reading_the_disk_cache_import_no_cuda_core(tmp_path):
    """cuda.core imports all of itself (some 100 ms): a warm start reads two files instead,
    and imports neither cuda.pathfinder (20-70 ms) nor NVRTC's bindings, nor the modules of
    cuforge a cached launch does not use."""
    code = (
        "import sys, cuforge as cf\n"
        "@cf.kernel\n"
        "class W:\n"
        "    x: cf.Array[cf.float32]\n"
        "    body = 'x[threadIdx.x] += 1;'\n"
        "ck = W.compile(arch='sm_90')\n"
        "print(ck.from_cache, 'cuda.core' in sys.modules)\n"
        "print(sorted(m for m in ('cuda.pathfinder', 'cuda.bindings.nvrtc', 'cuda.bindings.driver', 'jinja2', 'logging',\n"
        "    'cuforge._compile.build', 'cuforge._launch.graph', 'cuforge._launch.capture', 'cuforge._runtime.module',\n"
        "    'cuforge._compile.pch', 'cuforge._compile.parallel', 'cuforge._kernel.autotune', 'cuforge._kernel.inference',\n"
        "    'cuforge._kernel.template', 'cuforge._kernel.pickling', 'cuforge._launch.prepared', 'cuforge._launch.resources',\n"
        "    'cuforge._cpu', 'cuforge._launch.cpu', 'pathlib', 'platformdirs', '_hashlib', 'glob', 'tempfile', 'threading',\n"
        "    'importlib.util')\n"
        "    if m in sys.modules))\n"
    )
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
            for _ in range(2)]  # fmt: skip
    assert runs[0].split()[:2] == ["False", "False"]
    assert runs[1].splitlines() == ["True False", "[]"]


def test_a_cached_cpu_launch_translates_and_builds_nothing(tmp_path):
    """A warm start on the CPU finds the library by its rendered source: no translation unit is
    made, and neither the compiler's process nor the build's modules are needed."""
    code = (
        "import sys, numpy as np, cuforge as cf\n"
        "@cf.kernel\n"
        "class W:\n"
        "    x: cf.Array[cf.float32]\n"
        "    body = 'x[threadIdx.x] += 1;'\n"
        "x = np.zeros(4, np.float32)\n"
        "W(x, grid=1, block=4, device='cpu')\n"
        "print(x.tolist(), cf.cache_stats().cpu_compiles)\n"
        "print(sorted(m for m in ('cuforge._cpu.translate', 'tempfile', 'shutil') if m in sys.modules))\n"
    )
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
            for _ in range(2)]  # fmt: skip
    assert runs[0].splitlines()[0].startswith("[1.0, 1.0, 1.0, 1.0]")
    assert runs[1].splitlines() == ["[1.0, 1.0, 1.0, 1.0] 0", "[]"]


# What a warm start on the CPU may load beside NumPy: cuforge's modules of that path, and of
# the standard library none of those that cost start-up without being needed there. A module
# that joins the path must be added here on purpose (docs/benchmarks.md, "Start-up").
CPU_WARM_PATH = {
    "cuforge", "cuforge._bundle", "cuforge._claunch", "cuforge._config", "cuforge._digest", "cuforge._frozen", "cuforge._version",
    "cuforge.errors", "cuforge.options",
    "cuforge._declare", "cuforge._declare.annotations", "cuforge._declare.declaration", "cuforge._declare.dtypes",
    "cuforge._declare.instantiations", "cuforge._declare.kinds", "cuforge._declare.launch_rules",
    "cuforge._declare.params", "cuforge._declare.render", "cuforge._declare.rules", "cuforge._declare.signature",
    "cuforge._declare.spelling", "cuforge._declare.value_params", "cuforge._declare.vectors",
    "cuforge._compile", "cuforge._compile.artifact", "cuforge._compile.cache", "cuforge._compile.disk",
    "cuforge._compile.files", "cuforge._compile.headers", "cuforge._compile.identity", "cuforge._compile.stats",
    "cuforge._compile.targets", "cuforge._compile.trust",
    # the GPU runtime, which the shared launch layer is written over (the checks, the C launcher's base class)
    "cuforge._runtime", "cuforge._runtime.arrays", "cuforge._runtime.cuda", "cuforge._runtime.device",
    "cuforge._runtime.faults", "cuforge._runtime.launch", "cuforge._runtime.libcuda", "cuforge._runtime.limits",
    "cuforge._runtime.loading",
    "cuforge._cpu", "cuforge._cpu.library", "cuforge._cpu.runtime", "cuforge._cpu.store", "cuforge._cpu.toolchain",
    "cuforge._launch", "cuforge._launch.checks", "cuforge._launch.claunch", "cuforge._launch.cpu", "cuforge._launch.general",
    "cuforge._launch.plan",
    "cuforge._kernel", "cuforge._kernel.decorator", "cuforge._kernel.device", "cuforge._kernel.family",
    "cuforge._kernel.inference", "cuforge._kernel.kernel", "cuforge._kernel.loader", "cuforge._kernel.registry",
    "cuforge._kernel.source",
}  # fmt: skip
NOT_ON_A_WARM_PATH = ("jinja2", "json", "pathlib", "platformdirs", "hashlib", "_hashlib", "dataclasses", "shlex", "glob", "fnmatch", "urllib",
                      "ipaddress", "tempfile", "shutil", "platform", "subprocess", "logging", "threading", "cuda", "cupy",
                      "torch")  # fmt: skip

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WARM_CPU_LAUNCHES = f"""
import sys, numpy as np
before = set(sys.modules)
import cuforge as cf
sys.path.insert(0, {ROOT!r})
from tests.warm_kernels import Axpy, Saxpy

x = np.ones(512, np.float32); y = np.zeros(512, np.float32)
Saxpy(np.float32(2.0), x, y, 512, grid=2, block=256, device="cpu")
Axpy(np.float32(2.0), x, y, 512, device="cpu")
print(y[0], cf.cache_stats().cpu_compiles)
print(" ".join(sorted(m for m in set(sys.modules) - before if not m.startswith("tests"))))
"""


def _warm_cpu_modules(env: dict[str, str]) -> tuple[str, set[str]]:
    runs = [subprocess.run([sys.executable, "-c", WARM_CPU_LAUNCHES], capture_output=True, text=True, check=True, env=env).stdout
            for _ in range(2)]  # fmt: skip
    first, loaded = runs[1].splitlines()
    return first, set(loaded.split())


def test_a_cached_cpu_launch_loads_only_the_modules_of_its_path(tmp_path):
    """Import, declaration and first launch from the disk cache, a plain body and a family
    whose body substitutes ``{{ BLOCK }}``: no compile, no Jinja, no GPU library, none of the
    standard library's heavier modules, and only the cuforge modules listed above."""
    first, loaded = _warm_cpu_modules({**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)})
    assert first == "4.0 0"
    assert sorted(m for m in loaded if m.startswith("cuforge") and m not in CPU_WARM_PATH) == []
    assert sorted(m for m in loaded if m.split(".")[0] in NOT_ON_A_WARM_PATH) == []


def test_the_default_cache_location_adds_no_module(tmp_path):
    """With no CUFORGE_CACHE_DIR the cache is found under the user's cache folder, without
    platformdirs (and what it imports)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUFORGE_CACHE_DIR", "XDG_CACHE_HOME")}
    first, loaded = _warm_cpu_modules({**env, "HOME": str(tmp_path)})
    assert first == "4.0 0"
    assert (tmp_path / ".cache" / "cuforge" / "v2" / "entries").is_dir()
    assert sorted(m for m in loaded if m.split(".")[0] in NOT_ON_A_WARM_PATH) == []


def test_the_gpu_launch_path_loads_no_module_of_the_cpu_backend():
    """What a GPU launch imports (the kernel, its loader, the C launcher's set-up, the driver's
    runtime) leaves the CPU backend unloaded; it loads with a first CPU launch only."""
    code = (
        "import sys, cuforge\n"
        "import cuforge._kernel.loader, cuforge._launch.claunch, cuforge._launch.general, cuforge._runtime.cuda\n"
        "print(sorted(m for m in sys.modules if m.startswith(('cuforge._cpu', 'cuforge._launch.cpu'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# What a warm start on a GPU may load of cuforge: the modules of the CPU warm path less the CPU
# backend's, with the type inference of a family's first call. Neither NVRTC's modules
# (_compile.nvrtc, _compile.toolchain: a cached kernel's key is made without them) nor
# DeviceArray's, which a launch with CuPy's or PyTorch's arrays never meets, nor shlex.
GPU_WARM_PATH = (CPU_WARM_PATH - {"cuforge._cpu", "cuforge._cpu.library", "cuforge._cpu.runtime", "cuforge._cpu.store",
                                  "cuforge._cpu.toolchain", "cuforge._launch.cpu"})  # fmt: skip
WARM_GPU_PATH = f"""
import sys, numpy as np
before = set(sys.modules)
import cuforge as cf
sys.path.insert(0, {ROOT!r})
from tests.warm_kernels import Axpy, Saxpy
# A first GPU launch, less the driver's part (tests/gpu run it whole): the modules of the C
# launcher and of the general path, a family's type inference, and the compiled kernel read
# from the disk cache for the device's target, which the disk cache knows (the loader's path).
import cuforge._kernel.loader, cuforge._launch.claunch, cuforge._launch.general, cuforge._runtime.cuda
from cuforge._compile.targets import device_target
x = np.ones(512, np.float32); y = np.zeros(512, np.float32)
compiled = [k.compile(device_target(90)) for k in (Saxpy, Axpy.select(np.float32(2.0), x, y, 512))]
print(all(ck.from_cache for ck in compiled), cf.cache_stats().compiles)
print(" ".join(sorted(m for m in set(sys.modules) - before if not m.startswith("tests"))))
"""


def test_a_cached_gpu_launch_loads_only_the_modules_of_its_path(tmp_path):
    """Import, declaration and what a first GPU launch does beside the driver, from the disk
    cache: no compile, no NVRTC (neither its bindings nor cuforge's modules that ask it), no
    DeviceArray, no shlex, none of the CPU backend, and only the cuforge modules listed above."""
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", WARM_GPU_PATH], capture_output=True, text=True, check=True, env=env).stdout
            for _ in range(2)]  # fmt: skip
    first, loaded = runs[1].splitlines()
    assert first == "True 0"
    assert sorted(m for m in loaded.split() if m.startswith("cuforge") and m not in GPU_WARM_PATH) == []
    # (json is the GPU's records': CuPy and PyTorch import it anyway)
    assert sorted(m for m in loaded.split() if m.split(".")[0] in set(NOT_ON_A_WARM_PATH) - {"json"}) == []

