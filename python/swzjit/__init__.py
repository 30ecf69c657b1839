# swzjit: the Python package over libswzjit — GEMM and transpose on any CUDA tensor (PyTorch, CuPy,
# JAX, ...) through the C++ Engine, autotuning, cache inspection and the bank/swizzle analysis API.
"""libswzjit for Python: JIT-compiled, autotuned CUDA kernels with XOR-swizzled shared memory.

GPU functions take and return framework tensors (PyTorch, CuPy, anything with
``__cuda_array_interface__`` or ``__dlpack__``), run on the tensor's device and on the framework's
current stream, and never copy data to the host::

    import torch, swzjit
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    c = swzjit.gemm(a, a.t())          # a @ a.T, a torch tensor on a's device
    t = swzjit.transpose(c)            # c.t().contiguous()

Your own kernels: :func:`register_family` takes a ``.family`` description of a CUDA template (its
problem dims, tunable params, buffers and launch) and returns a :class:`Family` that is analysed,
compiled, tuned and run like the built-in kernels (``swzjit.family("rowsum")`` is the built-in one).

Settings (cache directory, tuning policy) come from :func:`configure` or the environment
(``SWZJIT_CACHE_DIR``, ``SWZJIT_TUNE_POLICY=default|tune_on_miss``, ``SWZJIT_CACHE_READ_ONLY``).
"""

import os
import threading

from . import _swzjit
from ._errors import (CacheError, CompileError, ContextLostError, DriverError, Error, InternalError,
                      InvalidArgumentError, IoError, NoDeviceError, UnsupportedError, _invalid)
from ._tensors import (describe as _describe, device_of as _device_of, empty_like_framework as _empty,
                       native_device as _native_device, stream_handle as _stream)

__version__ = _swzjit.__version__

__all__ = [
    "__version__", "gemm", "transpose", "gemm_config", "transpose_config", "autotune", "configure",
    "settings", "cache_stats", "cache_ls", "counters", "layout", "bank", "solve", "device_count",
    "driver_available", "swz_path", "Error", "InvalidArgumentError", "UnsupportedError", "CompileError",
    "DriverError", "NoDeviceError", "ContextLostError", "CacheError", "IoError", "InternalError",
    "Family", "register_family", "family", "family_names",
]

_HERE = os.path.dirname(os.path.abspath(__file__))
# A wheel carries the autotuner's worker and the swz CLI in swzjit/bin; the library looks for the
# worker through SWZJIT_WORKER first (an explicit setting by the user wins).
_BUNDLED_WORKER = os.path.join(_HERE, "bin", "swz-worker")
if "SWZJIT_WORKER" not in os.environ and os.access(_BUNDLED_WORKER, os.X_OK):
    os.environ["SWZJIT_WORKER"] = _BUNDLED_WORKER

# --- settings -------------------------------------------------------------------------------------

_settings_lock = threading.Lock()
_POLICIES = ("default", "tune_on_miss")


def _env_settings():
    policy = os.environ.get("SWZJIT_TUNE_POLICY", "default").strip().lower().replace("-", "_") or "default"
    if policy not in _POLICIES:
        raise _invalid(f"SWZJIT_TUNE_POLICY={policy!r} is not a tune policy; use default or tune_on_miss")
    return {"cache_dir": None, "policy": policy, "use_cache": True, "cache_read_only": False,
            "stage_narrow_operands": True}


_settings = _env_settings()


def configure(cache_dir=None, policy=None, use_cache=None, cache_read_only=None, stage_narrow_operands=None):
    """Changes the settings of the engines made from now on (one engine per device and settings;
    engines already made keep theirs). Arguments left as None keep their value.

    Args:
        cache_dir: cache directory (None/"" = $SWZJIT_CACHE_DIR, else $XDG_CACHE_HOME/swzjit, else
            ~/.cache/swzjit).
        policy: "default" (untuned problems run a good default config) or "tune_on_miss" (autotune
            each new problem once, then use the winner).
        use_cache: False keeps compiled kernels in memory only.
        cache_read_only: use the cache without writing it.
        stage_narrow_operands: copy GEMM operands that allow fewer than 8 bytes per access into
            16-byte pitches first.

    Returns:
        The settings now in force, as a dict.
    """
    with _settings_lock:
        new = dict(_settings)
        for key, value in (("cache_dir", cache_dir), ("policy", policy), ("use_cache", use_cache),
                           ("cache_read_only", cache_read_only),
                           ("stage_narrow_operands", stage_narrow_operands)):
            if value is not None:
                new[key] = os.fspath(value) if key == "cache_dir" else value
        new["policy"] = str(new["policy"]).replace("-", "_")
        if new["policy"] not in _POLICIES:
            raise _invalid(f"policy: {new['policy']!r} is not a tune policy; use 'default' or 'tune_on_miss'")
        _swzjit.configure(new["policy"], new["cache_dir"] or "", bool(new["use_cache"]),
                          bool(new["cache_read_only"]), bool(new["stage_narrow_operands"]))
        _settings.update(new)
        return dict(_settings)


