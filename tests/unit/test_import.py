import os
import subprocess
import sys


def test_import_starts_no_cuda_and_imports_no_ipython(tmp_path):
    code = (
        "import sys, cuforge\n"
        "heavy = [m for m in ('cuda.core', 'cuda.bindings.driver', 'IPython', 'cupy', 'torch') if m in sys.modules]\n"
        "print('heavy:', heavy)\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip() == "heavy: []"
    assert list(tmp_path.iterdir()) == []  # no cache or config folder was created


def test_compiling_and_reading_the_disk_cache_import_no_cuda_core(tmp_path):
    """cuda.core imports all of itself (some 100 ms): a warm start reads two files instead."""
    code = (
        "import sys, cuforge as cf\n"
        "@cf.kernel\n"
        "class W:\n"
        "    x: cf.Array[cf.float32]\n"
        "    body = 'x[threadIdx.x] += 1;'\n"
        "ck = W.compile(arch='sm_90')\n"
        "print(ck.from_cache, 'cuda.core' in sys.modules)\n"
    )
    env = {**os.environ, "CUFORGE_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout.split()
            for _ in range(2)]  # fmt: skip
    assert runs == [["False", "False"], ["True", "False"]]
