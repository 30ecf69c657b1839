# python/tests: CPU-side tests of declared kernel families from Python (swzjit.Family): the built-in
# rowsum and a user family registered from text and from a file — params, defaults, space, the bank
# analysis (the library's and a Python access map), source, NVRTC compiles for sm_80/sm_90 checked
# against the swz tool, compile-only tunes into a temporary cache, and errors naming what is wrong;
# scalars (run(..., scalars={...})) and inout buffers checked before any device work.
import itertools
import json
import subprocess

import numpy as np
import pytest

import swzjit

import family_defs
from conftest import REPO

ROWSUM_PROBLEM = {"batch": 2, "rows": 100, "cols": 64}
USER_PROBLEM = {"batch": 3, "rows": 100, "cols": 70}


@pytest.fixture(scope="module")
def user():
    """The test family, with its Python access map (registered once per process; re-registering the
    same text returns the family registered first)."""
    return swzjit.register_family(family_defs.TEXT, smem_accesses=family_defs.accesses)


@pytest.fixture
def rowsum():
    return swzjit.family("rowsum")


# --- registration and the definition ---------------------------------------------------------------

def test_builtin_rowsum_is_registered(rowsum):
    assert "rowsum" in swzjit.family_names()
    assert rowsum.name == "rowsum" and rowsum == swzjit.Family("rowsum")
    assert rowsum.dims == ["batch", "rows", "cols"]
    assert rowsum.params == {"BLOCK_ROWS": {"values": [32, 64, 128, 256], "default": 64},
                             "LAYOUT": {"values": [0, 1, 2], "default": 2}}
    assert [(b["name"], b["dtype"], b["role"]) for b in rowsum.buffers] == [("in", "f32", "input"),
                                                                             ("out", "f32", "output")]
    assert rowsum.info["has_smem_accesses"] and rowsum.info["has_reference"]
    assert "family = rowsum" in rowsum.text and "rowsum_kernel<BLOCK_ROWS, LAYOUT>" in rowsum.text


def test_register_from_text(user):
    assert user.name == family_defs.NAME
    assert family_defs.NAME in swzjit.family_names()
    assert swzjit.family(family_defs.NAME) == user
    assert user.dims == ["batch", "rows", "cols"]
    assert user.params == {"ROWS": {"values": [4, 8, 16], "default": 8}, "SWIZZLE": {"values": [0, 1], "default": 1}}
    assert user.constraints == ["batch <= 65535", "ceil_div(rows, 32) <= 65535"]
    assert user.info["has_smem_accesses"]
    assert family_defs.SOURCE in user.text  # the text form carries the source inline
    # The same text again is the same family; another definition under its name is refused.
    assert swzjit.register_family(family_defs.TEXT) == user
    other = family_defs.TEXT.replace("tolerance = 1e-6", "tolerance = 1e-5")
    with pytest.raises(swzjit.InvalidArgumentError, match=family_defs.NAME):
        swzjit.register_family(other)


def test_register_from_a_file(user, tmp_path):
    # The same definition with its source in a file next to it: an equal definition.
    same = swzjit.register_family(path=family_defs.write_files(tmp_path))
    assert same == user and same.definition_hash == user.definition_hash
    # The example family of the repository, from its .family file (source = tile_transpose_add.cuh).
    example = swzjit.register_family(path=REPO / "examples" / "tile_transpose_add.family")
    assert example.name == "tile_transpose_add" and "tile_transpose_add" in swzjit.family_names()
    assert list(example.params) == ["TILE", "ROWS", "SWIZZLE"]
    assert [b["name"] for b in example.buffers] == ["a", "b", "out"]
    assert "tta::tile_transpose_add" in example.source()
    # source = FILE in text is resolved against base_dir.
    header = family_defs.HEADER.replace("family = py_tile_transpose", "family = py_tile_transpose_dir")
    moved = swzjit.register_family(header + "source = py_tile_transpose.cuh\n", base_dir=tmp_path)
    assert moved.name == "py_tile_transpose_dir" and family_defs.SOURCE in moved.text
    with pytest.raises(swzjit.InvalidArgumentError):
        swzjit.register_family(header + "source = py_tile_transpose.cuh\n", base_dir=tmp_path / "nowhere")


