#!/usr/bin/env bash
# python/run_tests.sh: the Python package's test step (./dev.sh test runs it last). Makes a venv under
# <build>/python-venv (with the system's site packages, so an installed PyTorch is seen), installs the
# package there with pip from the repository root (as a user would), and runs pytest on python/tests:
# test_cpu.py everywhere, test_gpu.py where PyTorch and a GPU exist (reported as skipped otherwise).
#   SWZJIT_BUILD_DIR   build directory (default build)      SWZJIT_PYTHON_EXE   interpreter (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${SWZJIT_BUILD_DIR:-build}
PY=${SWZJIT_PYTHON_EXE:-python3}
mkdir -p "$BUILD_DIR"
venv="$(cd "$BUILD_DIR" && pwd)/python-venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "python/run_tests.sh: creating $venv" >&2
  "$PY" -m venv --system-site-packages "$venv"
fi
if command -v ccache >/dev/null && [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache  # CMake reads it; the wheel build recompiles the library
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check pytest numpy  # numpy: host DLPack arrays
echo "python/run_tests.sh: pip install . (scikit-build-core; build tree $BUILD_DIR/python-wheel)" >&2
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps \
  -C build-dir="$BUILD_DIR/python-wheel" .
# From outside the source tree, so the installed package is the one imported.
cd "$BUILD_DIR"
"$venv/bin/python" -c "import swzjit, sys; print('swzjit', swzjit.__version__, 'from', swzjit.__file__, file=sys.stderr)"
exec "$venv/bin/python" -m pytest -rs -p no:cacheprovider "$OLDPWD/python/tests"
