"""The etl package's CUDA path on the fake libcuda.so.1 (tests/fake_cuda).

Plays the part of torch: makes the device's primary context current,
allocates device memory and a stream through the (fake) Driver API, wraps
the memory in objects with ``__cuda_array_interface__`` v3, and checks that
a "cuda" program runs in that context (current again after every call), is
launched on the given stream and asynchronously (query() False, then True),
that the watchdog reports a hung kernel from wait(), and that misuse raises
the documented exceptions before anything runs, and that a call inside a
graph capture (cuStreamBeginCapture, as torch.cuda.graph does) is recorded
and replays. The fake computes nothing,
so no result is compared (tests/python/test_etl.py does that on a GPU).
Run by ctest (`python_etl_fake_cuda`) with LD_LIBRARY_PATH holding the fake
and ETL_FAKE_CUDA_ARTIFACTS its PTX artifacts; never imports torch (torch
would load the fake driver too).
"""
import ctypes
import os
import sys
import time
import unittest

import etl

ARTIFACTS = os.environ.get("ETL_FAKE_CUDA_ARTIFACTS", "")
try:
    fake = ctypes.CDLL("libcuda.so.1")  # the library the runtime dlopens
    fake.etl_fake_cuda_reset
except (OSError, AttributeError):
    print("SKIP: the fake libcuda.so.1 is not first on LD_LIBRARY_PATH (run through ctest)")
    sys.exit(77)

P = ctypes.c_void_p


class Tmap(ctypes.Structure):  # etl_fake_cuda_stats's struct etl_fake_tmap (fake_cuda.h)
    _fields_ = [(n, ctypes.c_int) for n in ("dtype", "rank", "interleave", "swizzle", "l2", "oob")] + \
        [("addr", ctypes.c_ulonglong), ("dims", ctypes.c_ulonglong * 2),
         ("stride", ctypes.c_ulonglong), ("box", ctypes.c_uint * 2),
         ("elem_strides", ctypes.c_uint * 2)]


class Stats(ctypes.Structure):  # etl_fake_cuda_stats (fake_cuda.h)
    _fields_ = [("contexts", ctypes.c_int), ("device_allocs", ctypes.c_int),
                ("host_allocs", ctypes.c_int), ("modules", ctypes.c_int),
                ("reclaimed", ctypes.c_int), ("violations", ctypes.c_int),
                ("launches", ctypes.c_int), ("last_grid", ctypes.c_uint),
                ("last_block", ctypes.c_uint), ("last_smem", ctypes.c_uint),
                ("last_stream", ctypes.c_ulonglong), ("primary_refs", ctypes.c_int),
                ("streams", ctypes.c_int), ("events", ctypes.c_int),
                ("last_memset_stream", ctypes.c_ulonglong),
                ("last_memset_bytes", ctypes.c_ulonglong),
                ("seen_args", ctypes.c_ulonglong), ("seen_slots", ctypes.c_ulonglong * 16),
                ("seen_event0", ctypes.c_uint), ("seen_error", ctypes.c_uint * 8),
                ("seen_abort", ctypes.c_uint), ("graphs", ctypes.c_int),
                ("graph_execs", ctypes.c_int), ("graph_launches", ctypes.c_int),
                ("last_graph_nodes", ctypes.c_int), ("last_graph_kernels", ctypes.c_int),
                ("last_graph_copies", ctypes.c_int), ("last_graph_memsets", ctypes.c_int),
                ("last_target", ctypes.c_char * 16),
                ("tmaps", ctypes.c_int), ("tmap", Tmap * 4)]


fake.etl_fake_cuda_get_stats.restype = Stats
fake.etl_fake_cuda_first_violation.restype = ctypes.c_char_p
fake.etl_fake_cuda_kernel.argtypes = [ctypes.c_int, ctypes.c_uint]
fake.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t]
fake.cuMemFree_v2.argtypes = [ctypes.c_ulonglong]
KERNEL_COMPLETE, KERNEL_HANG, KERNEL_SLOW = 0, 1, 2


def ok(result):
    if result != 0:
        raise AssertionError("fake driver call failed: CUresult %d" % result)


class Array:
    """Device memory as CuPy or Numba would describe it."""

    def __init__(self, ptr, shape, typestr="<f4", strides=None, stream=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (ptr, False), "strides": strides,
                                         "version": 3, "stream": stream}


