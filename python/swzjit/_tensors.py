# swzjit: reading GPU tensors (PyTorch, __cuda_array_interface__, DLPack) into address, shape, strides,
# dtype and device; finding the framework's current stream; allocating outputs through the framework.
"""Tensor protocols for swzjit: nothing here copies data or touches the host."""

import sys
from collections import namedtuple

from . import _swzjit
from ._errors import _invalid

# A described tensor: address, shape and strides (in elements), dtype ("f32", "f16", "bf16"),
# device ordinal, the framework's name ("torch", "cupy" or "other") and the object itself.
Tensor = namedtuple("Tensor", "ptr shape strides dtype device framework obj")

_TORCH_DTYPES = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16"}
_TYPESTR_DTYPES = {"<f4": "f32", "<f2": "f16", "=f4": "f32", "=f2": "f16"}
_ELEM_BYTES = {"f32": 4, "f16": 2, "bf16": 2}
_DLPACK_CUDA, _DLPACK_CUDA_MANAGED = 2, 13


def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr") and hasattr(x, "is_cuda")


def describe(x, name):
    """Describes the GPU tensor `x` (argument `name` in messages) without copying it."""
    if _is_torch(x):
        if not x.is_cuda:
            raise _invalid(f"{name}: a tensor on {x.device}; swzjit runs on CUDA tensors (move it with .cuda())")
        dtype = _TORCH_DTYPES.get(str(x.dtype))
        if dtype is None:
            raise _invalid(f"{name}: dtype {x.dtype} is not supported; use torch.float32, float16 or bfloat16")
        return Tensor(x.data_ptr(), tuple(x.shape), tuple(x.stride()), dtype, x.device.index or 0, "torch", x)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        return _describe_cai(x, cai, name)
    if hasattr(x, "__dlpack__"):
        return _describe_dlpack(x, name)
    raise _invalid(f"{name}: {type(x).__name__} is not a GPU tensor; pass a PyTorch, CuPy or JAX array "
                   "(anything with __cuda_array_interface__ or __dlpack__)")


