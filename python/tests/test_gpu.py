# python/tests: GPU tests of the swzjit package with PyTorch — GEMM of every dtype and layout (views,
# pitches, odd shapes, batches) against torch.matmul in float64, transpose against t().contiguous(),
# the current and explicit streams, DLPack / __cuda_array_interface__ inputs, and a tuned cache shared
# with the C++ swz tool, and declared families (the built-in rowsum against x.sum, a user family
# against x.transpose, on current and explicit streams, tuned once). Skipped (visibly) without PyTorch or a GPU.
import json
import os
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU visible to PyTorch", allow_module_level=True)

import swzjit  # noqa: E402

from conftest import find_swz  # noqa: E402

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# Relative Frobenius error against float64: accumulation in f32, the output rounded to its dtype.
TOL = {"f32": 1e-5, "f16": 2e-3, "bf16": 1.2e-2}


@pytest.fixture(scope="module", autouse=True)
def module_cache(tmp_path_factory):
    before = swzjit.settings()
    d = tmp_path_factory.mktemp("swzjit-cache")
    swzjit.configure(cache_dir=str(d), policy="default")
    yield d
    swzjit.configure(cache_dir=before["cache_dir"] or "", policy=before["policy"])


def rel_err(got, want):
    got, want = got.double(), want.double()
    return (torch.linalg.norm(got - want) / max(torch.linalg.norm(want).item(), 1e-30)).item()


def operand(rows, cols, dtype, transposed, gen):
    """rows x cols; stored transposed (a column-major view) when asked."""
    if transposed:
        return torch.randn(cols, rows, generator=gen, device="cuda").to(TORCH[dtype]).t()
    return torch.randn(rows, cols, generator=gen, device="cuda").to(TORCH[dtype])


def gen(seed):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return g


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("shape", [(256, 128, 64), (127, 129, 65), (1, 33, 7)])
def test_gemm_matches_torch_matmul(dtype, layout, shape):
    m, n, k = shape
    g = gen(m * 7 + n * 3 + k)
    a = operand(m, k, dtype, layout[0] == "T", g)
    b = operand(k, n, dtype, layout[1] == "T", g)
    c = swzjit.gemm(a, b)
    assert c.shape == (m, n) and c.dtype == TORCH[dtype] and c.device == a.device
    assert rel_err(c, a.double() @ b.double()) <= TOL[dtype]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_gemm_f32_output_alpha_beta_and_column_major_out(dtype):
    g = gen(11)
    m, n, k = 96, 80, 200
    a = operand(m, k, dtype, False, g)
    b = operand(k, n, dtype, True, g)
    c0 = torch.randn(n, m, generator=g, device="cuda").t()  # column-major C
    out = c0.clone()
    r = swzjit.gemm(a, b, out=out, alpha=0.5, beta=-2.0)
    assert r is out
    want = 0.5 * (a.double() @ b.double()) - 2.0 * c0.double()
    assert rel_err(out, want) <= 1e-4
    c32 = swzjit.gemm(a, b, out_dtype=torch.float32)
    assert c32.dtype == torch.float32 and rel_err(c32, a.double() @ b.double()) <= 1e-4


def test_gemm_pitched_batched_and_empty():
    g = gen(5)
    big = torch.randn(70, 160, generator=g, device="cuda")
    a = big[:, 3:103]  # 70 x 100, pitch 160, offset 3 elements: narrow alignment
    b = torch.randn(100, 50, generator=g, device="cuda")
    assert rel_err(swzjit.gemm(a, b), a.double() @ b.double()) <= TOL["f32"]
    ab = torch.randn(3, 40, 24, generator=g, device="cuda", dtype=torch.float16)
    bb = torch.randn(3, 56, 24, generator=g, device="cuda", dtype=torch.float16).transpose(1, 2)
    cb = swzjit.gemm(ab, bb)
    assert cb.shape == (3, 40, 56)
    assert rel_err(cb, ab.double() @ bb.double()) <= TOL["f16"]
    # K = 0 writes beta * C; M = 0 does nothing.
    c = torch.ones(4, 5, device="cuda")
    swzjit.gemm(torch.empty(4, 0, device="cuda"), torch.empty(0, 5, device="cuda"), out=c, beta=3.0)
    assert torch.equal(c, torch.full((4, 5), 3.0, device="cuda"))
    assert swzjit.gemm(torch.empty(0, 6, device="cuda"), torch.empty(6, 5, device="cuda")).shape == (0, 5)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("shape", [(256, 512), (33, 65), (1, 7), (1000, 3)])