def settings():
    """The settings in force (see :func:`configure`)."""
    with _settings_lock:
        return dict(_settings)


configure()  # hands the environment's settings to the extension

# --- tensors -> problems --------------------------------------------------------------------------

_DTYPE_NAMES = {"f32": "f32", "float32": "f32", "f16": "f16", "float16": "f16", "half": "f16",
                "bf16": "bf16", "bfloat16": "bf16"}


def _dtype_name(dtype, what):
    text = str(dtype).rsplit(".", 1)[-1]  # torch.float16, numpy/cupy dtype('float16') spellings
    text = text.replace("dtype('", "").replace("')", "")
    name = _DTYPE_NAMES.get(text)
    if name is None:
        raise _invalid(f"{what}: {dtype!r} is not a supported dtype; use f32, f16 or bf16")
    return name


def _matrix(t, name, what):
    """(order, leading dimension) of the last two dimensions of t; ld 0 means packed."""
    rows, cols = t.shape[-2], t.shape[-1]
    rs, cs = t.strides[-2], t.strides[-1]
    if (cs == 1 or cols <= 1) and (rs >= cols or rows <= 1):
        return "row", (rs if rows > 1 else 0)
    if (rs == 1 or rows <= 1) and (cs >= rows or cols <= 1):
        return "col", (cs if cols > 1 else 0)
    raise _invalid(f"{name}: strides {t.strides} (elements) for shape {t.shape} are neither row- nor "
                   f"column-major with a pitch; {what} needs one unit stride (pass a .contiguous() copy)")


def _batch_of(t, name):
    if len(t.shape) not in (2, 3):
        raise _invalid(f"{name}: shape {t.shape} has {len(t.shape)} dimensions; use a matrix or a batch "
                       "of matrices (2 or 3 dimensions)")
    if len(t.shape) == 2:
        return 1, 0
    return t.shape[0], (t.strides[0] if t.shape[0] > 1 else 0)


def _gemm_setup(a, b, out, alpha, beta, out_dtype, allocate):
    ta, tb = _describe(a, "a"), _describe(b, "b")
    if len(ta.shape) != len(tb.shape):
        raise _invalid(f"a and b: shapes {ta.shape} and {tb.shape}; give both as matrices or both as batches")
    batch, stride_a = _batch_of(ta, "a")
    batch_b, stride_b = _batch_of(tb, "b")
    if batch != batch_b:
        raise _invalid(f"a and b: batch sizes {batch} and {batch_b} differ")
    m, k = ta.shape[-2], ta.shape[-1]
    k2, n = tb.shape[-2], tb.shape[-1]
    if k != k2:
        raise _invalid(f"a and b: a is {m}x{k} but b is {k2}x{n}; a's columns must equal b's rows")
    if ta.dtype != tb.dtype:
        raise _invalid(f"a and b: dtypes {ta.dtype} and {tb.dtype} differ; convert one")
    want = _dtype_name(out_dtype, "out_dtype") if out_dtype is not None else None
    out_shape = (m, n) if len(ta.shape) == 2 else (batch, m, n)
    device = _device_of([ta, tb])
    if out is None:
        if beta != 0:
            raise _invalid("beta: a nonzero beta reads C; pass out= with its values")
        if not allocate:
            tc = None
        else:
            out = _empty(ta, out_shape, want or ta.dtype, device)
            tc = _describe(out, "out")
    else:
        tc = _describe(out, "out")
        if tuple(tc.shape) != out_shape:
            raise _invalid(f"out: shape {tc.shape}; a {ta.shape} times b {tb.shape} needs {out_shape}")
        if want is not None and want != tc.dtype:
            raise _invalid(f"out_dtype: {want} but out is {tc.dtype}")
    device = _device_of([ta, tb, tc])
    a_order, lda = _matrix(ta, "a", "gemm")
    b_order, ldb = _matrix(tb, "b", "gemm")
    c_order, ldc, stride_c = "row", 0, 0
    if tc is not None:
        c_order, ldc = _matrix(tc, "out", "gemm")
        stride_c = _batch_of(tc, "out")[1]
    problem = {"dtype": ta.dtype, "out_dtype": tc.dtype if tc is not None else (want or ta.dtype),
               "m": m, "n": n, "k": k, "a_order": a_order, "b_order": b_order, "c_order": c_order,
               "lda": lda, "ldb": ldb, "ldc": ldc, "batch": batch, "stride_a": stride_a,
               "stride_b": stride_b, "stride_c": stride_c}
    return device, problem, ta, tb, tc, out