def test_bad_text_names_the_line():
    bad = family_defs.TEXT.replace("dims = batch rows cols", "dims batch rows cols")
    with pytest.raises(swzjit.InvalidArgumentError, match="line 3") as info:
        swzjit.register_family(bad)
    assert "dims batch rows cols" in info.value.message
    lines = family_defs.TEXT.splitlines()
    lines[3] = "param ROWS = 4 eight 16 ; default 8"
    with pytest.raises(swzjit.InvalidArgumentError, match="line 4"):
        swzjit.register_family("\n".join(lines) + "\n")
    lines[3] = "param ROWS = 4 8 16 ; default 5"  # checked after parsing: names the field
    with pytest.raises(swzjit.InvalidArgumentError, match="ROWS.*default 5"):
        swzjit.register_family("\n".join(lines) + "\n")
    with pytest.raises(swzjit.InvalidArgumentError, match="text= or as path="):
        swzjit.register_family()
    with pytest.raises(swzjit.InvalidArgumentError):
        swzjit.register_family(path=REPO / "no-such.family")
    with pytest.raises(swzjit.InvalidArgumentError, match="rowsum"):  # the message lists what exists
        swzjit.family("no_such_family")


# --- problems, configs, space -------------------------------------------------------------------

def test_problems_and_configs_as_dicts_or_text(rowsum):
    assert rowsum.problem("rows=100,cols=64,batch=2") == ROWSUM_PROBLEM
    assert rowsum.problem_text(ROWSUM_PROBLEM) == "batch=2,rows=100,cols=64"
    assert rowsum.config({"LAYOUT": 1}) == {"BLOCK_ROWS": 64, "LAYOUT": 1}
    assert rowsum.config_text("LAYOUT=1") == "BLOCK_ROWS=64,LAYOUT=1"
    assert rowsum.config_text() == "BLOCK_ROWS=64,LAYOUT=2"
    with pytest.raises(swzjit.InvalidArgumentError, match="cols"):
        rowsum.default_config({"batch": 1, "rows": 4})
    with pytest.raises(swzjit.InvalidArgumentError, match="rows"):
        rowsum.default_config({"batch": 1, "rows": -4, "cols": 3})
    with pytest.raises(swzjit.InvalidArgumentError, match="rows"):
        rowsum.default_config({"batch": 1, "rows": 2.5, "cols": 3})
    with pytest.raises(swzjit.InvalidArgumentError, match="WIDTH"):
        rowsum.config({"WIDTH": 4})
    # A value outside the param's list is no point of the space: refused where a problem is given.
    assert "BLOCK_ROWS" in rowsum.check_config({"BLOCK_ROWS": 48}, ROWSUM_PROBLEM)
    with pytest.raises(swzjit.InvalidArgumentError, match="BLOCK_ROWS"):
        rowsum.source(ROWSUM_PROBLEM, {"BLOCK_ROWS": 48})
    with pytest.raises(swzjit.InvalidArgumentError):
        rowsum.default_config([2, 100, 64])


def test_default_config_and_space(rowsum, user):
    assert rowsum.default_config(ROWSUM_PROBLEM) == {"BLOCK_ROWS": 64, "LAYOUT": 2}
    assert rowsum.default_config("batch=2,rows=100,cols=64") == rowsum.default_config(ROWSUM_PROBLEM)
    space = rowsum.space(ROWSUM_PROBLEM)
    want = [{"BLOCK_ROWS": b, "LAYOUT": l} for b, l in itertools.product([32, 64, 128, 256], [0, 1, 2])]
    assert sorted(map(lambda c: tuple(c.items()), space)) == sorted(map(lambda c: tuple(c.items()), want))
    assert all(rowsum.check_config(c, ROWSUM_PROBLEM) == "" for c in space)
    assert rowsum.default_config(ROWSUM_PROBLEM) in space
    # A problem the requirements rule out entirely: no space, no default.
    huge = {"batch": 70000, "rows": 8, "cols": 8}
    assert rowsum.space(huge) == [] and rowsum.check_config({}, huge) != ""
    with pytest.raises(swzjit.UnsupportedError):
        rowsum.default_config(huge)
    assert len(user.space(USER_PROBLEM)) == 6
    assert user.default_config(USER_PROBLEM) == {"ROWS": 8, "SWIZZLE": 1}


# The Hopper GEMM's problem text (the kernel's frame, f16 in and out, A and B K-contiguous) for M x N x K.
def _sm90_problem(m, n, k):
    return (f"in=f16,out=f16,m={m},n={n},k={k},lda={k},ldb={k},ldc={n},batch=1,stride_a=0,stride_b=0,stride_c=0,"
            "a_mn=0,b_mn=0,align_a=16,align_b=16")


