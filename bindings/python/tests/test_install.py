"""The suite tests the installed wheel: the package from site-packages, the library from
inside the package, nothing from a build tree."""

import os
import sysconfig
from importlib import metadata

import harel_transport
from harel_transport import _native


def test_the_package_comes_from_site_packages():
    purelib = os.path.realpath(sysconfig.get_paths()["purelib"])
    here = os.path.realpath(os.path.dirname(harel_transport.__file__))
    assert here == os.path.join(purelib, "harel_transport"), here
    assert "PYTHONPATH" not in os.environ
    assert "HAREL_TRANSPORT_LIB" not in os.environ


def test_the_library_is_the_wheels_copy():
    bundled = os.path.join(os.path.dirname(harel_transport.__file__), "_lib", "libharel_transport.so.1")
    assert os.path.isfile(bundled)
    assert harel_transport.library_path() == bundled
    assert _native.candidates()[0] == ("the package's copy", bundled)


def test_versions_agree():
    assert harel_transport.version() == harel_transport.__version__ == metadata.version("harel-transport")


def test_the_wheel_is_typed_and_records_its_library():
    files = {str(f) for f in metadata.files("harel-transport")}
    assert "harel_transport/py.typed" in files
    assert "harel_transport/_lib/libharel_transport.so.1" in files
    wheel = metadata.distribution("harel-transport").read_text("WHEEL")
    # The platform make built the wheel for (mk/python.mk's PY_TEST_PLAT): linux_x86_64, or the
    # release wheel's two manylinux tags.
    platforms = os.environ.get("HAREL_WHEEL_PLAT", "linux_x86_64").split(".")
    tags = [line.split(": ", 1)[1] for line in wheel.splitlines() if line.startswith("Tag: ")]
    assert tags == [f"py3-none-{platform}" for platform in platforms]