def test_transpose_matches_t_contiguous(dtype, shape):
    x = torch.randn(*shape, generator=gen(shape[0]), device="cuda").to(TORCH[dtype])
    y = swzjit.transpose(x)
    assert y.shape == shape[::-1] and y.dtype == x.dtype
    assert torch.equal(y, x.t().contiguous())


def test_transpose_pitched_and_batched():
    g = gen(3)
    big = torch.randn(300, 520, generator=g, device="cuda")
    x = big[:, 5:505]
    out_big = torch.zeros(520, 310, device="cuda")
    out = out_big[:500, :300]
    assert swzjit.transpose(x, out=out) is out
    assert torch.equal(out, x.t())
    assert torch.count_nonzero(out_big[500:]) == 0 and torch.count_nonzero(out_big[:, 300:]) == 0
    xb = torch.randn(4, 33, 70, generator=g, device="cuda", dtype=torch.bfloat16)
    assert torch.equal(swzjit.transpose(xb), xb.transpose(1, 2).contiguous())


def _delayed_copy_then(run, stream_ctx_stream, explicit):
    """On a side stream: sleep, then fill x; then swzjit reads x. Correct only if swzjit ran on
    that stream (the side stream does not synchronize with the legacy default stream)."""
    src = torch.randn(512, 768, device="cuda")
    x = torch.zeros_like(src)
    torch.cuda.synchronize()
    s = stream_ctx_stream
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # about 0.1 s of GPU time
        x.copy_(src)
        if not explicit:
            y = run(x, None)
    if explicit:
        y = run(x, s)
    s.synchronize()
    return src, y


def test_runs_on_the_current_stream():
    s = torch.cuda.Stream()
    src, y = _delayed_copy_then(lambda x, st: swzjit.transpose(x), s, explicit=False)
    assert torch.equal(y, src.t())


def test_runs_on_an_explicit_stream():
    s = torch.cuda.Stream()
    out = torch.empty(768, 512, device="cuda")
    torch.cuda.synchronize()
    src, y = _delayed_copy_then(lambda x, st: swzjit.transpose(x, out=out, stream=st), s, explicit=True)
    assert torch.equal(y, src.t())
    s2 = torch.cuda.Stream()
    eye = torch.eye(768, device="cuda")  # made before the helper's synchronize
    src, y = _delayed_copy_then(lambda x, st: swzjit.gemm(x, eye, stream=st.cuda_stream), s2, explicit=True)
    assert rel_err(y, src) <= 1e-6


def test_threads_with_their_own_streams():
    errors = []

    def work(seed):
        try:
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                x = torch.randn(257, 129, generator=gen(seed), device="cuda")
                for _ in range(20):
                    y = swzjit.transpose(x)
                s.synchronize()
                if not torch.equal(y, x.t()):
                    errors.append(f"thread {seed}: wrong transpose")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors


class DLPackOnly:
    def __init__(self, t):
        self._t = t

    def __dlpack__(self, **kwargs):
        return self._t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


class CudaArrayOnly:
    def __init__(self, t):
        self.__cuda_array_interface__ = t.__cuda_array_interface__
        self._t = t


