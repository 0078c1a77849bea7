"""etl: run ETL megakernels from Python (ctypes over libetl_runtime.so).

    import etl
    prog = etl.compile("examples/rowsum/rowsum.etl", targets=["sm_90", "sim"])
    prog = etl.load("rowsum.etlb", device="auto")   # "sim", "cuda" or "auto"
    prog(x=x, y=y)                                  # binds by name, infers dims, runs
    prog.run(x=x, y=y, trace="t.json", profile="p.json")
    prog.params                                     # name, dtype, rank, dims, kind of each
    etl.load("rmsnorm_rope.etlb")(x=x, ..., eps=1e-6)   # scalar parameters by name too
    y = etl.torch_op(prog)(x)    # one torch.library op, for nn.Modules and torch.compile
    rec = etl.tune("gemm.etl", bind={"M": 4096, "N": 4096, "K": 4096})   # etlc tune: ranked
    rec["picks"][0]                                 # {"BM": "128", ...}: the modelled best

Tensors are numpy arrays, torch tensors, objects with
``__cuda_array_interface__`` or anything with ``__dlpack__``, C-contiguous:
host memory for a "sim" program, CUDA memory for a "cuda" one. They are
bound in place: the program reads and writes them directly. A binding lasts
until that tensor is bound again: a call may leave tensors out, and
``prog.run()`` with no tensors replays the last binding (as a captured graph
would). So the program holds a strong reference to every tensor bound (the
object passed, or its DLPack capsule) until it is bound again or the program
is closed (close(), a ``with`` block, or collection): a bound array stays
alive after ``del`` and a later call that leaves it out writes to it, never
to freed memory. Pass every tensor on each call to use only the new ones;
close the program to release them. Dims are
inferred from every axis whose extent is a dim's name; others (or
overrides) are given as integers: ``prog(x=x, y=y, N=1000)``. Scalar
parameters (``eps: f32``) are given by name as Python numbers (or
numpy/torch scalars): floats for f32/f16/bf16, ints for i32/i64
(etl._scalars). The runtime checks the shapes and the program's `where` facts and its message arrives
as the exception class of its status (etl.errors).

On "cuda" the runtime shares the CUDA context torch uses (the one current,
else the device's primary context) and a run is asynchronous, like a torch
kernel: it is queued on torch's current stream (or ``stream=``) and
``prog(...)`` returns at once; work queued after it on that stream sees its
results. ``prog.wait()`` blocks until it ends and raises its error;
``prog.query()`` is True once it ended (False while it runs). The watchdog
runs only inside wait() and query() (and the next run, which first finishes
this one). numpy and torch are optional: the package imports neither.
"""
import collections
import os
import shutil
import subprocess
import sys
import tempfile

from . import _lib, _scalars, _tensors, errors
from .errors import *  # noqa: F401,F403  (the exception classes)

__all__ = ["compile", "load", "Program", "Param", "errors", "version", "torch_op", "tune"]

Param = collections.namedtuple("Param", "name dtype rank dims kind written",
                               defaults=("tensor", False))
Param.__doc__ = """A parameter: dtype as "f32"/"f16"/"bf16"/"i32"/"i64"; kind "tensor"
(dims: the extent of each axis in the program's symbols, "M", "cdiv(N, 128)")
or "scalar" (rank 0, no dims). written: True for a tensor some task of the
kernel stores to or updates atomically (binding read-only memory to it
raises etl.ReadOnlyError), False for one it only reads, and for scalars."""

_c = _lib._c


