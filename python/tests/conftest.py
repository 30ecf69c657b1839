# python/tests: shared fixtures — a private cache directory per test, the swz tool to compare with.
import os
import pathlib
import shutil

import pytest

import swzjit

REPO = pathlib.Path(__file__).resolve().parents[2]


def find_swz():
    """The swz CLI of the same build: $SWZ_TOOL, the wheel's copy, else <build>/swz."""
    candidates = [os.environ.get("SWZ_TOOL"), swzjit.swz_path(),
                  str(REPO / os.environ.get("SWZJIT_BUILD_DIR", "build") / "swz")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    return None


@pytest.fixture
def cache_dir(tmp_path):
    """A fresh cache directory, configured as the module's cache for the test and restored after."""
    before = swzjit.settings()
    d = tmp_path / "cache"
    d.mkdir()
    swzjit.configure(cache_dir=str(d))
    yield d
    swzjit.configure(**{k: (v if v is not None else "") if k == "cache_dir" else v for k, v in before.items()})
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def swz_tool():
    tool = find_swz()
    if tool is None:
        pytest.skip("no swz tool found (set SWZ_TOOL=/path/to/swz)")
    return tool
