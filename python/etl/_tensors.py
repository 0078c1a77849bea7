"""What the runtime needs of an array: address, dtype, shape, device.

Accepts numpy arrays, torch tensors (CPU and CUDA), objects with
``__cuda_array_interface__`` (version 2 or 3: CuPy, Numba, ...) and any
object with ``__dlpack__`` (read through the DLPack capsule with ctypes).
Only C-contiguous tensors bind (the runtime has no strides yet); anything
else raises before the runtime is called.
"""
import ctypes

from . import errors

# The runtime's etlDType codes (etl.h), a copy of runtime/abi/etl_elems.def's
# (tests/unit/driver/facts_test.cpp checks every constant and NAMES against
# it). I4/U4 are packed two to a byte: no array library has them, so such a
# tensor cannot be bound from Python yet.
F32, F16, I32, I64, BF16 = 0, 1, 2, 3, 4
I8, U8, I16, U16, U32, I4, U4, F8E4M3, F8E5M2 = 6, 7, 8, 9, 10, 11, 12, 13, 14
NAMES = {F32: "f32", F16: "f16", I32: "i32", I64: "i64", BF16: "bf16", I8: "i8", U8: "u8",
         I16: "i16", U16: "u16", U32: "u32", I4: "i4", U4: "u4", F8E4M3: "f8e4m3",
         F8E5M2: "f8e5m2"}
_NUMPY = {"float32": F32, "float16": F16, "int32": I32, "int64": I64, "bfloat16": BF16,
          "int8": I8, "uint8": U8, "int16": I16, "uint16": U16, "uint32": U32}
_TORCH = {"torch.float32": F32, "torch.float16": F16, "torch.int32": I32, "torch.int64": I64,
          "torch.bfloat16": BF16, "torch.int8": I8, "torch.uint8": U8, "torch.int16": I16,
          "torch.uint16": U16, "torch.uint32": U32, "torch.float8_e4m3fn": F8E4M3,
          "torch.float8_e5m2": F8E5M2}
# DLPack: (type code, bits) -> dtype; device types
_DL = {(2, 32): F32, (2, 16): F16, (0, 32): I32, (0, 64): I64, (4, 16): BF16, (0, 8): I8,
       (1, 8): U8, (0, 16): I16, (1, 16): U16, (1, 32): U32}
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST = 1, 2, 3
# __cuda_array_interface__ typestr -> dtype (bfloat16 has no standard typestr)
_CAI = {"<f4": F32, "<f2": F16, "<i4": I32, "<i8": I64, "|i1": I8, "|u1": U8, "<i2": I16,
        "<u2": U16, "<u4": U32}


class View:
    """One argument as the runtime binds it."""

    def __init__(self, name, ptr, dtype, shape, device, device_index=0, keep=None, what="",
                 stream=None, read_only=None):
        self.name, self.ptr, self.dtype, self.shape = name, ptr, dtype, tuple(shape)
        self.device = device  # "cpu" | "cuda"
        self.device_index = device_index  # None: not known (__cuda_array_interface__)
        self.keep = keep  # the object (or DLPack capsule) that owns the memory
        self.what = what
        self.stream = stream  # __cuda_array_interface__ v3: the producer's stream, or None
        self.read_only = read_only  # why the memory must not be written (a phrase), or None


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_ptr.restype = ctypes.c_void_p
_capsule_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _layout_error(name, what):
    return errors.LayoutError(
        "tensor '%s': the %s is not C-contiguous; the runtime binds dense row-major tensors "
        "only (use .contiguous() / np.ascontiguousarray)" % (name, what))


def _from_numpy(name, a):
    dt = _NUMPY.get(a.dtype.name)
    if dt is None:
        raise errors.DTypeError("tensor '%s': numpy dtype %s is not an ETL element type "
                                "(float32, float16, bfloat16, int8 .. int64, uint8 .. uint32)" % (name, a.dtype))
    if not a.flags["C_CONTIGUOUS"]:
        raise _layout_error(name, "numpy array")
    return View(name, a.__array_interface__["data"][0], dt, a.shape, "cpu", keep=a,
                what="numpy array",
                read_only=None if a.flags.writeable else
                "read-only (a.flags.writeable is False: pass a writable copy, a.copy())")