def test_dlpack_and_cuda_array_interface_inputs():
    x = torch.randn(65, 130, device="cuda", dtype=torch.bfloat16)
    y = swzjit.transpose(DLPackOnly(x))
    assert isinstance(y, torch.Tensor) and torch.equal(y, x.t())
    x32 = torch.randn(40, 24, device="cuda")
    out = torch.empty(24, 40, device="cuda")
    swzjit.transpose(CudaArrayOnly(x32), out=CudaArrayOnly(out))
    torch.cuda.synchronize()
    assert torch.equal(out, x32.t())
    a = torch.randn(30, 20, device="cuda", dtype=torch.float16)
    c = swzjit.gemm(DLPackOnly(a), DLPackOnly(a.t()))
    assert rel_err(c, a.double() @ a.double().t()) <= TOL["f16"]


def test_bad_gpu_inputs():
    with pytest.raises(swzjit.InvalidArgumentError, match="cuda"):
        swzjit.transpose(torch.zeros(4, 4))
    with pytest.raises(swzjit.InvalidArgumentError, match="dtype"):
        swzjit.transpose(torch.zeros(4, 4, device="cuda", dtype=torch.float64))
    with pytest.raises(swzjit.InvalidArgumentError, match="contiguous"):
        swzjit.gemm(torch.zeros(8, 8, device="cuda")[::2, ::2], torch.zeros(4, 4, device="cuda"))
    with pytest.raises(swzjit.UnsupportedError):
        swzjit.gemm(torch.zeros(8, 8, device="cuda"), torch.zeros(8, 8, device="cuda"), out_dtype="f16")


