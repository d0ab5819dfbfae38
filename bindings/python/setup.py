"""The wheel's platform tag and its library: everything else is in pyproject.toml.

The package calls the C library through ctypes, so it depends on no CPython ABI: the
wheel is py3-none-PLATFORM, and it must carry harel_transport/_lib/libharel_transport.so.1
(`make wheel` copies it in; building without it fails here instead of making a wheel that
cannot load).

PLATFORM is HAREL_WHEEL_PLAT, linux_x86_64 by default: `make dist` (mk/dist.mk) builds from
the library linked against glibc 2.17 and sets manylinux_2_17_x86_64.manylinux2014_x86_64,
which auditwheel then checks. A compound tag (dotted) is why get_tag is ours: setuptools
turns the dots of a plat_name into underscores."""

import os

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

LIB = os.path.join("harel_transport", "_lib", "libharel_transport.so.1")
PLATFORM = os.environ.get("HAREL_WHEEL_PLAT") or "linux_x86_64"


class BuildPyWithLibrary(build_py):
    def run(self):
        if not os.path.isfile(LIB):
            raise SystemExit(
                f"{LIB} is missing: build the wheel with `make wheel` at the repository's root, "
                "which builds the library and copies it in"
            )
        super().run()


class BdistWheelForPlatform(bdist_wheel):
    def get_tag(self):
        return ("py3", "none", PLATFORM)


setup(
    cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": BdistWheelForPlatform},
    options={"bdist_wheel": {"python_tag": "py3"}},
)
