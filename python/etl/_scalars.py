"""Scalar parameters (`eps: f32`, `n: i32`): a Python value as the bytes
etlBindScalar takes for the parameter's dtype.

Floats (f32, f16, bf16) accept int and float values (and numpy/torch
scalars, through ``.item()``); f16 and bf16 are rounded to nearest even and
passed as their 16 bits. Integers (i8 .. i64, u8 .. u32) accept ints only: a float for
an integer parameter is a DTypeError rather than a silent truncation, and a
value out of range is an InvalidValueError. bool is refused for both.
"""
import ctypes
import math
import numbers
import struct

from . import _tensors, errors

_INT_RANGE = {"i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1), "i8": (-2**7, 2**7 - 1),
              "u8": (0, 2**8 - 1), "i16": (-2**15, 2**15 - 1), "u16": (0, 2**16 - 1),
              "u32": (0, 2**32 - 1)}
_INT_CTYPE = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "i8": ctypes.c_int8,
              "u8": ctypes.c_uint8, "i16": ctypes.c_int16, "u16": ctypes.c_uint16,
              "u32": ctypes.c_uint32}


def _plain(value):
    """numpy/torch scalars and 0-d arrays to the Python number they hold."""
    if isinstance(value, numbers.Number):
        return value
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", ()) in ((), []):
        return item()
    return value


def _bf16_bits(x):
    (w,) = struct.unpack("<I", struct.pack("<f", x))
    if math.isnan(x):
        return (w >> 16) | 0x40
    return ((w + 0x7FFF + ((w >> 16) & 1)) >> 16) & 0xFFFF


def encode(name, dtype, value):
    """A ctypes object holding `value` as scalar parameter `name` of `dtype`
    ("f32", ...) expects it, and the dtype's code."""
    code = {v: k for k, v in _tensors.NAMES.items()}[dtype]
    v = _plain(value)
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise errors.DTypeError("scalar '%s' is %s; got %r (%s), expected a number" %
                                (name, dtype, value, type(value).__name__))
    if dtype in _INT_RANGE:
        if not isinstance(v, numbers.Integral):
            raise errors.DTypeError("scalar '%s' is %s; got the non-integer %r (convert it "
                                    "with int(...) if truncation is meant)" % (name, dtype, value))
        lo, hi = _INT_RANGE[dtype]
        if not lo <= int(v) <= hi:
            raise errors.InvalidValueError("scalar '%s' = %d does not fit in %s" %
                                           (name, int(v), dtype))
        return _INT_CTYPE[dtype](int(v)), code
    x = float(v)
    try:
        if dtype == "f32":
            struct.pack("<f", x)  # raises on overflow
            return ctypes.c_float(x), code
        if dtype == "f16":
            return ctypes.c_uint16(struct.unpack("<H", struct.pack("<e", x))[0]), code
        struct.pack("<f", x)
        return ctypes.c_uint16(_bf16_bits(x)), code
    except (OverflowError, struct.error):
        raise errors.InvalidValueError("scalar '%s' = %r overflows %s" % (name, value, dtype)) from None
