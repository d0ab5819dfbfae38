"""The wheel's platform tag and its library: everything else is in pyproject.toml.

The package calls the C library through ctypes, so it depends on no CPython ABI: the
wheel is py3-none-linux_x86_64, and it must carry harel_transport/_lib/libharel_transport.so.1
(`make wheel` copies it in; building without it fails here instead of making a wheel that
cannot load)."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

LIB = os.path.join("harel_transport", "_lib", "libharel_transport.so.1")


class BuildPyWithLibrary(build_py):
    def run(self):
        if not os.path.isfile(LIB):
            raise SystemExit(
                f"{LIB} is missing: build the wheel with `make wheel` at the repository's root, "
                "which builds the library and copies it in"
            )
        super().run()


setup(
    cmdclass={"build_py": BuildPyWithLibrary},
    options={"bdist_wheel": {"plat_name": "linux_x86_64", "python_tag": "py3"}},
)
