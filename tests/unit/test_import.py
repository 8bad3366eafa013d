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
        "    'cuforge._cpu', 'cuforge._launch.cpu')\n"
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
