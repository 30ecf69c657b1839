# swzjit: `python -m swzjit ARGS` runs the swz command-line tool shipped in the wheel.
import os
import sys

from . import swz_path

if __name__ == "__main__":
    tool = swz_path()
    if tool is None:
        sys.exit("swzjit: this installation has no swz tool (a build-tree import): run <build>/swz instead")
    os.execv(tool, [tool] + sys.argv[1:])
