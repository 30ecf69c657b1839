# swzjit: the autotuner, cache inspection and the CPU-only analysis API (layout, bank, solve) on
# plain Python values; re-exported by swzjit/__init__.py.
"""Autotuning, cache inspection and shared-memory analysis for swzjit."""

import os

from . import _swzjit
from ._errors import _invalid

_TUNE_OPTIONS = ("max_candidates", "max_seconds", "keep_conflicted", "compile_only", "arch", "compile_threads",
                 "candidate_timeout_s", "retime_top", "extra_configs")
_GEMM_FIELDS = ("dtype", "out_dtype", "m", "n", "k", "a_order", "b_order", "c_order", "lda", "ldb", "ldc",
                "batch", "stride_a", "stride_b", "stride_c")
_TRANSPOSE_FIELDS = ("dtype", "rows", "cols", "ld_in", "ld_out", "batch", "stride_in", "stride_out")


def autotune(op, *, device=None, layout=None, a=None, b=None, x=None, out=None, **kwargs):
    """Autotunes one problem, stores the winner in the cache (where :func:`gemm`, :func:`transpose`
    and the C++ ``swz`` tool find it) and returns the tuner's report as a dict.

    The problem is given either by tensors (``a=, b=[, out=]`` for "gemm", ``x=[, out=]`` for
    "transpose": exactly what the call with them would run) or by fields:

    - "gemm": m, n, k, dtype ("f32", "f16", "bf16"), out_dtype, layout ("NN", "NT", "TN", "TT": A then
      B, N = row-major, T = column-major) or a_order/b_order ("row"/"col"), c_order, lda, ldb, ldc
      (0 = packed), batch, stride_a, stride_b, stride_c.
    - "transpose": rows, cols, dtype, ld_in, ld_out, batch, stride_in, stride_out.
    - a declared family's name (``swzjit.family_names()``): ``problem=`` a dict or "D=V,..." text
      (the same as ``swzjit.family(name).autotune(problem, ...)``).

    Tuning options: max_candidates, max_seconds, keep_conflicted, compile_only with arch (fills the
    kernel cache without a GPU, e.g. arch="sm_90"), compile_threads, candidate_timeout_s,
    retime_top, extra_configs. ``device`` defaults to the tensors' device, else 0.

    Returns:
        dict with problem, winner, winner_ms, winner_gbps / winner_tflops, default_config,
        default_ms, candidates (config, status, reason, median_ms, ..., retime_ms: the final re-time's
        median, which the winner is chosen on, 0 where not re-timed; the re-timed come first), compiled,
        benchmarked, reused, seconds, arch, device, ...
    """
    from . import _gemm_setup, _transpose_setup  # the same tensor reading as the calls themselves
    if op not in ("gemm", "transpose") and isinstance(op, str) and _swzjit.family_exists(op):
        # A declared family: autotune("rowsum", problem={"batch": 2, ...}, **options).
        from ._family import Family
        if a is not None or b is not None or x is not None or out is not None or layout is not None:
            raise _invalid(f"autotune: family {op!r} takes problem= (a dict or 'D=V,...' text), not tensors")
        if "problem" not in kwargs:
            raise _invalid(f"autotune: family {op!r} needs problem= (a dict or 'D=V,...' text)")
        problem = kwargs.pop("problem")
        return Family(op).autotune(problem, device=device, **kwargs)
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in _TUNE_OPTIONS}
    if op == "gemm":
        fields = _GEMM_FIELDS
    elif op == "transpose":
        fields = _TRANSPOSE_FIELDS
    else:
        raise _invalid(f"op: {op!r} is not a kernel family; use 'gemm', 'transpose' or a declared family "
                       f"({', '.join(_swzjit.family_names())})")
    unknown = sorted(set(kwargs) - set(fields))
    if unknown:
        raise _invalid(f"autotune: unknown argument(s) {', '.join(unknown)} for {op!r}; problem fields are "
                       f"{', '.join(fields)} and options {', '.join(_TUNE_OPTIONS)}")
    if op == "gemm" and (a is not None or b is not None):
        if a is None or b is None or kwargs or layout is not None:
            raise _invalid("autotune: give the GEMM as tensors a= and b= (and out=) or as fields, not both")
        tensor_device, problem, *_ = _gemm_setup(a, b, out, 1.0, 0.0, None, allocate=False)
    elif op == "transpose" and x is not None:
        if kwargs:
            raise _invalid("autotune: give the transpose as a tensor x= (and out=) or as fields, not both")
        tensor_device, problem, *_ = _transpose_setup(x, out, allocate=False)
    else:
        if a is not None or b is not None or x is not None or out is not None:
            raise _invalid(f"autotune: tensors for {op!r} are " + ("a=, b=, out=" if op == "gemm" else "x=, out="))
        problem = dict(kwargs)
        tensor_device = None
        if layout is not None:
            if op != "gemm":
                raise _invalid("layout: applies to 'gemm' only")
            if str(layout) not in ("NN", "NT", "TN", "TT") or "a_order" in kwargs or "b_order" in kwargs:
                raise _invalid(f"layout: {layout!r}; use NN, NT, TN or TT (or a_order/b_order, not both)")
            problem["a_order"] = "row" if layout[0] == "N" else "col"
            problem["b_order"] = "row" if layout[1] == "N" else "col"
        for key in problem:
            if key not in ("dtype", "out_dtype", "a_order", "b_order", "c_order"):
                problem[key] = _int(problem[key], key)
    if device is None:
        device = tensor_device
        if device is None:  # fields only: GPU 0, as `swz autotune`; tensors of the current device: that one
            device = _swzjit.current_device() if (a is not None or x is not None) else 0
    return _swzjit.autotune(op, int(device), problem, options)


