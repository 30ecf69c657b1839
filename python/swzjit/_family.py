# swzjit: declared kernel families (include/swzjit/family.hpp) from Python — register a .family text or
# file, query a family's space, defaults, bank analysis, source and NVRTC compile, run it on framework
# tensors and tune it. Re-exported by swzjit/__init__.py as Family, register_family, family, family_names.
"""Declared kernel families: your own CUDA template, described by the ``.family`` text format."""

import os

from . import _swzjit
from ._errors import _invalid
from ._tensors import (describe as _describe, device_of as _device_of, empty_like_framework as _empty,
                       native_device as _native_device, stream_handle as _stream)


def _int(value, name):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise _invalid(f"{name}: {value!r} is not an integer")
    return value.__index__()


def _values_text(values, what):
    """A problem or config as the library's "K=V,..." text: a dict {name: int}, a text, or None ("")."""
    if values is None:
        return ""
    if isinstance(values, str):
        return values.strip()
    if isinstance(values, dict):
        parts = []
        for key, value in values.items():
            if not isinstance(key, str):
                raise _invalid(f"{what}: key {key!r} is not a name")
            parts.append(f"{key}={_int(value, f'{what} {key}')}")
        return ",".join(parts)
    raise _invalid(f"{what}: {type(values).__name__} given; pass a dict {{name: int}} or a text 'A=1,B=2'")


def _with_device(problem, sm_count, dram_gbps):
    """The problem's text with the device's SM count and DRAM bandwidth (GB/s) added where given: the
    reserved problem values sm_count and dram_gbps a program family's default and space may read."""
    text = _values_text(problem, "problem")
    named = {part.split("=", 1)[0].strip() for part in text.split(",") if "=" in part}
    extra = []
    for key, value, low in (("sm_count", sm_count, 1), ("dram_gbps", dram_gbps, 0)):
        if value is None:
            continue
        if key in named:
            raise _invalid(f"problem: {key} is given twice, in the problem and as an argument; give it once")
        number = _int(value, key)
        if number < low:
            raise _invalid(f"{key}: {number} is below {low}" + (" (0: not known)" if key == "dram_gbps" else ""))
        extra.append(f"{key}={number}")
    return ",".join([text] + extra if text else extra)