def _swz(args, cache):
    tool = find_swz()
    if tool is None:
        pytest.skip("no swz tool found (set SWZ_TOOL=/path/to/swz)")
    r = subprocess.run([tool] + args + ["--cache-dir", str(cache), "--json", "--quiet"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_tuned_cache_is_shared_with_the_swz_tool(tmp_path):
    cache = tmp_path / "shared"
    cache.mkdir()
    tuned = _swz(["autotune", "transpose", "--rows", "2048", "--cols", "1024", "--dtype", "f32",
                  "--max-candidates", "6"], cache)
    assert tuned["winner"]
    gt = _swz(["autotune", "gemm", "--m", "512", "--n", "384", "--k", "256", "--dtype", "f16",
               "--layout", "NT", "--max-candidates", "4"], cache)
    assert gt["winner"]
    before = swzjit.settings()
    swzjit.configure(cache_dir=str(cache))
    try:
        x = torch.randn(2048, 1024, device="cuda")
        assert swzjit.transpose_config(x) == tuned["winner"]
        assert torch.equal(swzjit.transpose(x), x.t())
        a = torch.randn(512, 256, device="cuda", dtype=torch.float16)
        b = torch.randn(384, 256, device="cuda", dtype=torch.float16).t()  # B column-major: NT
        assert swzjit.gemm_config(a, b) == gt["winner"]
        assert rel_err(swzjit.gemm(a, b), a.double() @ b.double()) <= TOL["f16"]
        counters = swzjit.counters(a.device.index or 0)
        assert counters["tuned_hits"] >= 2
        assert counters["compiles"] == 0  # the tool compiled the winners into the shared cache

        # The other way: a Python process tunes, the tool and this process see its winner.
        code = ("import swzjit, torch, json; swzjit.configure(cache_dir=%r); "
                "r = swzjit.autotune('transpose', x=torch.empty(640, 1536, device='cuda', dtype=torch.float16), "
                "max_candidates=5); print(json.dumps(r))" % str(cache))
        child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                               env=dict(os.environ))
        assert child.returncode == 0, child.stderr
        report = json.loads(child.stdout.strip().splitlines()[-1])
        assert report["winner"]
        assert swzjit.transpose_config(torch.empty(640, 1536, device="cuda", dtype=torch.float16)) == report["winner"]
        # Transpose winners are stored in the transpose family's own terms (its params), under its problem.
        listing = swzjit.cache_ls()
        mine = [t for t in listing["tuning"] if t["operation"] == "family:transpose"
                and "640" in t["problem"] and "1536" in t["problem"]]
        assert mine and all(w["config"] for t in mine for w in t["winners"].values())
        tool = find_swz()
        ls = subprocess.run([tool, "cache", "--dir", str(cache), "ls"], capture_output=True, text=True, timeout=60)
        assert ls.returncode == 0 and "family:transpose" in ls.stdout
        assert any(w["config"] in ls.stdout for t in mine for w in t["winners"].values())
    finally:
        swzjit.configure(cache_dir=before["cache_dir"] or "")


def test_tune_on_miss_policy(tmp_path):
    before = swzjit.settings()
    swzjit.configure(cache_dir=str(tmp_path), policy="tune_on_miss")
    try:
        x = torch.randn(384, 640, device="cuda", dtype=torch.float16)
        tunes = swzjit.counters(x.device.index or 0)["tunes"]
        assert torch.equal(swzjit.transpose(x), x.t())
        assert swzjit.counters(x.device.index or 0)["tunes"] == tunes + 1
        stats = swzjit.cache_stats()
        assert stats["winners"] >= 1
    finally:
        swzjit.configure(cache_dir=before["cache_dir"] or "", policy=before["policy"])


# --- declared families (swzjit.Family) -------------------------------------------------------------

import family_defs  # noqa: E402


def _user_family():
    return swzjit.register_family(family_defs.TEXT, smem_accesses=family_defs.accesses)


def test_rowsum_family_matches_torch_sum():
    f = swzjit.family("rowsum")
    problem = {"batch": 3, "rows": 1000, "cols": 777}
    x = torch.randn(3, 1000, 777, generator=gen(21), device="cuda")
    want = x.double().sum(dim=2)
    out = f.run(problem, x)  # the output allocated through torch, 1-D, on x's device
    assert isinstance(out, torch.Tensor) and out.shape == (3000,) and out.device == x.device
    assert rel_err(out.view(3, 1000), want) <= 1e-5
    for config in f.space(problem):  # every layout, plain (conflicted) included, into a given out
        o = torch.full((3, 1000), float("nan"), device="cuda")
        assert f.run(problem, x, o, config=config) is o
        assert rel_err(o, want) <= 1e-5, config
    ref = f.run_reference(problem, **{"in": x})
    assert rel_err(ref.view(3, 1000), want) <= 1e-5
    x2 = torch.randn(257, 33, generator=gen(22), device="cuda")  # one matrix: x.sum(dim=1)
    assert rel_err(f.run("batch=1,rows=257,cols=33", x2), x2.double().sum(dim=1)) <= 1e-5


def test_user_family_matches_torch_transpose():
    f = _user_family()
    problem = {"batch": 3, "rows": 100, "cols": 70}
    x = torch.randn(3, 100, 70, generator=gen(23), device="cuda")
    want = x.transpose(1, 2)
    assert torch.equal(f.run(problem, x).view(3, 70, 100), want)
    for config in f.space(problem):
        out = torch.empty(3, 70, 100, device="cuda")
        f.run(problem, x, out=out, config=config)
        assert torch.equal(out, want), config
    assert torch.equal(f.run_reference(problem, x).view(3, 70, 100), want)
    # __cuda_array_interface__ and DLPack inputs; the output still comes from torch.
    assert torch.equal(f.run(problem, CudaArrayOnly(x)).view(3, 70, 100), want)
    assert torch.equal(f.run(problem, DLPackOnly(x)).view(3, 70, 100), want)


def test_families_run_on_the_current_and_an_explicit_stream():
    rowsum, user = swzjit.family("rowsum"), _user_family()
    p_sum = {"batch": 1, "rows": 512, "cols": 768}
    p_t = {"batch": 1, "rows": 512, "cols": 768}
    src, y = _delayed_copy_then(lambda x, st: rowsum.run(p_sum, x), torch.cuda.Stream(), explicit=False)
    assert rel_err(y, src.double().sum(dim=1)) <= 1e-5
    src, y = _delayed_copy_then(lambda x, st: rowsum.run(p_sum, x, stream=st), torch.cuda.Stream(), explicit=True)
    assert rel_err(y, src.double().sum(dim=1)) <= 1e-5
    src, y = _delayed_copy_then(lambda x, st: user.run(p_t, x), torch.cuda.Stream(), explicit=False)
    assert torch.equal(y.view(768, 512), src.t())
    src, y = _delayed_copy_then(lambda x, st: user.run(p_t, x, stream=st.cuda_stream), torch.cuda.Stream(),
                                explicit=True)
    assert torch.equal(y.view(768, 512), src.t())


def test_family_autotune_once_then_run_the_winner():
    f = _user_family()
    problem = "batch=2,rows=1000,cols=777"
    report = f.autotune(problem, max_candidates=4)
    assert report["winner"], report
    winner = f.config(report["winner"])
    assert winner["SWIZZLE"] == 1  # the Python access map kept the conflicted layouts out
    assert {c["status"] for c in report["candidates"] if c["config"].endswith("SWIZZLE=0")} <= {"skipped-static"}
    assert f.tuned_config(problem) == winner
    x = torch.randn(2, 1000, 777, generator=gen(24), device="cuda")
    assert torch.equal(f.run(problem, x).view(2, 777, 1000), x.transpose(1, 2))
    r = swzjit.autotune("rowsum", problem={"batch": 2, "rows": 4096, "cols": 512}, max_candidates=4)
    assert r["winner"] and "LAYOUT=0" not in r["winner"]
    assert swzjit.family("rowsum").tuned_config("batch=2,rows=4096,cols=512") == swzjit.family("rowsum").config(r["winner"])


def test_family_scalars_and_inout_match_torch():
    f = swzjit.register_family(family_defs.ACC_TEXT)
    problem = {"rows": 1000, "cols": 777}
    x = torch.randn(1000, 777, generator=gen(31), device="cuda")
    c0 = torch.randn(1000, generator=gen(32), device="cuda")
    sums = x.double().sum(dim=1)
    for config in f.space(problem):
        out = c0.clone()
        assert f.run(problem, x, out, config=config, scalars={"alpha": -0.75, "beta": 2.0}) is out  # in place
        assert rel_err(out, -0.75 * sums + 2.0 * c0.double()) <= 1e-5, config
    out = c0.clone()
    f.run(problem, x, out)  # the defaults: alpha 1.5, beta 0.5
    assert rel_err(out, 1.5 * sums + 0.5 * c0.double()) <= 1e-5
    out = c0.clone()
    f.run(problem, x, out, scalars={"beta": 0})  # one given, the other at its default
    assert rel_err(out, 1.5 * sums) <= 1e-5
    out = c0.clone()
    assert f.run_reference(problem, x, out=out, scalars={"alpha": 3.0, "beta": -1.0}) is out
    assert rel_err(out, 3.0 * sums - c0.double()) <= 1e-5
    torch.cuda.synchronize()


def test_family_bad_gpu_inputs():
    f = swzjit.family("rowsum")
    problem = {"batch": 1, "rows": 8, "cols": 8}
    with pytest.raises(swzjit.InvalidArgumentError, match="cuda"):
        f.run(problem, torch.zeros(8, 8))
    with pytest.raises(swzjit.InvalidArgumentError, match="f32"):
        f.run(problem, torch.zeros(8, 8, device="cuda", dtype=torch.float16))
    with pytest.raises(swzjit.InvalidArgumentError, match="packed"):
        f.run(problem, torch.zeros(8, 16, device="cuda")[:, ::2])
    with pytest.raises(swzjit.InvalidArgumentError, match="64"):
        f.run(problem, torch.zeros(8, 9, device="cuda"))