class CudaPath(unittest.TestCase):
    def setUp(self):
        fake.etl_fake_cuda_reset()
        ok(fake.cuInit(0))
        self.primary, self.stream = P(), P()
        ok(fake.cuDevicePrimaryCtxRetain(ctypes.byref(self.primary), 0))
        ok(fake.cuCtxSetCurrent(self.primary))
        ok(fake.cuStreamCreate(ctypes.byref(self.stream), 1))
        self.x, self.y = ctypes.c_ulonglong(), ctypes.c_ulonglong()
        ok(fake.cuMemAlloc_v2(ctypes.byref(self.x), 40 * 300 * 4))
        ok(fake.cuMemAlloc_v2(ctypes.byref(self.y), 40 * 4))
        self.prog = etl.load(os.path.join(ARTIFACTS, "rowsum.etlb"), device="cuda",
                             watchdog_ms=200)

    def tearDown(self):
        self.prog.close()
        ok(fake.cuMemFree_v2(self.x))
        ok(fake.cuMemFree_v2(self.y))
        ok(fake.cuStreamDestroy_v2(self.stream))
        ok(fake.cuCtxSetCurrent(None))
        ok(fake.cuDevicePrimaryCtxRelease_v2(0))
        s = fake.etl_fake_cuda_get_stats()
        self.assertEqual(s.violations, 0, fake.etl_fake_cuda_first_violation())
        self.assertEqual(s.reclaimed, 0)
        self.assertEqual(s.primary_refs, 0)

    def current(self):
        c = P()
        ok(fake.cuCtxGetCurrent(ctypes.byref(c)))
        return c.value

    def args(self, **kw):
        return dict(x=Array(self.x.value, (40, 300), **kw), y=Array(self.y.value, (40,), **kw))

    def test_runs_async_on_the_stream_in_the_callers_context(self):
        self.assertTrue(self.prog.is_gpu)
        self.assertEqual(self.current(), self.primary.value)
        self.assertEqual(fake.etl_fake_cuda_get_stats().primary_refs, 1)  # ours, not retained
        fake.etl_fake_cuda_kernel(KERNEL_SLOW, 300)
        self.prog.run(stream=self.stream.value, **self.args(stream=self.stream.value))
        s = fake.etl_fake_cuda_get_stats()
        self.assertEqual(s.launches, 1)
        self.assertEqual(s.last_stream, self.stream.value)
        self.assertEqual(self.current(), self.primary.value)
        self.assertFalse(self.prog.query())  # in flight
        polls, end = 0, time.monotonic() + 10
        while not self.prog.query() and time.monotonic() < end:
            polls += 1
            time.sleep(0.002)
        self.assertTrue(self.prog.query())
        self.assertGreater(polls, 0)
        self.prog.wait()
        self.assertEqual(self.current(), self.primary.value)
        # without torch imported and no stream= given: the NULL stream
        self.prog(**self.args())
        self.prog.wait()
        self.assertEqual(fake.etl_fake_cuda_get_stats().last_stream, 0)

    def test_dlpack_producer_is_given_the_stream(self):
        class Managed(ctypes.Structure):  # DLManagedTensor
            _fields_ = [("data", P), ("device_type", ctypes.c_int32),
                        ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                        ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                        ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                        ("strides", P), ("byte_offset", ctypes.c_uint64),
                        ("manager_ctx", P), ("deleter", P)]

        class OnCuda:  # a CUDA DLPack producer that records the stream it must order for
            def __init__(self, ptr, shape):
                self.shape = (ctypes.c_int64 * len(shape))(*shape)
                self.m = Managed(ptr, 2, 0, len(shape), 2, 32, 1, self.shape, None, 0, None, None)
                self.asked = "not asked"

            def __dlpack_device__(self):
                return (2, 0)

            def __dlpack__(self, stream=None):
                self.asked = stream
                new = ctypes.pythonapi.PyCapsule_New
                new.restype = ctypes.py_object
                new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
                return new(ctypes.addressof(self.m), b"dltensor", None)

        x, y = OnCuda(self.x.value, (40, 300)), OnCuda(self.y.value, (40,))
        self.prog.run(x=x, y=y, stream=self.stream.value)
        self.prog.wait()
        self.assertEqual((x.asked, y.asked), (self.stream.value, self.stream.value))
        self.prog(x=x, y=y)  # the NULL stream is DLPack's legacy default stream, 1
        self.prog.wait()
        self.assertEqual(x.asked, 1)
        self.assertEqual(fake.etl_fake_cuda_get_stats().launches, 2)

    def test_watchdog_error_arrives_from_wait(self):
        fake.etl_fake_cuda_kernel(KERNEL_HANG, 0)
        self.prog(**self.args())
        with self.assertRaisesRegex(etl.WatchdogTimeout, "no task finished for 200 ms"):
            self.prog.wait()
        with self.assertRaises(etl.WatchdogTimeout):  # kept until the next run
            self.prog.query()
        fake.etl_fake_cuda_kernel(KERNEL_COMPLETE, 0)
        self.prog(**self.args())
        self.assertTrue(self.prog.query())

    def test_misuse_runs_nothing(self):
        import numpy as np
        with self.assertRaisesRegex(etl.StreamMismatchError, "produced on stream 0x7"):
            self.prog.run(stream=self.stream.value, **self.args(stream=7))
        with self.assertRaisesRegex(etl.DTypeError, "typestr '<f8'"):
            self.prog(**self.args(typestr="<f8"))
        with self.assertRaisesRegex(etl.LayoutError, "not C-contiguous"):
            self.prog(x=Array(self.x.value, (40, 300), strides=(4, 160)),
                      y=Array(self.y.value, (40,)))
        with self.assertRaisesRegex(etl.DeviceMismatchError, "host memory.*runs on ETL fake"):
            self.prog(x=np.ones((40, 300), np.float32), y=Array(self.y.value, (40,)))
        with self.assertRaisesRegex(etl.InvalidValueError, "stream='s'"):
            self.prog.run(stream="s", **self.args())
        self.assertEqual(fake.etl_fake_cuda_get_stats().launches, 0)

    def test_a_call_inside_a_graph_capture_is_recorded_and_replays(self):
        # as torch.cuda.graph(g) does it: warm up, capture on the stream, replay
        self.prog.run(stream=self.stream.value, **self.args(stream=self.stream.value))
        warm = fake.etl_fake_cuda_get_stats()  # left in flight, as torch's warm-up leaves it
        graph, exe = P(), P()
        ok(fake.cuStreamBeginCapture_v2(self.stream, 0))  # CU_STREAM_CAPTURE_MODE_GLOBAL
        try:
            self.prog.run(stream=self.stream.value, **self.args(stream=self.stream.value))
        finally:  # a failure must not leave the stream capturing for tearDown
            ok(fake.cuStreamEndCapture(self.stream, ctypes.byref(graph)))
        s = fake.etl_fake_cuda_get_stats()
        self.assertEqual(s.launches, warm.launches)  # recorded, not run
        self.assertEqual(s.last_graph_kernels, 1)
        self.prog.wait()  # the warm-up run
        ok(fake.cuGraphInstantiateWithFlags(ctypes.byref(exe), graph, ctypes.c_ulonglong(0)))
        for replay in (1, 2):
            ok(fake.cuGraphLaunch(exe, self.stream))
            s = fake.etl_fake_cuda_get_stats()
            self.assertEqual(s.graph_launches, replay)
            self.assertEqual(s.seen_args, warm.seen_args)  # the warm-up binding's block
            self.assertEqual(s.seen_event0, warm.seen_event0)  # counters reset on the stream
        ok(fake.cuGraphExecDestroy(exe))
        ok(fake.cuGraphDestroy(graph))
        # a binding that never ran cannot be recorded: it would have to be uploaded
        ok(fake.cuStreamBeginCapture_v2(self.stream, 0))
        try:
            with self.assertRaisesRegex(etl.InvalidValueError,
                                        "capturing a CUDA graph.*has not run yet.*warm-up run"):
                self.prog.run(stream=self.stream.value, x=Array(self.x.value, (40, 300)),
                              y=Array(self.x.value, (40,)))
        finally:
            ok(fake.cuStreamEndCapture(self.stream, ctypes.byref(graph)))
        ok(fake.cuGraphDestroy(graph))

    def test_not_ready_is_a_status_class(self):
        self.assertIs(etl.errors.BY_CODE[17], etl.NotReadyError)
        self.assertEqual(etl.NotReadyError.status, "ETL_ERROR_NOT_READY")


if __name__ == "__main__":
    try:
        import numpy  # noqa: F401  (only the misuse test needs it)
    except ImportError:
        print("SKIP: numpy is not installed for %s (apt-get install python3-numpy)" %
              sys.executable)
        sys.exit(77)
    if not os.path.exists(os.path.join(ARTIFACTS, "rowsum.etlb")):
        print("SKIP: no rowsum.etlb under ETL_FAKE_CUDA_ARTIFACTS=%r (run through ctest)" %
              ARTIFACTS)
        sys.exit(77)
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(1 if result.failures or result.errors else 0)