def test_default_config_and_space_for_a_device(rowsum):
    gemm = swzjit.family("gemm_sm90")
    skinny = _sm90_problem(16, 4096, 4096)
    unknown = gemm.default_config(skinny)
    h100 = gemm.default_config(skinny, sm_count=132, dram_gbps=3352)
    h200 = gemm.default_config(skinny, sm_count=132, dram_gbps=4814)
    # Much DRAM bandwidth per SM (the H200): A and B swapped (128 x 32 tiles of C^T), K in 2 slices summed
    # in a cluster pair; the H100 as unknown.
    assert h200["SWAP"] == 1 and h200["SPLITS"] == 2 and h200["REDUCE"] == 2 and h200["BN"] == 32
    assert unknown["SWAP"] == 0
    assert h100 == unknown and h200 != unknown
    # The same as naming them in the problem's text.
    assert gemm.default_config(skinny + ",sm_count=132,dram_gbps=4814") == h200
    space = gemm.space(skinny, sm_count=132, dram_gbps=4814)
    assert h200 in space and unknown in space  # a tune there can come back to the unknown device's default
    assert all(gemm.check_config(c, skinny) == "" for c in space)
    # A big square does not follow the bandwidth; a family that reads neither ignores them.
    square = _sm90_problem(4096, 4096, 4096)
    assert gemm.default_config(square, sm_count=132, dram_gbps=4814) == gemm.default_config(square, sm_count=132)
    assert rowsum.default_config(ROWSUM_PROBLEM, sm_count=132, dram_gbps=4814) == rowsum.default_config(ROWSUM_PROBLEM)
    with pytest.raises(swzjit.InvalidArgumentError, match="sm_count: 0 is below 1"):
        gemm.default_config(skinny, sm_count=0)
    with pytest.raises(swzjit.InvalidArgumentError, match="dram_gbps: -1 is below 0"):
        gemm.space(skinny, dram_gbps=-1)
    with pytest.raises(swzjit.InvalidArgumentError, match="dram_gbps is given twice"):
        gemm.default_config(skinny + ",dram_gbps=4814", dram_gbps=4814)
    with pytest.raises(swzjit.InvalidArgumentError, match="is not an integer"):
        gemm.default_config(skinny, sm_count=13.2)


