"""The optional C launcher (src/cuforge/_csrc/); everything else is in pyproject.toml.

It is built against the stable ABI, so one abi3 wheel serves CPython 3.10 and later. Where no
C compiler is present the build is skipped with a warning and the general Python path serves
every call, launching through cuda.bindings (see docs/guide/types.md, "Without a C compiler").
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "cuforge._claunch",
            [f"src/cuforge/_csrc/{name}.c" for name in ("driver", "arrays", "check", "launcher", "oprunner")],
            depends=["src/cuforge/_csrc/claunch.h"],
            py_limited_api=True,
            optional=True,
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
