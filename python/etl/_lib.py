"""Loading libetl_runtime.so with ctypes and declaring the C API (etl.h).

Where the library is looked for, first match wins:
  1. $ETL_RUNTIME_LIB (a path to the .so),
  2. the installed layout (_layout.py, written by `cmake --install`),
  3. the build tree beside the source tree ($ETL_BUILD_DIR, else build/),
  4. the dynamic loader's search path (libetl_runtime.so.MAJOR.MINOR).
"""
import ctypes
import os
import re

from . import errors

_HERE = os.path.dirname(os.path.abspath(__file__))
SONAME = "libetl_runtime.so.0.1"


def _candidates():
    env = os.environ.get("ETL_RUNTIME_LIB")
    if env:
        yield env
        return
    try:
        from . import _layout  # only in an installed package
        prefix = os.path.normpath(os.path.join(_HERE, _layout.PREFIX_FROM_PACKAGE))
        yield os.path.join(prefix, _layout.LIBDIR, SONAME)
    except ImportError:
        pass
    src = os.path.normpath(os.path.join(_HERE, "..", ".."))
    build = os.environ.get("ETL_BUILD_DIR", os.path.join(src, "build"))
    yield os.path.join(build, "runtime", SONAME)
    yield SONAME


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("etl: cannot load the ETL runtime; tried: " + "; ".join(tried) +
                      ". Build it (scripts/setup.sh) or set ETL_RUNTIME_LIB")


lib, path = _load()

_c = ctypes
P = _c.c_void_p
Status = _c.c_int


class TensorInfo(_c.Structure):
    _fields_ = [("name", _c.c_char_p), ("dtype", _c.c_int), ("rank", _c.c_int),
                ("dims", _c.POINTER(_c.c_char_p))]


class ScalarInfo(_c.Structure):
    _fields_ = [("name", _c.c_char_p), ("dtype", _c.c_int)]


class ContextParams(_c.Structure):
    _fields_ = [("sim_workers", _c.c_uint32), ("sim_stack_bytes", _c.c_uint32),
                ("watchdog_ms", _c.c_uint32), ("cuda_device", _c.c_int32)]


def _sig(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


_sig("etlGetErrorName", _c.c_char_p, Status)
_sig("etlGetLastErrorMessage", _c.c_char_p)
_sig("etlVersion", _c.c_int)
_sig("etlDTypeName", _c.c_char_p, _c.c_int)
_sig("etlContextDefaultParams", ContextParams)
_sig("etlContextCreate", Status, _c.POINTER(P), _c.c_char_p, _c.POINTER(ContextParams))
_sig("etlContextDestroy", Status, P)
_sig("etlContextDeviceName", _c.c_char_p, P)
_sig("etlContextIsGpu", _c.c_int, P)
_sig("etlProgramLoadFile", Status, P, _c.c_char_p, _c.POINTER(P))
_sig("etlProgramDestroy", Status, P)
_sig("etlProgramNumDims", Status, P, _c.POINTER(_c.c_int))
_sig("etlProgramDimName", Status, P, _c.c_int, _c.POINTER(_c.c_char_p))
_sig("etlProgramNumTensors", Status, P, _c.POINTER(_c.c_int))
_sig("etlProgramTensorInfo", Status, P, _c.c_int, _c.POINTER(TensorInfo))
_sig("etlProgramTensorWritten", Status, P, _c.c_int, _c.POINTER(_c.c_int))
_sig("etlProgramNumScalars", Status, P, _c.POINTER(_c.c_int))
_sig("etlProgramScalarInfo", Status, P, _c.c_int, _c.POINTER(ScalarInfo))
_sig("etlBindScalar", Status, P, _c.c_char_p, _c.c_int, _c.c_void_p)
_sig("etlProgramTensorShape", Status, P, _c.c_int, _c.POINTER(_c.c_int64))
_sig("etlProgramNumConstraints", Status, P, _c.POINTER(_c.c_int))
_sig("etlProgramConstraint", Status, P, _c.c_int, _c.POINTER(_c.c_char_p),
     _c.POINTER(_c.c_char_p))
_sig("etlProgramNumVariants", Status, P, _c.POINTER(_c.c_int))
_sig("etlProgramVariantLabel", Status, P, _c.c_int, _c.POINTER(_c.c_char_p))
_sig("etlProgramLastVariant", Status, P, _c.POINTER(_c.c_int))
_sig("etlBindDim", Status, P, _c.c_char_p, _c.c_int64)
_sig("etlBindTensor", Status, P, _c.c_char_p, P, _c.c_int, _c.c_int, _c.POINTER(_c.c_int64))
_sig("etlRun", Status, P)
_sig("etlRunAsync", Status, P, _c.c_void_p)
_sig("etlRunWait", Status, P)
_sig("etlRunQuery", Status, P)
_sig("etlProgramSetTimeline", Status, P, _c.c_char_p)
_sig("etlProgramSetProfile", Status, P, _c.c_char_p)
_sig("etlProgramSetRaceCheck", Status, P, _c.c_int)
_sig("etlProgramSetPoisonBuffers", Status, P, _c.c_int)


# The runtime's messages name its C calls; a Python caller made none of them.
# Each pattern rewrites a C hint into what to pass to prog(...) instead.
_PYTHON_HINTS = [
    (re.compile(r"dimension '(\w+)' is not bound \(call etlBindDim[^)]*\)"),
     r"dimension '\1' is not bound: pass prog(\1=...) or a tensor whose shape names it"),
    (re.compile(r"tensor '(\w+)' is not bound \(call etlBindTensor\)"),
     r"tensor '\1' is not bound: pass it, prog(\1=array)"),
    (re.compile(r"scalar '(\w+)' \((\w+)\) is not bound \(call etlBindScalar\)"),
     r"scalar '\1' (\2) is not bound: pass it, prog(\1=number)"),
    (re.compile(r"; bind it with etlBind\w+"), r"; pass it by its name to prog(...)"),
]
# "etlRun: ...", "etlBindTensor: ...": the C function the message comes from.
_C_PREFIX = re.compile(r"^etl[A-Z]\w*: ")


def python_message(msg):
    """The runtime's message `msg` in the Python package's terms."""
    msg = _C_PREFIX.sub("", msg)
    for pattern, text in _PYTHON_HINTS:
        msg = pattern.sub(text, msg)
    return msg


def check(status):
    """Raise the exception class of a failed call's status."""
    if status == 0:
        return
    msg = python_message(lib.etlGetLastErrorMessage().decode(errors="replace"))
    cls = errors.BY_CODE.get(status, errors.Error)
    raise cls(msg)