def _from_torch(name, t):
    dt = _TORCH.get(str(t.dtype))
    if dt is None:
        raise errors.DTypeError("tensor '%s': torch dtype %s is not an ETL element type "
                                "(float32, float16, bfloat16, int8 .. int64, uint8 .. uint32)" % (name, t.dtype))
    if not t.is_contiguous():
        raise _layout_error(name, "torch tensor")
    dev = t.device.type
    if dev not in ("cpu", "cuda"):
        raise errors.DeviceMismatchError("tensor '%s' is on torch device '%s'; ETL runs on "
                                         "'cpu' (sim) and 'cuda'" % (name, t.device))
    return View(name, t.data_ptr(), dt, tuple(t.shape), dev, t.device.index or 0, keep=t,
                what="torch tensor",
                read_only="tracked by autograd (requires_grad is True), which would not see "
                "the program's write: pass t.detach() to write into its memory anyway"
                if t.requires_grad else None)


def _from_dlpack(name, obj, stream):
    kwargs = {}
    if stream is not None and hasattr(obj, "__dlpack_device__"):
        if obj.__dlpack_device__()[0] == _DL_CUDA:  # the producer orders its work before ours
            kwargs["stream"] = stream or 1  # DLPack: 1 is the legacy default stream (our NULL)
    cap = obj.__dlpack__(**kwargs)
    ptr = _capsule_ptr(cap, b"dltensor")
    if not ptr:
        raise errors.InvalidValueError("tensor '%s': __dlpack__ gave no DLPack tensor" % name)
    t = _DLTensor.from_address(ptr)  # DLManagedTensor starts with its DLTensor
    key = (t.dtype.code, t.dtype.bits)
    if key not in _DL or t.dtype.lanes != 1:
        raise errors.DTypeError("tensor '%s': DLPack dtype code %d, %d bits, %d lanes is not an "
                                "ETL element type" % (name, t.dtype.code, t.dtype.bits,
                                                      t.dtype.lanes))
    shape = [t.shape[i] for i in range(t.ndim)]
    if t.strides:
        expect = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and t.strides[i] != expect:
                raise _layout_error(name, "DLPack tensor")
            expect *= shape[i]
    kind = t.device.device_type
    if kind in (_DL_CPU, _DL_CUDA_HOST):
        dev = "cpu"
    elif kind == _DL_CUDA:
        dev = "cuda"
    else:
        raise errors.DeviceMismatchError("tensor '%s' is on DLPack device type %d; ETL runs on "
                                         "CPU memory (sim) and CUDA memory" % (name, kind))
    return View(name, (t.data or 0) + t.byte_offset, _DL[key], shape, dev, t.device.device_id,
                keep=cap, what="DLPack tensor")


def _from_cuda_array_interface(name, obj):
    cai = obj.__cuda_array_interface__
    if not isinstance(cai, dict) or not all(k in cai for k in ("shape", "typestr", "data")):
        raise errors.InvalidValueError("tensor '%s': __cuda_array_interface__ lacks shape, typestr "
                                       "or data" % name)
    if cai.get("mask") is not None:
        raise errors.LayoutError("tensor '%s': a masked __cuda_array_interface__ array cannot "
                                 "bind" % name)
    dt = _CAI.get(cai["typestr"])
    if dt is None:
        raise errors.DTypeError("tensor '%s': __cuda_array_interface__ typestr %r is not an ETL "
                                "element type (<f4, <f2, <i4, <i8)" % (name, cai["typestr"]))
    shape = tuple(int(d) for d in cai["shape"])
    strides = cai.get("strides")
    if strides is not None:
        expect = int(cai["typestr"][2:])
        for i in reversed(range(len(shape))):
            if shape[i] != 1 and strides[i] != expect:
                raise _layout_error(name, "__cuda_array_interface__ array")
            expect *= shape[i]
    return View(name, cai["data"][0] or 0, dt, shape, "cuda", None, keep=obj,
                what="__cuda_array_interface__ array", stream=cai.get("stream"),
                read_only="read-only (its data tuple's readonly flag is set)"
                if len(cai["data"]) > 1 and cai["data"][1] else None)


def view(name, obj, stream=None):
    """The View of `obj`, or an etl exception saying why it cannot bind.
    `stream`: the CUstream (int, 0 = NULL) a cuda program runs on, passed to
    a CUDA producer's ``__dlpack__``; None for sim."""
    mod = type(obj).__module__.split(".")[0]
    if mod == "numpy" and hasattr(obj, "__array_interface__") and hasattr(obj, "flags"):
        return _from_numpy(name, obj)
    if mod == "torch" and hasattr(obj, "data_ptr"):
        return _from_torch(name, obj)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cuda_array_interface(name, obj)
    if hasattr(obj, "__dlpack__"):
        return _from_dlpack(name, obj, stream)
    raise errors.InvalidValueError(
        "tensor '%s': a %s is not a tensor (pass a numpy array, a torch tensor or an object "
        "with __cuda_array_interface__ or __dlpack__)" % (name, type(obj).__name__))