def _transpose_setup(x, out, allocate):
    tx = _describe(x, "x")
    batch, stride_in = _batch_of(tx, "x")
    rows, cols = tx.shape[-2], tx.shape[-1]
    order, ld_in = _matrix(tx, "x", "transpose")
    if order != "row":
        raise _invalid(f"x: strides {tx.strides} are column-major; transpose reads row-major input "
                       "(its transpose is then a plain copy: use .contiguous() instead)")
    out_shape = (cols, rows) if len(tx.shape) == 2 else (batch, cols, rows)
    if out is None:
        out = _empty(tx, out_shape, tx.dtype, tx.device) if allocate else None
    to = _describe(out, "out") if out is not None else None
    ld_out, stride_out = 0, 0
    if to is not None:
        if tuple(to.shape) != out_shape:
            raise _invalid(f"out: shape {to.shape}; the transpose of {tx.shape} is {out_shape}")
        if to.dtype != tx.dtype:
            raise _invalid(f"out: dtype {to.dtype} but x is {tx.dtype}; transpose does not convert")
        o_order, ld_out = _matrix(to, "out", "transpose")
        if o_order != "row":
            raise _invalid(f"out: strides {to.strides} are column-major; transpose writes row-major output")
        stride_out = _batch_of(to, "out")[1]
    device = _device_of([tx, to])
    problem = {"dtype": tx.dtype, "rows": rows, "cols": cols, "ld_in": ld_in, "ld_out": ld_out,
               "batch": batch, "stride_in": stride_in, "stride_out": stride_out}
    return device, problem, tx, to, out


# --- GPU operations -------------------------------------------------------------------------------

def gemm(a, b, out=None, alpha=1.0, beta=0.0, *, out_dtype=None, stream=None, config=None):
    """``out = alpha * a @ b + beta * out`` on the GPU; returns ``out``.

    Args:
        a: M x K (or batch x M x K) tensor, f32, f16 or bf16; row- or column-major with any pitch
            (transposed views included).
        b: K x N (or batch x K x N), the same dtype.
        out: M x N (or batch x M x N) result, row- or column-major; allocated through a's framework
            (torch.empty, cupy.empty) when not given.
        alpha, beta: scalars; beta != 0 needs ``out``.
        out_dtype: dtype of a new ``out`` (f16/bf16 inputs: f16, bf16 or f32; f32 inputs: f32);
            default the inputs' dtype.
        stream: CUDA stream (int handle, torch.cuda.Stream, CuPy stream); default the framework's
            current stream on the tensors' device.
        config: a GEMM config string (as ``swz gen gemm`` prints) instead of the tuned/default one.

    Raises:
        InvalidArgumentError, UnsupportedError, NoDeviceError, ... (all swzjit.Error).
    """
    device, problem, ta, tb, tc, out = _gemm_setup(a, b, out, alpha, beta, out_dtype, allocate=True)
    handle = _stream(stream, ta)
    _swzjit.gemm(_native_device(device), problem, ta.ptr, tb.ptr, tc.ptr, float(alpha), float(beta), handle,
                 config or "")
    return out


def gemm_config(a, b, out=None, *, out_dtype=None):
    """The config string :func:`gemm` would run for these tensors (the cached tuned winner, else the
    default; with policy "tune_on_miss" a miss tunes first)."""
    device, problem, ta, tb, _tc, _out = _gemm_setup(a, b, out, 1.0, 0.0, out_dtype, allocate=False)
    return _swzjit.gemm_config(_native_device(device), problem, ta.ptr, tb.ptr)


def transpose(x, out=None, *, stream=None, config=None):
    """``out = x.T`` (each matrix of a batch transposed) on the GPU; returns ``out``.

    Args:
        x: R x C (or batch x R x C) row-major tensor with any row pitch, f32, f16 or bf16.
        out: C x R (or batch x C x R) row-major result; allocated through x's framework when not given.
        stream: as for :func:`gemm`.
        config: a transpose config string instead of the tuned/default one.
    """
    device, problem, tx, to, out = _transpose_setup(x, out, allocate=True)
    handle = _stream(stream, tx)
    _swzjit.transpose(_native_device(device), problem, tx.ptr, to.ptr, handle, config or "")
    return out


def transpose_config(x, out=None):
    """The config string :func:`transpose` would run for these tensors."""
    device, problem, tx, to, _out = _transpose_setup(x, out, allocate=False)
    return _swzjit.transpose_config(_native_device(device), problem, tx.ptr, to.ptr if to is not None else 0)


def counters(device=0):
    """Event counts of the engine for ``device`` under the current settings (compiles, launches,
    tuned hits and misses, cache hits, ...)."""
    return _swzjit.counters(int(device))


from ._api import autotune, bank, cache_ls, cache_stats, device_count, driver_available, layout, solve, swz_path  # noqa: E402,F401
from ._family import Family, family, family_names, register_family  # noqa: E402,F401