def test_launch_is_evaluated_for_the_problem(user):
    launch = user.launch(USER_PROBLEM, {"ROWS": 4})
    assert launch["name_expression"] == "pyfam::tile_transpose<4, 1>"
    assert launch["grid"] == (3, 4, 3) and launch["block"] == (32, 4, 1) and launch["threads"] == 128
    assert launch["buffer_elements"] == [3 * 100 * 70, 3 * 70 * 100]
    assert launch["reference"]["grid"] == ((100 * 70 + 255) // 256, 3, 1)


# --- static analysis ------------------------------------------------------------------------------

def test_rowsum_analysis_sees_the_conflicted_layout(rowsum):
    plain = rowsum.analyze(ROWSUM_PROBLEM, {"LAYOUT": 0})
    assert plain["analysed"] and plain["excess_wavefronts"] > 0 and not plain["conflict_free"]
    for layout in (1, 2):  # XOR swizzle, padded rows
        r = rowsum.analyze(ROWSUM_PROBLEM, {"LAYOUT": layout})
        assert r["analysed"] and r["excess_wavefronts"] == 0 and r["conflict_free"], r
        assert r["wavefronts"] == r["ideal_wavefronts"] > 0
    assert rowsum.analyze(config="LAYOUT=0") == plain  # the analysis needs no problem
    r = plain
    assert r["instructions"] == len(r["per_instruction"])
    assert r["excess_wavefronts"] == sum(i["excess_wavefronts"] for i in r["per_instruction"])


def test_python_access_map_drives_the_analysis(user):
    for rows in (4, 8, 16):
        swizzled = user.analyze(USER_PROBLEM, {"ROWS": rows, "SWIZZLE": 1})
        plain = user.analyze(USER_PROBLEM, {"ROWS": rows, "SWIZZLE": 0})
        assert swizzled["analysed"] and swizzled["excess_wavefronts"] == 0
        assert plain["excess_wavefronts"] > 0
        # The library's cost of each instruction is the bank model's cost of the map's addresses.
        instructions = family_defs.accesses({"ROWS": rows, "SWIZZLE": 0})
        assert plain["instructions"] == len(instructions) == 2 * (32 // rows)
        assert plain["wavefronts"] == sum(swzjit.bank(op, a, w)["wavefronts"] for op, a, w in instructions)


def test_a_failing_access_map_is_reported():
    def broken(config):
        raise RuntimeError("no map for " + ",".join(sorted(config)))

    text = family_defs.TEXT.replace("family = py_tile_transpose", "family = py_broken_map")
    f = swzjit.register_family(text, smem_accesses=broken)
    with pytest.raises(swzjit.InvalidArgumentError, match="smem_accesses.*no map for ROWS,SWIZZLE"):
        f.analyze(USER_PROBLEM)
    wrong = swzjit.register_family(text.replace("py_broken_map", "py_wrong_map"),
                                   smem_accesses=lambda c: [("stx", [0] * 32)])
    with pytest.raises(swzjit.InvalidArgumentError, match="stx"):
        wrong.analyze(USER_PROBLEM)
    with pytest.raises(swzjit.InvalidArgumentError, match="callable"):
        swzjit.register_family(text, smem_accesses=3)


def test_family_without_a_map_is_not_analysed(tmp_path):
    example = swzjit.register_family(path=REPO / "examples" / "tile_transpose_add.family")
    r = example.analyze()
    assert r["analysed"] is False and r["instructions"] == 0


# --- source and compile ---------------------------------------------------------------------------

def test_source_is_what_swz_gen_prints(rowsum, user, swz_tool):
    src = user.source(USER_PROBLEM, {"ROWS": 16, "SWIZZLE": 0})
    assert "name expression: pyfam::tile_transpose<16, 0>" in src.splitlines()[0]
    assert src.endswith(family_defs.SOURCE)
    assert user.source(USER_PROBLEM).splitlines()[0].endswith("pyfam::tile_transpose<8, 1>)")
    cli = subprocess.run([swz_tool, "gen", "rowsum", "--config", "BLOCK_ROWS=128,LAYOUT=1"], capture_output=True,
                         text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert rowsum.source(config={"BLOCK_ROWS": 128, "LAYOUT": 1}) == cli.stdout


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_compile_matches_swz_compile(rowsum, user, swz_tool, arch):
    r = rowsum.compile(ROWSUM_PROBLEM, {"BLOCK_ROWS": 128, "LAYOUT": 1}, arch=arch)
    assert r["image_bytes"] > 0 and r["registers"] > 0 and r["arch"].startswith(arch)
    assert r["config"] == "BLOCK_ROWS=128,LAYOUT=1" and r["lowered_name"].startswith("_Z")
    cli = subprocess.run([swz_tool, "compile", "rowsum", "--config", "BLOCK_ROWS=128,LAYOUT=1", "--arch", arch,
                          "--json"], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    want = json.loads(cli.stdout)
    for key in ("arch", "format", "image_bytes", "registers", "static_smem_bytes", "local_bytes", "code_bytes",
                "lowered_name"):
        assert r[key] == want[key], key
    assert 0 < r["code_bytes"] < r["image_bytes"] and r["code_bytes"] % 16 == 0  # 16 bytes a SASS instruction
    u = user.compile(USER_PROBLEM, arch=arch)
    assert u["image_bytes"] > 0 and u["static_smem_bytes"] == 32 * 32 * 4  # the kernel's __shared__ tile
    assert u["name_expression"] == "pyfam::tile_transpose<8, 1>"


def test_compile_errors(user):
    text = family_defs.TEXT.replace("family = py_tile_transpose", "family = py_needs_hopper")
    hopper = swzjit.register_family(text.replace("tolerance = 1e-6", "tolerance = 1e-6\nmin_arch = 90"))
    assert hopper.compile(USER_PROBLEM, arch="sm_90")["image_bytes"] > 0
    with pytest.raises(swzjit.UnsupportedError, match="sm_90"):
        hopper.compile(USER_PROBLEM, arch="sm_80")
    with pytest.raises(swzjit.InvalidArgumentError, match="arch"):
        user.compile(USER_PROBLEM, arch="sm_61")
    with pytest.raises(swzjit.InvalidArgumentError, match="ROWS"):
        user.compile(USER_PROBLEM, {"ROWS": 5}, arch="sm_90")
    broken = swzjit.register_family(
        text.replace("py_needs_hopper", "py_broken_source").replace("__syncthreads();", "__syncthreads() oops;"))
    with pytest.raises(swzjit.CompileError) as info:
        broken.compile(USER_PROBLEM, arch="sm_90")
    assert "oops" in info.value.compile_log or "error" in info.value.compile_log
    assert info.value.source_name == "py_tile_transpose.cu"


# --- compile-only tunes ---------------------------------------------------------------------------

def test_compile_only_tune_of_a_user_family(user, cache_dir):
    report = user.autotune(USER_PROBLEM, compile_only=True, arch="sm_90")
    assert report["problem"] == "batch=3,rows=100,cols=70" and report["space_size"] == 6
    by_status = {}
    for c in report["candidates"]:
        by_status.setdefault(c["status"], []).append(c["config"])
    # The Python access map, called from the tuner's threads, leaves the three plain layouts out.
    assert sorted(by_status["skipped-static"]) == ["ROWS=16,SWIZZLE=0", "ROWS=4,SWIZZLE=0", "ROWS=8,SWIZZLE=0"]
    assert sorted(by_status["compiled"]) == ["ROWS=16,SWIZZLE=1", "ROWS=4,SWIZZLE=1", "ROWS=8,SWIZZLE=1"]
    assert report["static_rejected"] == 3
    names = {k["name_expression"] for k in swzjit.cache_ls()["kernels"]}
    assert "pyfam::tile_transpose<8, 1>" in names and "pyfam::transpose_reference" in names
    again = user.autotune(USER_PROBLEM, compile_only=True, arch="sm_90")
    assert again["compiled"] == 0 and again["kernel_cache_hits"] >= 3


def test_autotune_by_family_name(rowsum, cache_dir):
    report = swzjit.autotune("rowsum", problem="batch=2,rows=100,cols=64", compile_only=True, arch="sm_90",
                             max_candidates=2)
    assert report["problem"] == "batch=2,rows=100,cols=64"
    assert any(c["status"] == "compiled" for c in report["candidates"])
    with pytest.raises(swzjit.InvalidArgumentError, match="problem="):
        swzjit.autotune("rowsum", compile_only=True, arch="sm_90")
    with pytest.raises(swzjit.InvalidArgumentError, match="unknown option"):
        rowsum.autotune(ROWSUM_PROBLEM, compile_only=True, arch="sm_90", rows=3)
    with pytest.raises(swzjit.InvalidArgumentError, match="arch"):
        rowsum.autotune(ROWSUM_PROBLEM, compile_only=True)


# --- run: bad buffers are refused before any GPU work ---------------------------------------------

class FakeCuda:
    """Looks like a CUDA array through __cuda_array_interface__; its memory does not exist."""

    def __init__(self, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (1 << 32, False),
                                         "strides": strides, "version": 3}


def test_run_rejects_bad_buffers_without_a_gpu(rowsum):
    with pytest.raises(swzjit.InvalidArgumentError, match="in.*missing"):
        rowsum.run(ROWSUM_PROBLEM)
    with pytest.raises(swzjit.InvalidArgumentError, match="3 buffers"):
        rowsum.run(ROWSUM_PROBLEM, FakeCuda((2, 100, 64)), FakeCuda((2, 100)), FakeCuda((1,)))
    with pytest.raises(swzjit.InvalidArgumentError, match="not a buffer"):
        rowsum.run(ROWSUM_PROBLEM, FakeCuda((2, 100, 64)), output=FakeCuda((2, 100)))
    with pytest.raises(swzjit.InvalidArgumentError, match="12800"):
        rowsum.run(ROWSUM_PROBLEM, FakeCuda((2, 100, 63)))
    with pytest.raises(swzjit.InvalidArgumentError, match="f32"):
        rowsum.run(ROWSUM_PROBLEM, FakeCuda((2, 100, 64), typestr="<f2"))
    with pytest.raises(swzjit.InvalidArgumentError, match="packed"):
        rowsum.run(ROWSUM_PROBLEM, FakeCuda((2, 100, 64), strides=(2 * 100 * 64 * 4, 64 * 4, 4)))
    with pytest.raises(swzjit.InvalidArgumentError, match="both"):
        rowsum.run(ROWSUM_PROBLEM, FakeCuda((2, 100, 64)), **{"in": FakeCuda((2, 100, 64))})
    with pytest.raises(swzjit.InvalidArgumentError, match="CUDA"):
        rowsum.run(ROWSUM_PROBLEM, np.zeros((2, 100, 64), dtype=np.float32))


class FakeCudaOnDevice(FakeCuda):
    """A fake CUDA array that names its device (as CuPy's do), so no driver call is needed to find it."""

    class _Device:
        id = 0

    device = _Device()


@pytest.mark.skipif(swzjit.driver_available()[0], reason="a machine with a CUDA driver would run the fake arrays")
def test_well_formed_fake_buffers_reach_the_engine_and_fail_for_want_of_a_driver(rowsum, user):
    with pytest.raises(swzjit.NoDeviceError):
        rowsum.run(ROWSUM_PROBLEM, FakeCuda((2, 100, 64)), FakeCuda((2, 100)))
    # Device named, stream given: the call crosses into the extension and the engine, which needs the driver.
    for config in (None, {"BLOCK_ROWS": 32, "LAYOUT": 1}):
        with pytest.raises(swzjit.NoDeviceError) as info:
            rowsum.run(ROWSUM_PROBLEM, FakeCudaOnDevice((2, 100, 64)), out=FakeCudaOnDevice((200,)), stream=7,
                       config=config)
        assert "driver" in info.value.message
    with pytest.raises(swzjit.NoDeviceError):
        user.run_reference(USER_PROBLEM, FakeCudaOnDevice((3, 100, 70)), FakeCudaOnDevice((3, 70, 100)), stream=7)
    with pytest.raises(swzjit.InvalidArgumentError, match="SWIZZLE"):  # a config outside the space: refused first
        user.run(USER_PROBLEM, FakeCudaOnDevice((3, 100, 70)), FakeCudaOnDevice((3, 70, 100)), stream=7,
                 config={"SWIZZLE": 3})


# --- scalars and inout buffers -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def acc():
    return swzjit.register_family(family_defs.ACC_TEXT)


ACC_PROBLEM = {"rows": 100, "cols": 70}


def test_scalars_and_inout_in_the_definition(acc, rowsum):
    assert acc.scalars == {"alpha": 1.5, "beta": 0.5}
    assert rowsum.scalars == {}
    assert [(b["name"], b["role"]) for b in acc.buffers] == [("in", "input"), ("out", "inout")]
    assert "buffer out = f32 [rows] inout" in acc.text
    assert len(acc.space(ACC_PROBLEM)) == 2


def test_run_checks_scalars_and_inout_buffers_before_the_device(acc):
    x, out = FakeCudaOnDevice((100, 70)), FakeCudaOnDevice((100,))
    # An inout buffer is read: like an input, it must be given (never allocated).
    with pytest.raises(swzjit.InvalidArgumentError, match="out missing"):
        acc.run(ACC_PROBLEM, x, stream=7)
    with pytest.raises(swzjit.InvalidArgumentError, match=r"unknown scalar 'gamma' \(scalars: alpha, beta\)"):
        acc.run(ACC_PROBLEM, x, out, stream=7, scalars={"gamma": 1.0})
    with pytest.raises(swzjit.InvalidArgumentError, match="not a finite number"):
        acc.run(ACC_PROBLEM, x, out, stream=7, scalars={"beta": float("inf")})
    with pytest.raises(swzjit.InvalidArgumentError, match="scalars alpha: 'two' is not a number"):
        acc.run(ACC_PROBLEM, x, out, stream=7, scalars={"alpha": "two"})
    with pytest.raises(swzjit.InvalidArgumentError, match="pass a dict"):
        acc.run(ACC_PROBLEM, x, out, stream=7, scalars=[("alpha", 2.0)])
    with pytest.raises(swzjit.InvalidArgumentError, match=r"unknown scalar 'alpha' \(scalars: none\)"):
        swzjit.family("rowsum").run(ROWSUM_PROBLEM, FakeCudaOnDevice((2, 100, 64)), FakeCudaOnDevice((200,)),
                                    stream=7, scalars={"alpha": 2.0})
    with pytest.raises(swzjit.InvalidArgumentError, match="unknown scalar 'gamma'"):
        acc.run_reference(ACC_PROBLEM, x, out, stream=7, scalars={"gamma": 1.0})


@pytest.mark.skipif(swzjit.driver_available()[0], reason="a machine with a CUDA driver would run the fake arrays")
def test_valid_scalars_reach_the_engine_and_fail_for_want_of_a_driver(acc):
    x, out = FakeCudaOnDevice((100, 70)), FakeCudaOnDevice((100,))
    for scalars in ({"alpha": 2, "beta": -0.25}, {"beta": np.float32(3.0)}, None):
        with pytest.raises(swzjit.NoDeviceError):
            acc.run(ACC_PROBLEM, x, out, stream=7, scalars=scalars)
    with pytest.raises(swzjit.NoDeviceError):
        acc.run_reference(ACC_PROBLEM, x, out=out, stream=7, scalars={"alpha": 0.5})