def _describe_cai(x, cai, name):
    if not isinstance(cai, dict):
        raise _invalid(f"{name}: __cuda_array_interface__ must be a dict, got {type(cai).__name__}")
    try:
        shape = tuple(int(s) for s in cai["shape"])
        typestr = str(cai["typestr"])
        ptr, _readonly = cai["data"]
        ptr = int(ptr)
    except (KeyError, TypeError, ValueError) as e:
        raise _invalid(f"{name}: malformed __cuda_array_interface__ ({e!r}): it needs shape, typestr and "
                       "data = (address, read_only)") from None
    dtype = _TYPESTR_DTYPES.get(typestr)
    if dtype is None:
        raise _invalid(f"{name}: typestr {typestr!r} is not supported; use '<f4' (float32) or '<f2' (float16) "
                       "(bfloat16 tensors: pass them through PyTorch or DLPack)")
    if cai.get("mask") is not None:
        raise _invalid(f"{name}: masked arrays are not supported")
    if ptr < 0:
        raise _invalid(f"{name}: negative data address {ptr}")
    strides = cai.get("strides")
    if strides is None:
        strides = _packed_strides(shape)
    else:
        size = _ELEM_BYTES[dtype]
        strides = tuple(int(s) for s in strides)
        if len(strides) != len(shape) or any(s % size for s in strides):
            raise _invalid(f"{name}: strides {strides} (bytes) must be one per dimension and multiples of the "
                           f"element size {size}")
        strides = tuple(s // size for s in strides)
    # The interface names no device: CuPy arrays carry one; otherwise the device is the current one,
    # asked for only when the call runs (so bad arguments are reported first, also without a GPU).
    device = getattr(getattr(x, "device", None), "id", None)
    if not isinstance(device, int):
        device = None
    framework = "cupy" if type(x).__module__.startswith("cupy") else "other"
    return Tensor(ptr, shape, strides, dtype, device, framework, x)


def _describe_dlpack(x, name):
    dev = getattr(x, "__dlpack_device__", None)
    if dev is not None:
        kind, _ = dev()
        if int(kind) not in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
            raise _invalid(f"{name}: a DLPack tensor on device type {int(kind)} (not CUDA); swzjit runs on GPU "
                           "tensors: move it to the GPU first")
    try:
        d = _swzjit.dlpack_describe(x)
    except TypeError:  # nanobind: the object's __dlpack__ failed or gave no usable capsule
        raise _invalid(f"{name}: {type(x).__name__} could not be exported through DLPack (__dlpack__ failed)") from None
    if d["device_type"] not in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
        raise _invalid(f"{name}: a DLPack tensor on device type {d['device_type']} (not CUDA)")
    code, bits, lanes = d["dtype_code"], d["dtype_bits"], d["dtype_lanes"]
    dtype = {(2, 32): "f32", (2, 16): "f16", (4, 16): "bf16"}.get((code, bits)) if lanes == 1 else None
    if dtype is None:
        raise _invalid(f"{name}: DLPack dtype (code {code}, {bits} bits, {lanes} lanes) is not supported; "
                       "use float32, float16 or bfloat16")
    return Tensor(d["ptr"], d["shape"], d["strides"], dtype, d["device_id"], "other", x)


def _packed_strides(shape):
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(int(s), 1)
    return tuple(reversed(strides))


def stream_handle(stream, t):
    """The CUstream to run on: `stream` when given (an int handle, a torch.cuda.Stream, a CuPy stream
    or any object with __cuda_stream__), else the current stream of the tensor's framework on its
    device (PyTorch's when torch is imported), else the legacy default stream (0)."""
    if stream is not None:
        return _stream_from_object(stream)
    if t.framework == "cupy":
        import cupy
        with cupy.cuda.Device(t.device):
            return int(cupy.cuda.get_current_stream().ptr)
    torch = sys.modules.get("torch")  # a PyTorch tensor, or any tensor while PyTorch is in use
    if torch is not None and torch.cuda.is_available():
        return int(torch.cuda.current_stream(t.device).cuda_stream)
    return 0


def _stream_from_object(stream):
    if isinstance(stream, bool):
        raise _invalid("stream: a bool is not a CUDA stream")
    if isinstance(stream, int):
        if stream < 0:
            raise _invalid(f"stream: {stream} is not a stream handle")
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        _version, handle = proto() if callable(proto) else proto
        return int(handle)
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    raise _invalid(f"stream: {type(stream).__name__} is not a CUDA stream; pass an int handle, a "
                   "torch.cuda.Stream or a CuPy stream")


_TORCH_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def device_of(tensors):
    """The one device of the described tensors (None: only ones whose device is the current one)."""
    known = {t.device for t in tensors if t is not None and t.device is not None}
    if len(known) > 1:
        raise _invalid(f"tensors are on different devices {sorted(known)}; put them on one GPU")
    return known.pop() if known else None


def native_device(device):
    return device if device is not None else _swzjit.current_device()


def empty_like_framework(t, shape, dtype, device):
    """A new uninitialized `dtype` tensor of `shape` on `device` (None: the current one), from t's
    framework (PyTorch or CuPy; for other frameworks from whichever of the two is importable)."""
    framework = t.framework
    if framework == "other":
        if "torch" in sys.modules or _importable("torch"):
            framework = "torch"
        elif "cupy" in sys.modules or _importable("cupy"):
            framework = "cupy"
        else:
            raise _invalid("out: cannot allocate the result for a tensor of this framework; pass out=")
    if framework == "torch":
        import torch
        where = "cuda" if device is None else f"cuda:{device}"
        return torch.empty(shape, dtype=getattr(torch, _TORCH_NAMES[dtype]), device=where)
    import cupy
    if dtype == "bf16":
        raise _invalid("out: CuPy has no bfloat16 arrays; pass out= (e.g. a PyTorch tensor)")
    with cupy.cuda.Device(device if device is not None else cupy.cuda.Device().id):
        return cupy.empty(shape, dtype=cupy.float32 if dtype == "f32" else cupy.float16)


def _importable(module):
    import importlib.util
    return importlib.util.find_spec(module) is not None
