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