def version():
    """Runtime version as (major, minor, patch)."""
    v = _lib.lib.etlVersion()
    return (v // 10000, v // 100 % 100, v % 100)


def _etlc():
    env = os.environ.get("ETLC")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from . import _layout
        path = os.path.join(here, _layout.PREFIX_FROM_PACKAGE, _layout.BINDIR, "etlc")
        if os.path.exists(path):
            return os.path.normpath(path)
    except ImportError:
        pass
    build = os.environ.get("ETL_BUILD_DIR",
                           os.path.join(here, "..", "..", "build"))
    path = os.path.join(build, "compiler", "etlc")
    if os.path.exists(path):
        return os.path.normpath(path)
    found = shutil.which("etlc")
    if not found:
        raise errors.NotFoundError("etlc not found (set ETLC, build it, or put it on PATH)")
    return found


def compile(source, targets=("sm_90", "sim"), output=None, device="auto", include=(),
            defines=(), variants=(), **load_args):
    """Compile `source` (.etl) with etlc and load the artifact.

    `output` is where the .etlb goes (default: a temporary file, removed once
    loaded). `defines` are etlc's -D NAME=VALUE, `variants` its --variant
    specs ("B<=1:TK=64": one artifact of several variants; `prog.variant`
    says which one a run ran). Raises CompileError with etlc's diagnostics
    when it fails.
    """
    tmp = None
    if output is None:
        tmp = tempfile.mkdtemp(prefix="etl-")
        output = os.path.join(tmp, os.path.splitext(os.path.basename(source))[0] + ".etlb")
    cmd = [_etlc(), "compile", os.fspath(source), "-o", os.fspath(output),
           "--target", ",".join(targets)]
    for d in include:
        cmd += ["-I", os.fspath(d)]
    for d in defines:
        cmd += ["-D", d]
    for v in variants:
        cmd += ["--variant", v]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise errors.CompileError((r.stderr or r.stdout).rstrip() or
                                      "etlc exited with status %d" % r.returncode)
        return load(output, device=device, **load_args)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def tune(source, bind, target="sm_90", gpu="h200", defines=(), include=(), record=None,
         progress=False):
    """Rank the tunable consts' candidates of `source` with `etlc tune`: each
    combination the constraints allow (and `defines` pin) is compiled, those
    the compiler knows are bad are pruned (saying why), and the rest are
    ranked by etlc's timing model (modelled, not measured) at each binding.

    `bind`: one binding or a list (batch buckets), each a dict of every dim
    (and integer tensors a range reads: ``kv_len``) or etlc's ``"M=4096,..."``.
    Returns etlc's JSON record (program hash, target, GPU, per binding every
    candidate, fastest first, with its modelled seconds or why it was pruned)
    with ``"picks"`` added: per binding the fastest candidate's values (None
    when every one was pruned). `record`: also keep the record in this file.
    `progress`: etlc's per-candidate lines go to stderr. Raises CompileError
    when etlc fails."""
    binds = bind if isinstance(bind, (list, tuple)) else [bind]
    tmp = tempfile.mkdtemp(prefix="etl-tune-")
    path = os.fspath(record) if record else os.path.join(tmp, "record.json")
    cmd = [_etlc(), "tune", os.fspath(source), "--target", target, "--gpu", gpu,
           "--record", path]
    for b in binds:
        cmd += ["--bind", b if isinstance(b, str) else
                ",".join("%s=%d" % (k, v) for k, v in b.items())]
    for d in include:
        cmd += ["-I", os.fspath(d)]
    for d in defines:
        cmd += ["-D", d]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=None if progress else subprocess.PIPE, text=True)
        if r.returncode != 0 or not os.path.exists(path):
            raise errors.CompileError((r.stderr or r.stdout or "").rstrip() or
                                      "etlc tune exited with status %d" % r.returncode)
        import json
        with open(path) as f:
            rec = json.load(f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rec["picks"] = [next((c["candidate"] for c in b["candidates"] if "seconds" in c), None)
                    for b in rec["bindings"]]
    return rec


def load(path, device="auto", sim_workers=None, watchdog_ms=None, cuda_device=None):
    """Load an artifact (.etlb) on `device`: "sim", "cuda" or "auto" (the GPU
    when a CUDA driver and device exist, else sim; $ETL_DEVICE decides
    "auto" when set). `sim_workers`, `watchdog_ms`, `cuda_device`: see
    etlContextParams; `cuda_device` defaults to torch's current device when
    torch has initialised CUDA, else 0."""
    return Program(path, device, sim_workers, watchdog_ms, cuda_device)


def torch_op(prog, name=None, inplace=()):
    """The program as one torch.library custom op, ``torch.ops.etl.NAME``.

    Returns the op (an OpOverload): call it in a torch.nn.Module or in
    torch.compile'd code like any torch op. Its arguments are the tensors
    the kernel only reads, then the written tensors named in `inplace`
    (mutated in place), then the scalar parameters, then the dims no
    tensor argument's shape gives; it returns the other written tensors,
    allocated with the shapes the artifact gives them (one tensor or a
    tuple): ``y = etl.torch_op(etl.load("rowsum.etlb", device="sim"))(x)``.
    `name` defaults to the artifact's file name (``rowsum``, then
    ``rowsum_2``, ...); ``op._schema`` shows the signature. The op keeps
    `prog` (and, as every call does, the last call's tensors) alive; it has
    no backward. Needs torch (imported only here). See
    etl._torch_op for the convention and why.
    """
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ImportError("etl.torch_op needs PyTorch, which is not installed for %s "
                          "(Debian: apt-get install python3-torch)" % sys.executable) from None
    from . import _torch_op
    return _torch_op.torch_op(prog, name, inplace)


def _torch_cuda():
    """torch.cuda when torch is imported and has initialised CUDA, else None
    (never imports torch nor initialises CUDA)."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        return cuda if cuda is not None and cuda.is_initialized() else None
    except Exception:
        return None


class Program:
    """A loaded artifact in its own runtime context."""

    def __init__(self, path, device="auto", sim_workers=None, watchdog_ms=None,
                 cuda_device=None):
        self._ctx = self._prog = None
        self._inflight = None
        prm = _lib.lib.etlContextDefaultParams()
        if sim_workers is not None:
            prm.sim_workers = sim_workers
        if watchdog_ms is not None:
            prm.watchdog_ms = watchdog_ms
        if cuda_device is None and _torch_cuda() is not None:
            cuda_device = _torch_cuda().current_device()
        if cuda_device is not None:
            prm.cuda_device = cuda_device
        self.cuda_device = prm.cuda_device
        ctx, prog = _lib.P(), _lib.P()
        _lib.check(_lib.lib.etlContextCreate(_c.byref(ctx), device.encode(), _c.byref(prm)))
        self._ctx = ctx
        _lib.check(_lib.lib.etlProgramLoadFile(ctx, os.fspath(path).encode(), _c.byref(prog)))
        self._prog = prog
        self.path = os.fspath(path)
        self.device = _lib.lib.etlContextDeviceName(ctx).decode()
        self.is_gpu = bool(_lib.lib.etlContextIsGpu(ctx))
        self.params = self._describe()
        self.dims = self._dims()
        self.constraints = self._constraints()
        self.variants = self._variants()
        self._trace = self._profile = None
        # name -> the View (holding the tensor object) the runtime has a pointer
        # to: kept alive until rebound or closed, since a later run reuses it
        self._bound = {}

    def _describe(self):
        n = _c.c_int()
        _lib.check(_lib.lib.etlProgramNumTensors(self._prog, _c.byref(n)))
        out = []
        for i in range(n.value):
            t = _lib.TensorInfo()
            _lib.check(_lib.lib.etlProgramTensorInfo(self._prog, i, _c.byref(t)))
            dims = tuple(t.dims[k].decode() for k in range(t.rank))
            w = _c.c_int()
            _lib.check(_lib.lib.etlProgramTensorWritten(self._prog, i, _c.byref(w)))
            out.append(Param(t.name.decode(), _tensors.NAMES[t.dtype], t.rank, dims, "tensor",
                             bool(w.value)))
        _lib.check(_lib.lib.etlProgramNumScalars(self._prog, _c.byref(n)))
        for i in range(n.value):
            s = _lib.ScalarInfo()
            _lib.check(_lib.lib.etlProgramScalarInfo(self._prog, i, _c.byref(s)))
            out.append(Param(s.name.decode(), _tensors.NAMES[s.dtype], 0, (), "scalar"))
        return tuple(out)

    def _strings(self, count, item, *tail):
        """The strings `item(prog, i, &s, *tail)` for i below `count(prog)`."""
        n = _c.c_int()
        _lib.check(count(self._prog, _c.byref(n)))
        out = []
        for i in range(n.value):
            s = _c.c_char_p()
            _lib.check(item(self._prog, i, _c.byref(s), *tail))
            out.append(s.value.decode())
        return tuple(out)

    def _dims(self):
        return self._strings(_lib.lib.etlProgramNumDims, _lib.lib.etlProgramDimName)

    def _constraints(self):
        return self._strings(_lib.lib.etlProgramNumConstraints, _lib.lib.etlProgramConstraint,
                             None)

    def _variants(self):
        return self._strings(_lib.lib.etlProgramNumVariants, _lib.lib.etlProgramVariantLabel)

    @property
    def variant(self):
        """The label of the variant the last run ran (`etlc compile --variant
        'B<=1:TK=64'`: "B<=1:TK=64"; "" for an artifact of one variant), or
        None before any run. `variants` lists them all, in the order the
        runtime tries them."""
        i = _c.c_int()
        _lib.check(_lib.lib.etlProgramLastVariant(self._prog, _c.byref(i)))
        return None if i.value < 0 else self.variants[i.value]

    def __repr__(self):
        sig = ", ".join("%s: %s[%s]" % (p.name, p.dtype, ", ".join(p.dims)) if p.kind == "tensor"
                        else "%s: %s" % (p.name, p.dtype) for p in self.params)
        return "<etl.Program %s(%s) on %s>" % (os.path.basename(self.path), sig, self.device)

    def close(self):
        """Destroy the program and its context (also done when collected);
        a run in flight is waited for first."""
        if self._ctx:
            _lib.lib.etlContextDestroy(self._ctx)  # destroys the program too
        self._ctx = self._prog = self._inflight = None
        self._bound = {}  # the runtime's pointers are gone: release the tensors

    def wait(self):
        """Block until the last run ends (with the watchdog); raise its error.
        Returns at once when nothing is in flight (sim runs never are)."""
        if self._prog is None:
            raise errors.InvalidHandleError("the program was closed")
        status = _lib.lib.etlRunWait(self._prog)
        self._inflight = None
        _lib.check(status)

    def query(self):
        """True once the last run ended (raising its error if it failed),
        False while it is in flight. Checks the watchdog."""
        if self._prog is None:
            raise errors.InvalidHandleError("the program was closed")
        status = _lib.lib.etlRunQuery(self._prog)
        if status == errors.NotReadyError.code:
            return False
        self._inflight = None
        _lib.check(status)
        return True

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __call__(self, **args):
        """Bind tensors, scalars and dims by name and run once (see run)."""
        self.run(**args)

    def run(self, trace=None, profile=None, race_check=False, stream=None, **args):
        """Bind each keyword (a tensor or scalar parameter, or a dim) and run once.

        trace: write the per-task timeline as Chrome trace JSON to this path.
        profile: sim only, write the profile counters (docs/PROFILE.md).
        race_check: sim only, fail with RaceError on tasks not ordered by events.
        stream: cuda only, the CUstream to queue the run on (an int handle or
        a torch.cuda.Stream); default torch's current stream, else the NULL
        stream. On cuda the run is asynchronous: see wait() and query().
        Inside a CUDA graph capture (torch.cuda.graph) the run is recorded,
        and replays with these tensors; the same binding must have run once
        before the capture (else InvalidValueError, nothing recorded).
        Nothing is run when a tensor, scalar or dim cannot be bound.
        """
        if self._prog is None:
            raise errors.InvalidHandleError("the program was closed")
        by_name = {p.name: p for p in self.params if p.kind == "tensor"}
        scalars = {p.name: p for p in self.params if p.kind == "scalar"}
        handle = self._stream(stream) if self.is_gpu else stream
        views, dims, values = [], {}, []
        for name, value in args.items():
            if name in by_name:
                views.append((by_name[name],
                              _tensors.view(name, value, handle if self.is_gpu else None)))
            elif name in scalars:
                values.append((name, _scalars.encode(name, scalars[name].dtype, value)))
            elif name in self.dims:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise errors.InvalidValueError("dim '%s' = %r: an int is expected" %
                                                   (name, value))
                dims[name] = value
            else:
                raise errors.NotFoundError(
                    "the program has no tensor%s or dim '%s' (tensors: %s; %sdims: %s)" %
                    (", scalar" if scalars else "", name, ", ".join(by_name) or "none",
                     "scalars: %s; " % ", ".join(scalars) if scalars else "",
                     ", ".join(self.dims) or "none"))
        for p, v in views:
            self._check_view(p, v, handle)
        inferred = dict(dims)
        for p, v in views:
            for axis, extent in zip(p.dims, v.shape):
                if axis in self.dims and axis not in inferred:
                    inferred[axis] = extent
        for name, value in inferred.items():
            _lib.check(_lib.lib.etlBindDim(self._prog, name.encode(), value))
        for p, v in views:
            shape = (_c.c_int64 * max(1, len(v.shape)))(*v.shape)
            _lib.check(_lib.lib.etlBindTensor(self._prog, p.name.encode(), _c.c_void_p(v.ptr),
                                              v.dtype, len(v.shape), shape))
            self._bound[p.name] = v  # alive while the runtime may use the pointer
        for name, (value, code) in values:
            _lib.check(_lib.lib.etlBindScalar(self._prog, name.encode(), code,
                                              _c.byref(value)))
        if trace != self._trace:
            _lib.check(_lib.lib.etlProgramSetTimeline(
                self._prog, trace.encode() if trace else None))
            self._trace = trace
        if profile != self._profile:
            _lib.check(_lib.lib.etlProgramSetProfile(
                self._prog, profile.encode() if profile else None))
            self._profile = profile
        if not self.is_gpu:
            _lib.check(_lib.lib.etlProgramSetRaceCheck(self._prog, 1 if race_check else 0))
        elif race_check:
            raise errors.InvalidValueError("race_check runs on the sim device only")
        if not self.is_gpu and stream is None:
            _lib.check(_lib.lib.etlRun(self._prog))
            return
        if not self.is_gpu:  # the runtime refuses a stream on sim, with its message
            handle = self._stream(stream)
        self._inflight = None  # etlRunAsync finishes (or reports) the previous run first
        _lib.check(_lib.lib.etlRunAsync(self._prog, _c.c_void_p(handle or None)))
        self._inflight = views  # the tensors stay alive while the kernel may use them

    @staticmethod
    def _stream(stream):
        """The CUstream handle (an int, 0 = the NULL stream) to run on."""
        if stream is None:
            cuda = _torch_cuda()
            return cuda.current_stream().cuda_stream if cuda is not None else 0
        handle = getattr(stream, "cuda_stream", stream)  # torch.cuda.Stream
        if isinstance(handle, bool) or not isinstance(handle, int) or handle < 0:
            raise errors.InvalidValueError("stream=%r: a CUstream handle (int) or a "
                                           "torch.cuda.Stream is expected" % (stream,))
        return handle

    def _check_view(self, p, v, stream):
        if p.written and v.read_only:
            raise errors.ReadOnlyError(
                "tensor '%s': the program writes it in place, but the %s is %s" %
                (p.name, v.what, v.read_only))
        if _tensors.NAMES[v.dtype] != p.dtype:
            raise errors.DTypeError("tensor '%s' is %s, the %s holds %s" %
                                    (p.name, p.dtype, v.what, _tensors.NAMES[v.dtype]))
        if len(v.shape) != p.rank:
            raise errors.BindingError("tensor '%s' has rank %d ([%s]), the %s has rank %d" %
                                      (p.name, p.rank, ", ".join(p.dims), v.what, len(v.shape)))
        if v.device == "cpu" and self.is_gpu:
            raise errors.DeviceMismatchError(
                "tensor '%s' is a %s in host memory, but the program runs on %s: pass CUDA "
                "memory (e.g. tensor.cuda()) or load with device='sim'" %
                (p.name, v.what, self.device))
        if (v.device == "cuda" and self.is_gpu and v.device_index is not None and
                v.device_index != self.cuda_device):
            raise errors.DeviceMismatchError(
                "tensor '%s' is a %s on CUDA device %d, but the program runs on device %d "
                "(load with cuda_device=%d)" % (p.name, v.what, v.device_index,
                                                self.cuda_device, v.device_index))
        # __cuda_array_interface__ v3: the producer's stream must be ours (1 and 2 are the
        # legacy and per-thread default streams; the legacy one orders with the NULL stream)
        if (v.stream is not None and v.stream != stream and
                not (v.stream in (1, 2) and stream == 0)):
            raise errors.StreamMismatchError(
                "tensor '%s': the %s was produced on stream %#x, but the program runs on "
                "stream %#x: synchronize it first, or pass stream=%#x" %
                (p.name, v.what, v.stream, stream, v.stream))
        if v.device == "cuda" and not self.is_gpu:
            raise errors.DeviceMismatchError(
                "tensor '%s' is a %s in CUDA memory, but the program runs on %s: pass host "
                "memory (e.g. tensor.cpu()) or load with device='cuda'" %
                (p.name, v.what, self.device))
