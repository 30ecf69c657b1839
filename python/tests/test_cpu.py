# python/tests: CPU-side tests of the swzjit package (no GPU needed): import and version, errors,
# the analysis API checked against its own definitions and the swz CLI, cache inspection on a
# temporary cache filled by a compile-only tune, and tensors rejected cleanly before any GPU work.
import json
import os
import re
import subprocess
import sys
import threading

import pytest

import swzjit
from swzjit import _tensors

from conftest import REPO

HAVE_DRIVER = swzjit.driver_available()[0]


def run_py(code, env=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120)


# --- import, version, errors ----------------------------------------------------------------------

def test_version_is_the_librarys():
    text = (REPO / "CMakeLists.txt").read_text()
    want = re.search(r"project\(swzjit VERSION ([0-9]+\.[0-9]+\.[0-9]+)", text).group(1)
    assert swzjit.__version__ == want
    out = run_py("import swzjit; print(swzjit.__version__)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == want


def test_every_error_kind_maps_to_its_class():
    classes = {cls.kind: cls for cls in (swzjit.InvalidArgumentError, swzjit.UnsupportedError,
                                         swzjit.CompileError, swzjit.DriverError, swzjit.NoDeviceError,
                                         swzjit.ContextLostError, swzjit.CacheError, swzjit.IoError,
                                         swzjit.InternalError)}
    kinds = swzjit._swzjit.error_kinds()
    assert sorted(kinds) == sorted(classes)
    for kind in kinds:
        with pytest.raises(swzjit.Error) as info:
            swzjit._swzjit.raise_test_error(kind, f"message of {kind}")
        assert type(info.value) is classes[kind]
        assert info.value.kind == kind
        assert info.value.message == f"message of {kind}"
        assert kind in str(info.value)
    with pytest.raises(swzjit.CompileError) as info:
        swzjit._swzjit.raise_test_error("compile", "nvrtc said no")
    assert info.value.compile_log == "log line"
    assert info.value.compile_options == ["-arch=sm_90"]
    assert info.value.source_name == "test.cu"
    assert issubclass(swzjit.InvalidArgumentError, ValueError)


def test_bad_tune_policy_in_the_environment_fails_the_import():
    out = run_py("import swzjit", env={"SWZJIT_TUNE_POLICY": "sometimes"})
    assert out.returncode != 0
    assert "SWZJIT_TUNE_POLICY" in out.stderr and "InvalidArgumentError" in out.stderr
    out = run_py("import swzjit; print(swzjit.settings()['policy'])", env={"SWZJIT_TUNE_POLICY": "tune-on-miss"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "tune_on_miss"


def test_configure_validates_and_keeps_settings(cache_dir):
    s = swzjit.settings()
    assert s["cache_dir"] == str(cache_dir)
    with pytest.raises(swzjit.InvalidArgumentError, match="policy"):
        swzjit.configure(policy="always")
    assert swzjit.settings() == s  # a rejected change changes nothing
    assert swzjit.configure(policy="tune_on_miss")["policy"] == "tune_on_miss"
    swzjit.configure(policy="default")


# --- analysis API ---------------------------------------------------------------------------------

def swizzle(b, m, s, offset):
    mask = ((1 << b) - 1) << (m + max(0, s))
    return offset ^ ((offset & mask) >> s if s >= 0 else (offset & mask) << -s)


@pytest.mark.parametrize("sw,shape,order", [((3, 3, 3), (8, 64), "row"), ((2, 0, 3), (16, 8), "col"),
                                            ((0, 0, 0), (3, 5), "row"), ((1, 0, -1), (4, 4), "row")])
def test_layout_offsets_follow_the_swizzle_definition(sw, shape, order):
    rows, cols = shape
    got = swzjit.layout(sw, shape, order=order)
    for r in range(rows):
        for c in range(cols):
            plain = r * cols + c if order == "row" else r + c * rows
            assert got[r][c] == swizzle(*sw, plain)
    assert swzjit.layout(",".join(map(str, sw)), shape, order=order) == got


def test_layout_formats_and_strides():
    offsets = swzjit.layout((2, 1, 2), (4, 8), stride=(8, 1))
    assert offsets == swzjit.layout((2, 1, 2), (4, 8), order="row")
    csv = swzjit.layout((2, 1, 2), (4, 8), format="csv")
    assert [[int(v) for v in line.split(",")] for line in csv.strip().splitlines()] == offsets
    svg = swzjit.layout((3, 0, 3), (8, 8), format="svg", elem_bytes=4)
    assert "<svg" in svg and svg.rstrip().endswith("</svg>")
    text = swzjit.layout((3, 0, 3), (8, 8), format="text")
    assert str(offsets[3][5]) in text
    with pytest.raises(swzjit.InvalidArgumentError, match="format"):
        swzjit.layout((0, 0, 0), (2, 2), format="png")
    with pytest.raises(swzjit.InvalidArgumentError, match="swizzle"):
        swzjit.layout("3,3", (2, 2))
    with pytest.raises(swzjit.InvalidArgumentError):
        swzjit.layout((3, 3, 1), (8, 8))  # |S| < B: the library's own rule
    with pytest.raises(swzjit.InvalidArgumentError):
        swzjit.layout((0, 0, 0), (0, 4))


def test_bank_model():
    conflicted = swzjit.bank("lds", [lane * 128 for lane in range(32)])
    assert (conflicted["wavefronts"], conflicted["ideal_wavefronts"], conflicted["max_way"]) == (32, 1, 32)
    assert conflicted["excess_wavefronts"] == 31
    free = swzjit.bank("lds", [lane * 4 for lane in range(32)])
    assert (free["wavefronts"], free["excess_wavefronts"], free["max_way"]) == (1, 0, 1)
    ldm = swzjit.bank("ldmatrix.x4", [lane * 16 for lane in range(32)])
    assert ldm["width"] == 16 and len(ldm["phases"]) == 4 and ldm["excess_wavefronts"] == 0
    wide = swzjit.bank("sts", [lane * 16 for lane in range(32)], width=16)
    assert len(wide["phases"]) == 4
    with pytest.raises(swzjit.InvalidArgumentError, match="width"):
        swzjit.bank("lds", [0, 4], width=3)
    with pytest.raises(swzjit.InvalidArgumentError):
        swzjit.bank("lds", list(range(0, 33 * 4, 4)))  # 33 lanes
    with pytest.raises(swzjit.InvalidArgumentError):
        swzjit.bank("ldg", [0])


def test_solver_result_is_conflict_free_under_the_bank_model():
    # The 32x32 fp32 transpose tile: a column read is 32-way conflicted in the plain layout.
    r = swzjit.solve(32, 128, ["colread"], elem_bytes=4)
    assert r["status"] == "found" and len(r["swizzles"]) == 1
    (outcome,) = r["patterns"]
    assert outcome["before"]["excess_wavefronts"] > 0 and outcome["after"]["excess_wavefronts"] == 0
    # Check it independently: lay the tile out with the swizzle and cost every column read.
    offsets = swzjit.layout(r["swizzles"][0], (32, 32))
    for c in range(32):
        cost = swzjit.bank("lds", [offsets[row][c] * 4 for row in range(32)])
        assert cost["excess_wavefronts"] == 0
    assert swzjit.solve(8, 128, "store:16")["status"] == "identity"
    with pytest.raises(swzjit.InvalidArgumentError, match="pattern"):
        swzjit.solve(32, 128, ["diagonal"])
    with pytest.raises(swzjit.InvalidArgumentError, match="patterns"):
        swzjit.solve(32, 128, [])


def test_solver_agrees_with_the_swz_cli(swz_tool):
    for rows, row_bytes, elem, patterns in [(32, 128, 4, "colread"), (64, 64, 2, "store:16,ldmatrix"),
                                            (16, 512, 2, "store:16,ldmatrix.flat")]:
        cli = subprocess.run([swz_tool, "solve", "--rows", str(rows), "--row-bytes", str(row_bytes),
                              "--elem-bytes", str(elem), "--pattern", patterns, "--format", "json"],
                             capture_output=True, text=True, timeout=120)
        assert cli.returncode == 0, cli.stderr
        want = json.loads(cli.stdout)
        got = swzjit.solve(rows, row_bytes, patterns, elem_bytes=elem)
        assert got["status"] == {"found": "found", "identity": "identity"}.get(want["status"], "not_found")
        assert [list(s) for s in got["swizzles"]] == [[s["b"], s["m"], s["s"]] for s in want["swizzles"]]
        assert [p["after"]["wavefronts"] for p in got["patterns"]] == \
               [p["after"]["wavefronts"] for p in want["patterns"]]


def test_python_m_swzjit_runs_the_bundled_swz():
    if swzjit.swz_path() is None:
        pytest.skip("this swzjit has no bundled swz")
    r = subprocess.run([sys.executable, "-m", "swzjit", "solve", "--rows", "32", "--row-bytes", "128", "--pattern",
                        "colread", "--format", "json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "found"
    bad = subprocess.run([sys.executable, "-m", "swzjit", "solve", "--rows", "x"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2  # the tool's exit code for bad usage comes through


# --- cache inspection -----------------------------------------------------------------------------

def test_cache_stats_and_ls_on_an_empty_cache(cache_dir):
    s = swzjit.cache_stats()
    assert s["directory"] == str(cache_dir) and s["mode"] == "disk"
    assert s["kernel_entries"] == 0 and s["winners"] == 0
    assert swzjit.cache_ls() == {"kernels": [], "tuning": []}
    explicit = swzjit.cache_stats(cache_dir)
    assert (explicit["directory"], explicit["kernel_entries"]) == (str(cache_dir), 0)


def test_compile_only_tune_fills_the_cache_that_swz_reads(cache_dir, swz_tool):
    report = swzjit.autotune("transpose", rows=256, cols=512, dtype="f16", compile_only=True, arch="sm_90",
                             max_candidates=2)
    compiled = [c for c in report["candidates"] if c["status"] == "compiled"]
    assert compiled, report
    assert report["arch"] == "sm_90" and report["winner"] == ""
    assert report["default_config"] in [c["config"] for c in report["candidates"]]
    stats = swzjit.cache_stats()
    # Every compile (the candidates and the tuner's check kernel) is one entry.
    assert report["compiled"] >= len(compiled)
    assert stats["kernel_entries"] == report["compiled"] and stats["kernel_bytes"] > 0
    listing = swzjit.cache_ls()
    assert len(listing["kernels"]) == report["compiled"]
    assert all(k["arch"] == "sm_90" and "swz::" in k["name_expression"] for k in listing["kernels"])
    # The C++ tool sees the same entries in the same directory.
    cli = subprocess.run([swz_tool, "cache", "--dir", str(cache_dir), "stats", "--json"], capture_output=True,
                         text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert str(report["compiled"]) in re.findall(r'"kernel_entries":\s*(\d+)', cli.stdout)
    # A second tune of the same problem compiles nothing: every kernel comes from the cache.
    again = swzjit.autotune("transpose", rows=256, cols=512, dtype="f16", compile_only=True, arch="sm_90",
                            max_candidates=2)
    assert again["compiled"] == 0 and again["kernel_cache_hits"] >= report["compiled"]


def test_compile_only_gemm_tune(cache_dir):
    report = swzjit.autotune("gemm", m=128, n=128, k=64, dtype="f16", out_dtype="f32", layout="NT",
                             compile_only=True, arch="sm_90", max_candidates=1)
    assert "f16>f32" in report["problem"] and "A=row B=col" in report["problem"]
    assert any(c["status"] == "compiled" for c in report["candidates"]), report
    assert swzjit.cache_stats()["kernel_entries"] >= 1


def test_autotune_rejects_bad_requests(cache_dir):
    with pytest.raises(swzjit.InvalidArgumentError, match="op"):
        swzjit.autotune("conv", rows=1)
    with pytest.raises(swzjit.InvalidArgumentError, match="unknown argument"):
        swzjit.autotune("transpose", rows=8, cols=8, m=3)
    with pytest.raises(swzjit.InvalidArgumentError, match="arch"):
        swzjit.autotune("transpose", rows=8, cols=8, compile_only=True)
    with pytest.raises(swzjit.InvalidArgumentError, match="layout"):
        swzjit.autotune("gemm", m=8, n=8, k=8, layout="NX", compile_only=True, arch="sm_90")
    with pytest.raises(swzjit.InvalidArgumentError, match="rows"):
        swzjit.autotune("transpose", rows=-4, cols=8, compile_only=True, arch="sm_90")
    with pytest.raises(swzjit.InvalidArgumentError):
        swzjit.autotune("transpose", rows=2.5, cols=8, compile_only=True, arch="sm_90")
    with pytest.raises(swzjit.UnsupportedError):
        swzjit.autotune("gemm", m=8, n=8, k=8, dtype="f32", out_dtype="f16", compile_only=True, arch="sm_90")


# --- tensors rejected cleanly ---------------------------------------------------------------------

class FakeCuda:
    """Looks like a CUDA array through __cuda_array_interface__; its memory does not exist."""

    def __init__(self, shape, typestr="<f4", strides=None, ptr=1 << 32):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


class FakeHostDLPack:
    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def __dlpack__(self, stream=None):
        raise AssertionError("a CPU tensor must be rejected before it is exported")


def test_fake_cuda_array_reads_shape_strides_dtype():
    t = _tensors.describe(FakeCuda((4, 6), "<f2", strides=(16, 2)), "x")
    assert (t.shape, t.strides, t.dtype, t.ptr) == ((4, 6), (8, 1), "f16", 1 << 32)
    t = _tensors.describe(FakeCuda((2, 3, 5)), "x")
    assert t.strides == (15, 5, 1) and t.dtype == "f32"


def test_bad_tensors_are_rejected_before_any_gpu_work():
    with pytest.raises(swzjit.InvalidArgumentError, match="not a GPU tensor"):
        swzjit.transpose([[1.0, 2.0]])
    with pytest.raises(swzjit.InvalidArgumentError, match="not CUDA"):
        swzjit.transpose(FakeHostDLPack())
    with pytest.raises(swzjit.InvalidArgumentError, match="typestr"):
        swzjit.transpose(FakeCuda((4, 4), "<i4"))
    with pytest.raises(swzjit.InvalidArgumentError, match="malformed"):
        swzjit.transpose(type("Broken", (), {"__cuda_array_interface__": {"shape": (2, 2)}})())
    with pytest.raises(swzjit.InvalidArgumentError, match="columns must equal"):
        swzjit.gemm(FakeCuda((4, 3)), FakeCuda((4, 4)), out=FakeCuda((4, 4)))
    with pytest.raises(swzjit.InvalidArgumentError, match="dtypes"):
        swzjit.gemm(FakeCuda((4, 4)), FakeCuda((4, 4), "<f2"), out=FakeCuda((4, 4)))
    with pytest.raises(swzjit.InvalidArgumentError, match="out: shape"):
        swzjit.gemm(FakeCuda((4, 4)), FakeCuda((4, 5)), out=FakeCuda((4, 4)))
    with pytest.raises(swzjit.InvalidArgumentError, match="beta"):
        swzjit.gemm(FakeCuda((4, 4)), FakeCuda((4, 4)), beta=1.0)
    with pytest.raises(swzjit.InvalidArgumentError, match="neither row- nor"):
        swzjit.gemm(FakeCuda((4, 4), strides=(32, 8)), FakeCuda((4, 4)), out=FakeCuda((4, 4)))
    with pytest.raises(swzjit.InvalidArgumentError, match="column-major"):
        swzjit.transpose(FakeCuda((4, 6), strides=(4, 16)), out=FakeCuda((6, 4)))
    with pytest.raises(swzjit.InvalidArgumentError, match="dimensions"):
        swzjit.transpose(FakeCuda((2, 2, 2, 2)), out=FakeCuda((2, 2, 2, 2)))
    with pytest.raises(swzjit.InvalidArgumentError, match="stream"):
        swzjit.transpose(FakeCuda((4, 4)), out=FakeCuda((4, 4)), stream="main")


@pytest.mark.skipif(HAVE_DRIVER, reason="a machine with a CUDA driver would run the fake array")
def test_well_formed_fake_array_without_a_gpu_is_a_no_device_error():
    with pytest.raises(swzjit.NoDeviceError) as info:
        swzjit.transpose(FakeCuda((64, 32)), out=FakeCuda((32, 64)))
    assert "driver" in info.value.message
    with pytest.raises(swzjit.NoDeviceError):
        swzjit.gemm(FakeCuda((8, 4)), FakeCuda((4, 8)), out=FakeCuda((8, 8)))


class DLPackLiar:
    """Claims to be on a GPU, exports a host array (or nothing)."""

    def __init__(self, array):
        self._array = array

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        if self._array is None:
            raise TypeError("cannot export")
        return self._array.__dlpack__(**kwargs)


def test_dlpack_description_reads_address_shape_strides():
    np = pytest.importorskip("numpy")
    base = np.arange(60, dtype=np.float16).reshape(6, 10)
    view = base[1:, 2:9]
    d = swzjit._swzjit.dlpack_describe(view)
    assert d["ptr"] == view.ctypes.data and d["ptr"] == base.ctypes.data + (10 + 2) * 2
    assert d["shape"] == (5, 7) and d["strides"] == (10, 1)
    assert (d["dtype_code"], d["dtype_bits"], d["dtype_lanes"], d["device_type"]) == (2, 16, 1, 1)
    t = swzjit._swzjit.dlpack_describe(base.astype(np.float32).T)
    assert t["strides"] == (1, 10) and t["dtype_bits"] == 32
    with pytest.raises(swzjit.InvalidArgumentError, match="not CUDA"):
        swzjit.transpose(view)  # refused by its __dlpack_device__ before any export
    with pytest.raises(swzjit.InvalidArgumentError, match="not CUDA"):
        swzjit.transpose(DLPackLiar(view))  # refused by the exported tensor's device
    with pytest.raises(swzjit.InvalidArgumentError, match="could not be exported"):
        swzjit.transpose(DLPackLiar(None))


def test_stream_arguments():
    t = _tensors.describe(FakeCuda((2, 2)), "x")
    assert _tensors.stream_handle(1234, t) == 1234
    assert _tensors.stream_handle(type("S", (), {"cuda_stream": 77})(), t) == 77
    assert _tensors.stream_handle(type("S", (), {"ptr": 78})(), t) == 78
    assert _tensors.stream_handle(type("S", (), {"__cuda_stream__": lambda self: (0, 79)})(), t) == 79
    for bad in (-1, True, 1.5, object()):
        with pytest.raises(swzjit.InvalidArgumentError, match="stream"):
            _tensors.stream_handle(bad, t)


def test_engines_are_shared_between_threads(cache_dir):
    results, errors = [], []

    def work():
        try:
            results.append((swzjit._swzjit.engine_cache_directory(0), swzjit.counters(0)["launches"]))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 8
    assert {r for r in results} == {(str(cache_dir), 0)}


def test_problem_validation_matches_the_library():
    key = swzjit._swzjit.gemm_problem_key({"dtype": "f16", "out_dtype": "f32", "m": 64, "n": 32, "k": 16,
                                           "b_order": "col"})
    assert key.startswith("f16>f32 64x32x16 A=row B=col C=row")
    with pytest.raises(swzjit.InvalidArgumentError, match="lda"):
        swzjit._swzjit.gemm_problem_key({"m": 64, "n": 32, "k": 16, "lda": 8})
    with pytest.raises(swzjit.InvalidArgumentError, match="order"):
        swzjit._swzjit.gemm_problem_key({"m": 4, "n": 4, "k": 4, "a_order": "diagonal"})
    assert swzjit._swzjit.transpose_problem_key({"dtype": "bf16", "rows": 3, "cols": 5}).startswith("bf16 3x5")