def _int(value, name):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise _invalid(f"{name}: {value!r} is not an integer")
    return value.__index__()


def _cache_dir(cache_dir):
    return os.fspath(cache_dir) if cache_dir else ""


def cache_stats(cache_dir=None):
    """Where the cache is and what it holds (kernel_entries, kernel_bytes, tuning_problems,
    candidates, winners, file_bytes, mode, ...). ``cache_dir`` defaults to the configured one."""
    return _swzjit.cache_stats(_cache_dir(cache_dir))


def cache_ls(cache_dir=None):
    """The cache's contents: {"kernels": [...], "tuning": [...]} as ``swz cache ls`` lists them
    (kernels most recently used first; tuning problems with their winners by search space)."""
    return _swzjit.cache_ls(_cache_dir(cache_dir))


def _swizzle(swizzle):
    if isinstance(swizzle, str):
        parts = swizzle.replace("Sw<", "").replace(">", "").split(",")
    else:
        parts = list(swizzle)
    if len(parts) != 3:
        raise _invalid(f"swizzle: {swizzle!r}; give (B, M, S) or 'B,M,S', e.g. (3, 3, 3)")
    try:
        return tuple(int(p) for p in parts)
    except (TypeError, ValueError):
        raise _invalid(f"swizzle: {swizzle!r}; B, M and S must be integers") from None


def layout(swizzle, shape, order="row", stride=None, format="offsets", elem_bytes=4):
    """The offsets of composition(Swizzle<B,M,S>, layout) (CuTe semantics).

    Args:
        swizzle: (B, M, S) or "B,M,S"; (0, 0, 0) is the identity.
        shape: (rows, cols).
        order: "row" or "col" (ignored when ``stride`` is given).
        stride: (row stride, column stride) in elements.
        format: "offsets" (list of rows of ints), "text", "csv" or "svg" (cells coloured by the
            4-byte bank of offset * elem_bytes).
    """
    b, m, s = _swizzle(swizzle)
    try:
        rows, cols = (int(v) for v in shape)
    except (TypeError, ValueError):
        raise _invalid(f"shape: {shape!r}; give (rows, cols)") from None
    if stride is not None:
        try:
            sr, sc = (int(v) for v in stride)
        except (TypeError, ValueError):
            raise _invalid(f"stride: {stride!r}; give (row stride, column stride)") from None
    elif order == "row":
        sr, sc = cols, 1
    elif order == "col":
        sr, sc = 1, rows
    else:
        raise _invalid(f"order: {order!r}; use 'row' or 'col'")
    if format == "offsets":
        return _swzjit.layout_offsets(b, m, s, rows, cols, sr, sc)
    return _swzjit.layout_format(b, m, s, rows, cols, sr, sc, str(format), int(elem_bytes))


def bank(op, addresses, width=None):
    """The bank model's cost of one warp-wide shared-memory instruction.

    Args:
        op: "lds", "sts", "ldmatrix.x1", "ldmatrix.x2" or "ldmatrix.x4".
        addresses: byte address of each active lane, in lane order (at most 32).
        width: bytes per lane (default 4 for lds/sts, 16 for ldmatrix).

    Returns:
        dict: wavefronts, ideal_wavefronts, excess_wavefronts, max_way and per-phase costs.
    """
    return _swzjit.bank(str(op), [_int(a, "addresses") for a in addresses], 0 if width is None else _int(width, "width"))


def solve(rows, row_bytes, patterns, elem_bytes=4, allow_negative_shift=True, allow_composition=True, max_bits=5):
    """The cheapest XOR swizzle (or composition of two) making every access pattern conflict-free
    on a row-major shared-memory tile of ``rows`` rows of ``row_bytes`` bytes.

    Args:
        patterns: names such as "store:16", "load:8", "colread", "tstore:4", "ldmatrix",
            "ldmatrix.trans", "ldmatrix.flat" (a list, or one comma-separated string).

    Returns:
        dict: status ("identity", "found" or "not_found"), swizzles [(B, M, S), ...] in
        application order, swizzle_names, patterns (costs before and after), search counts.
    """
    if isinstance(patterns, str):
        patterns = [p.strip() for p in patterns.split(",") if p.strip()]
    return _swzjit.solve(_int(rows, "rows"), _int(row_bytes, "row_bytes"), _int(elem_bytes, "elem_bytes"),
                         [str(p) for p in patterns], bool(allow_negative_shift), bool(allow_composition),
                         _int(max_bits, "max_bits"))


def device_count():
    """Number of CUDA devices (raises NoDeviceError without a driver)."""
    return _swzjit.device_count()


def driver_available():
    """(True, "") when the CUDA driver can be loaded, else (False, why)."""
    return tuple(_swzjit.driver_available())


def swz_path():
    """Path of the ``swz`` command-line tool shipped in the wheel (None in a build-tree import)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "swz")
    return path if os.access(path, os.X_OK) else None