def _scalars(values):
    """A run's scalar values: a dict {name: real number}, or None (every scalar at its default)."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise _invalid(f"scalars: {type(values).__name__} given; pass a dict {{name: number}}, e.g. {{'alpha': 2.0}}")
    out = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise _invalid(f"scalars: key {key!r} is not a name")
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
            raise _invalid(f"scalars {key}: {value!r} is not a number")
        out[key] = float(value)  # names and finiteness are checked by the library (its own message)
    return out


class Family:
    """A registered kernel family (the built-in ``rowsum``, or one from :func:`register_family`).

    Problems are dicts ``{"rows": 1000, ...}`` or texts ``"rows=1000,cols=64,batch=2"`` (every dim once);
    configurations are dicts ``{"BLOCK_ROWS": 64}`` or texts ``"BLOCK_ROWS=64"`` (params not named take
    their default). Methods taking ``config=None`` use the problem's default configuration.
    """

    def __init__(self, name):
        if not isinstance(name, str):
            raise _invalid(f"family: {name!r} is not a family name")
        self._info = _swzjit.family_info(name)  # raises InvalidArgumentError listing the registered names
        self._name = self._info["name"]

    def __repr__(self):
        return f"swzjit.Family({self._name!r})"

    def __eq__(self, other):
        return isinstance(other, Family) and other._info["definition_hash"] == self._info["definition_hash"]

    def __hash__(self):
        return hash(self._info["definition_hash"])

    # --- the definition ------------------------------------------------------------------------

    @property
    def name(self):
        """The family's name (a lowercase identifier)."""
        return self._name

    @property
    def about(self):
        return self._info["about"]

    @property
    def dims(self):
        """The problem's dimension names, in declaration order."""
        return list(self._info["dims"])

    @property
    def scalars(self):
        """The float values a run takes (a GEMM's alpha, beta), with the defaults tuning uses: {name: default}."""
        return {sc["name"]: sc["default"] for sc in self._info["scalars"]}

    @property
    def params(self):
        """The tunable parameters, in order: {name: {"values": [...], "default": value}}."""
        return {p["name"]: {"values": list(p["values"]), "default": p["default"]} for p in self._info["params"]}

    @property
    def buffers(self):
        """The buffers a launch takes, in order: [{"name", "dtype", "elements", "role"}, ...]."""
        return [dict(b) for b in self._info["buffers"]]

    @property
    def constraints(self):
        return list(self._info["constraints"])

    @property
    def text(self):
        """The definition in the .family text form (source inline after ``--- source``)."""
        return self._info["text"]

    @property
    def definition_hash(self):
        """Hash of the whole definition: a tuned winner is valid only for exactly this definition."""
        return self._info["definition_hash"]

    @property
    def info(self):
        """Everything above as one dict (also tolerance, min_arch, source_name, has_reference, ...)."""
        return dict(self._info)

    # --- CPU-side queries ----------------------------------------------------------------------

    def problem(self, problem):
        """The problem as a dict, checked (every dim given once, each >= 0)."""
        return _swzjit.family_problem(self._name, _values_text(problem, "problem"))

    def problem_text(self, problem):
        """The canonical problem text (dims in declaration order), as the tuning cache keys it."""
        return _swzjit.family_problem_text(self._name, _values_text(problem, "problem"))

    def config(self, config=None):
        """The configuration as a dict (params not given take their default)."""
        return _swzjit.family_config(self._name, _values_text(config, "config"))

    def config_text(self, config=None):
        """The canonical configuration text, e.g. "BLOCK_ROWS=64,LAYOUT=1" (None: the params' defaults)."""
        return _swzjit.family_config_text(self._name, _values_text(config, "config"))

    def check_config(self, config, problem):
        """"" when ``config`` is a point of the space satisfying every requirement for ``problem``, else why not."""
        return _swzjit.family_check_config(self._name, _values_text(config, "config"),
                                           _values_text(problem, "problem"))

    def default_config(self, problem, sm_count=None, dram_gbps=None):
        """The configuration used without tuning: the params' defaults when they fit the problem, else
        the first configuration of :meth:`space`. Raises UnsupportedError when none fits.
        ``sm_count`` / ``dram_gbps``: the device the choice is for, as the engine passes its own (a
        program family may read them: the Hopper GEMM's default for skinny problems follows the DRAM
        bandwidth per SM; ``swzjit.device_info()`` gives both). None: not known, unless the problem
        names them."""
        return _swzjit.family_default_config(self._name, _with_device(problem, sm_count, dram_gbps))

    def space(self, problem, sm_count=None, dram_gbps=None):
        """Every configuration satisfying the requirements for ``problem``, in the tuner's order
        (``sm_count`` / ``dram_gbps`` as for :meth:`default_config`)."""
        return _swzjit.family_space(self._name, _with_device(problem, sm_count, dram_gbps))

    def launch(self, problem, config=None, sm_count=1):
        """The evaluated launch: name_expression, grid, block, threads, dynamic_smem, buffer_elements
        (in buffer order) and the reference's launch. ``sm_count``: the SM count a grid that reads
        ``sm_count`` is evaluated for (the engine uses its device's)."""
        return _swzjit.family_launch(self._name, _values_text(problem, "problem"), _values_text(config, "config"),
                                     int(sm_count))

    def analyze(self, problem=None, config=None):
        """Static bank analysis of a configuration's shared-memory instructions (the bank model).

        Returns a dict: analysed (False when the family gives no shared-memory access map), instructions,
        wavefronts, ideal_wavefronts, excess_wavefronts (0: conflict-free), conflict_free and
        per_instruction costs. Without ``config``: the problem's default, or the params' defaults.
        """
        return _swzjit.family_analyze(self._name, _values_text(config, "config"), _values_text(problem, "problem"))

    def source(self, problem=None, config=None):
        """The CUDA source NVRTC compiles for a configuration, after a comment line naming the
        instantiation (as ``swz gen FAMILY`` prints it)."""
        return _swzjit.family_source(self._name, _values_text(config, "config"), _values_text(problem, "problem"))

    def compile(self, problem=None, config=None, *, arch=None):
        """Compiles a configuration with NVRTC (no GPU needed when ``arch`` is given, e.g. "sm_90").

        Returns the fields of ``swz compile FAMILY --json``: config, arch, format ("cubin" or "ptx"),
        image_bytes, registers, static_smem_bytes, local_bytes (spills and local arrays), code_bytes (machine code),
        lowered_name, compile_ms, options, log. Raises CompileError (with compile_log) when NVRTC rejects the source,
        UnsupportedError below the family's min_arch.
        """
        return _swzjit.family_compile(self._name, _values_text(config, "config"), _values_text(problem, "problem"),
                                      "" if arch is None else str(arch))

    # --- GPU side ------------------------------------------------------------------------------

    def autotune(self, problem, *, device=None, **options):
        """Tunes ``problem`` (candidates checked against the family's reference in the isolated worker),
        stores the winner in the cache and returns the tuner's report as a dict (as
        :func:`swzjit.autotune`). Options: max_candidates, max_seconds, keep_conflicted, compile_only
        with arch (fills the kernel cache without a GPU), compile_threads, candidate_timeout_s,
        retime_top, extra_configs. ``device`` defaults to 0 (compile_only) or the current device.
        """
        from ._api import _TUNE_OPTIONS
        unknown = sorted(set(options) - set(_TUNE_OPTIONS))
        if unknown:
            raise _invalid(f"autotune: unknown option(s) {', '.join(unknown)}; options are {', '.join(_TUNE_OPTIONS)}")
        if "extra_configs" in options and options["extra_configs"] is not None:
            options["extra_configs"] = [self.config_text(c) for c in options["extra_configs"]]
        if device is None:
            device = 0 if options.get("compile_only") else _swzjit.current_device()
        return _swzjit.family_autotune(self._name, _int(device, "device"), _values_text(problem, "problem"), options)

    def tuned_config(self, problem, *, device=None):
        """The configuration :meth:`run` would use on ``device`` (default: the current one): the cached
        winner for this exact definition, else (policy "tune_on_miss") a fresh tune, else the default."""
        device = _swzjit.current_device() if device is None else _int(device, "device")
        return _swzjit.family_engine_config(self._name, device, _values_text(problem, "problem"))

    def run(self, problem, *buffers, config=None, stream=None, scalars=None, **named):
        """Launches the family's kernel on ``problem``; returns its output tensors (one tensor, or a tuple).

        Buffers are GPU tensors (PyTorch, CuPy, anything with ``__cuda_array_interface__`` or DLPack),
        positionally in the order of :attr:`buffers` or by name; each must be packed (contiguous), of the
        buffer's dtype and hold exactly its element count. Outputs left out are allocated through the
        inputs' framework as 1-D tensors. Runs on ``stream`` (default: the framework's current stream
        on the tensors' device) without synchronizing. ``config`` overrides the engine's choice (the
        cached tuned winner, else the default). ``scalars`` gives the family's float values by name
        (``{"alpha": 2.0, "beta": 0.5}``); those not given take their defaults (:attr:`scalars`). They
        are not part of the tuning key: one tuned winner serves every value. An ``inout`` buffer is
        passed like an input and returned like an output, holding the result.
        """
        return self._launch(problem, buffers, named, config, stream, scalars, reference=False)

    def run_reference(self, problem, *buffers, stream=None, scalars=None, **named):
        """Launches the family's trusted reference kernel (what tuning compares with); as :meth:`run`."""
        if not self._info["has_reference"]:
            raise _invalid(f"{self._name}: the family declares no reference kernel")
        return self._launch(problem, buffers, named, None, stream, scalars, reference=True)

    def _launch(self, problem, buffers, named, config, stream, scalars, reference):
        ptext = _values_text(problem, "problem")
        values = _scalars(scalars)
        defs = self._info["buffers"]
        names = [b["name"] for b in defs]
        if len(buffers) > len(defs):
            raise _invalid(f"{self._name}: {len(buffers)} buffers given; the family takes {len(defs)} "
                           f"({', '.join(names)})")
        given = dict(zip(names, buffers))
        for key, value in named.items():
            if key not in names:
                raise _invalid(f"{key}: not a buffer of {self._name}; its buffers are {', '.join(names)}")
            if key in given:
                raise _invalid(f"{key}: given both by position and by name")
            given[key] = value
        # An inout buffer is read before it is written: like an input, the caller must pass it.
        missing = [b["name"] for b in defs if b["role"] in ("input", "inout") and given.get(b["name"]) is None]
        if missing:
            raise _invalid(f"{self._name}: input or inout buffer(s) {', '.join(missing)} missing; buffers are "
                           f"{', '.join(names)} in this order")
        elements = _swzjit.family_buffer_elements(self._name, ptext)
        described = {}
        for b, n in zip(defs, elements):
            if given.get(b["name"]) is not None:
                described[b["name"]] = _check_buffer(_describe(given[b["name"]], b["name"]), b, n)
        device = _device_of(list(described.values()))
        first = next(iter(described.values()), None)
        for b, n in zip(defs, elements):
            if b["role"] == "scratch":  # placed by the engine
                continue
            if b["name"] not in described:  # an output to allocate
                if first is None:
                    raise _invalid(f"{b['name']}: cannot allocate an output without any tensor given; pass it")
                given[b["name"]] = _empty(first, (max(n, 0),), b["dtype"], device)
                described[b["name"]] = _describe(given[b["name"]], b["name"])
        handle = _stream(stream, first)
        pointers = {name: t.ptr for name, t in described.items()}
        _swzjit.family_run(self._name, _native_device(device), ptext, pointers, handle,
                           _values_text(config, "config"), reference, values)
        outs = tuple(given[b["name"]] for b in defs if b["role"] in ("output", "inout"))
        return outs[0] if len(outs) == 1 else outs


