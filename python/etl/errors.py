"""Exceptions of the etl package: one class per runtime status.

Every error the runtime reports arrives as the class of its etlStatus with
the runtime's own message (``str(e)``), its status name (``e.status``) and
number (``e.code``). Checks the package makes before calling the runtime
(a wrong dtype, a non-contiguous tensor, a tensor on the wrong device or
on another stream)
raise subclasses of :class:`BindingError`, so nothing is run.
"""


class Error(Exception):
    """Base of every etl exception."""

    status = "ETL_ERROR"
    code = -1

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class InvalidValueError(Error, ValueError):
    status, code = "ETL_ERROR_INVALID_VALUE", 1


class InvalidHandleError(Error):
    status, code = "ETL_ERROR_INVALID_HANDLE", 2


class NotFoundError(Error, LookupError):
    status, code = "ETL_ERROR_NOT_FOUND", 3


class InvalidArtifactError(Error):
    status, code = "ETL_ERROR_INVALID_ARTIFACT", 4


class UnsupportedVersionError(Error):
    status, code = "ETL_ERROR_UNSUPPORTED_VERSION", 5


class NoDeviceError(Error):
    status, code = "ETL_ERROR_NO_DEVICE", 6


class NoCudaDriverError(Error):
    status, code = "ETL_ERROR_NO_CUDA_DRIVER", 7


class OutOfMemoryError(Error, MemoryError):
    status, code = "ETL_ERROR_OUT_OF_MEMORY", 8


class BindingError(Error, ValueError):
    """A wrong dtype, rank or shape, or a `where` fact violated."""

    status, code = "ETL_ERROR_BINDING", 9


class UnboundError(Error):
    status, code = "ETL_ERROR_UNBOUND", 10


class LaunchFailedError(Error):
    status, code = "ETL_ERROR_LAUNCH_FAILED", 11


class MemoryViolationError(Error):
    status, code = "ETL_ERROR_MEMORY_VIOLATION", 12


class WatchdogTimeout(Error, TimeoutError):
    status, code = "ETL_ERROR_TIMEOUT", 13


class CudaError(Error):
    status, code = "ETL_ERROR_CUDA", 14


class WriteError(Error, OSError):
    """A trace or profile file could not be written (ETL_ERROR_IO)."""

    status, code = "ETL_ERROR_IO", 15


class RaceError(Error):
    status, code = "ETL_ERROR_RACE", 16


class NotReadyError(Error):
    """ETL_ERROR_NOT_READY: the run is still in flight (etlRunQuery);
    Program.query() answers False instead of raising it."""

    status, code = "ETL_ERROR_NOT_READY", 17


class DivergenceError(Error):
    """sim: a lane of a warp never reached a warp shuffle its warp waits at,
    or reached another one (the message names the operation and its line)."""

    status, code = "ETL_ERROR_DIVERGENCE", 18


# Raised by the package before anything reaches the runtime.
class DTypeError(BindingError, TypeError):
    """A tensor's element type differs from the parameter's."""


class LayoutError(BindingError):
    """A tensor that is not C-contiguous (strided binding does not exist yet)."""


class DeviceMismatchError(BindingError):
    """A tensor in memory the program's device cannot use (host vs CUDA)."""


class ReadOnlyError(BindingError):
    """Memory that must not change bound to a tensor the program writes: a
    read-only numpy array (``a.flags.writeable`` False, e.g. over ``bytes``),
    a torch tensor that requires grad (autograd would not see the write: pass
    ``t.detach()`` to write into its memory anyway), or a read-only
    __cuda_array_interface__ array. Tensors the program only reads
    (``Param.written`` False) take them."""


class StreamMismatchError(BindingError):
    """A __cuda_array_interface__ array produced on another stream than the
    one the program runs on (synchronize first, or run on its stream)."""


class CompileError(Error):
    """etlc rejected the program; the message holds its diagnostics."""

    status, code = "ETLC", -1


BY_CODE = {
    cls.code: cls
    for cls in (InvalidValueError, InvalidHandleError, NotFoundError, InvalidArtifactError,
                UnsupportedVersionError, NoDeviceError, NoCudaDriverError, OutOfMemoryError,
                BindingError, UnboundError, LaunchFailedError, MemoryViolationError,
                WatchdogTimeout, CudaError, WriteError, RaceError, NotReadyError,
                DivergenceError)
}
