"""`pip install .` for the `lact` Python module (docs/guide/python.md): CMake builds python/'s target for the Python
that runs pip, and the module and its type stub go into that Python's site-packages, so `import lact` works
without PYTHONPATH (a virtual environment included).

Offline: `pip install --no-build-isolation .` uses the setuptools already installed (Debian's python3-setuptools)
and needs no download; CMake finds pybind11 (pybind11-dev) and the engine's libraries as scripts/setup.sh
installs them. The build reuses build/ when it was configured for this same interpreter (a venv's python is a link
to it), else builds in build/python-<version> (the whole engine once: minutes). LACT_BUILD_DIR names another.
"""
import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def configured_python(build_dir):
    """The LACT_PYTHON a build folder was configured with, or None."""
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("LACT_PYTHON:"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def build_folder():
    if os.environ.get("LACT_BUILD_DIR"):
        return os.path.abspath(os.environ["LACT_BUILD_DIR"])
    main = os.path.join(ROOT, "build")
    python = configured_python(main)
    if python and os.path.realpath(python) == os.path.realpath(sys.executable):
        return main
    return os.path.join(ROOT, "build", "python-%d.%d" % sys.version_info[:2])


class CMakeBuild(build_ext):
    """Builds the lact_python target with CMake and puts its module where setuptools expects the extension."""

    def build_extension(self, ext):
        folder = build_folder()
        if not os.path.exists(os.path.join(folder, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", folder, "-DCMAKE_BUILD_TYPE=Release",
                                   "-DLACT_TESTS=OFF", "-DLACT_PYTHON=" + sys.executable])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", folder, "--target", "lact_python", "-j", jobs])
        built = os.path.join(folder, "python", "lact" + sysconfig.get_config_var("EXT_SUFFIX"))
        if not os.path.exists(built):
            sys.exit("setup.py: %s was not built (is this the Python the build folder was configured for?)" % built)
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)
        shutil.copyfile(os.path.join(ROOT, "python", "lact.pyi"), os.path.join(os.path.dirname(target), "lact.pyi"))


# setuptools' own files go under build/ too (never beside the sources): build/pip.
os.makedirs(os.path.join(ROOT, "build", "pip"), exist_ok=True)

setup(
    name="lact",
    version="0.1.0",
    description="LaCT novel-view synthesis: the C++ engine's Python module (numpy in and out)",
    license="MIT",
    python_requires=">=3.9",
    install_requires=[],  # numpy is needed at run time; not listed so that pip never tries to download it
    ext_modules=[Extension("lact", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
    options={"build": {"build_base": os.path.join(ROOT, "build", "pip")},
             "egg_info": {"egg_base": os.path.join(ROOT, "build", "pip")}},
)