def _check_buffer(t, b, elements):
    name = b["name"]
    if t.dtype != b["dtype"]:
        raise _invalid(f"{name}: dtype {t.dtype}, but the family declares {b['dtype']}")
    numel = 1
    for s in t.shape:
        numel *= s
    if numel != elements:
        raise _invalid(f"{name}: {numel} elements (shape {tuple(t.shape)}); the problem needs {elements} "
                       f"({b['elements']})")
    step = 1
    for size, stride in reversed(list(zip(t.shape, t.strides))):
        if size > 1 and stride != step:
            raise _invalid(f"{name}: strides {tuple(t.strides)} for shape {tuple(t.shape)} are not packed; "
                           "family buffers are dense (pass a .contiguous() copy)")
        step *= size
    return t


def _access_map(fn):
    """Wraps a user's shared-memory access map into the form the extension reads: config dict ->
    [(op, width, [byte addresses])]; instructions may be given as tuples (op, addresses[, width]) or
    dicts {"op", "addresses", "width"}."""
    if not callable(fn):
        raise _invalid(f"smem_accesses: {type(fn).__name__} is not callable; pass a function config -> instructions")

    def wrapped(config):
        out = []
        for i, ins in enumerate(fn(dict(config))):
            if isinstance(ins, dict):
                op, addresses, width = ins.get("op"), ins.get("addresses"), ins.get("width")
            elif isinstance(ins, (tuple, list)) and len(ins) in (2, 3):
                op, addresses, width = ins[0], ins[1], ins[2] if len(ins) == 3 else None
            else:
                raise _invalid(f"smem_accesses: instruction {i} is {ins!r}; give (op, addresses[, width]) or a dict")
            out.append((str(op), 0 if width is None else _int(width, "width"),
                        [_int(a, "addresses") for a in addresses]))
        return out

    return wrapped


