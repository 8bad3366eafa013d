"""The optional C launcher (src/cuforge/_claunch.c); everything else is in pyproject.toml.

It is built against the stable ABI, so one binary serves CPython 3.10 and later. Where no C
compiler is present the build is skipped with a warning and cuforge launches through
cuda.bindings and generated Python checks (about 2-3 us slower per launch).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "cuforge._claunch",
            ["src/cuforge/_claunch.c"],
            py_limited_api=True,
            optional=True,
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