def register_family(text=None, *, path=None, base_dir=None, smem_accesses=None):
    """Registers a kernel family for this process from its .family text form and returns it.

    Args:
        text: the definition (``family = NAME``, ``dims``, ``param``, ``buffer``, ``kernel``, ``grid``,
            ``block``, ``reference``, ... see docs/ARCHITECTURE.md, "Families"), the CUDA source inline after
            a line ``--- source`` or named by ``source = FILE``.
        path: a .family file instead of ``text`` (``source = FILE`` relative to it).
        base_dir: the folder ``source = FILE`` is relative to for ``text`` (default: the current one).
        smem_accesses: optional ``f(config: dict) -> [(op, addresses, width), ...]``: the shared-memory
            instructions one warp issues ("lds", "sts", "ldmatrix.x4", ...; byte addresses per lane),
            so :meth:`Family.analyze` and the tuner can see bank conflicts (tuning leaves conflicted
            configurations out). It runs in this process and takes the GIL.

    Registering text equal to a registered family's returns that family; another definition under a
    taken name raises InvalidArgumentError, as does an invalid definition (the message names the line).
    """
    if (text is None) == (path is None):
        raise _invalid("register_family: give the definition as text= or as path= (one of them)")
    fn = None if smem_accesses is None else _access_map(smem_accesses)
    if path is not None:
        name = _swzjit.family_register_file(os.fspath(path), fn)
    else:
        if not isinstance(text, str):
            raise _invalid(f"text: {type(text).__name__} given; pass the .family text as a str (or path=)")
        base = os.fspath(base_dir) if base_dir is not None else os.getcwd()
        name = _swzjit.family_register_text(text, base, fn)
    return Family(name)


def family(name):
    """The registered family ``name`` (raises InvalidArgumentError listing the registered names)."""
    return Family(name)


def family_names():
    """Names of the registered families (the built-in ones, e.g. "rowsum", and this process's own)."""
    return list(_swzjit.family_names())
