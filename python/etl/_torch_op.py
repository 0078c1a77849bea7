"""etl.torch_op: a loaded program as one torch.library custom operator.

The call convention (why: a functional op is what torch.compile, FakeTensor
tracing and autograd handle without special cases, and only a functional
op's outputs need shape inference):

- the tensors the kernel only reads (``Param.written`` False) are the op's
  tensor arguments, in declaration order; it reads them (a non-contiguous
  one is copied with ``.contiguous()`` first, a tensor that requires grad is
  fine);
- the tensors the kernel writes are *outputs*: the op allocates them
  (``torch.empty``, uninitialised, on the inputs' device) with the shapes the
  artifact gives them at the call's dims, runs the program and returns them
  (one tensor, or a tuple in declaration order);
- a written tensor named in ``inplace=`` (one the kernel reads before
  writing, or writes only in part: a KV cache, a state advanced each step)
  is an argument instead, in declaration order among the read ones,
  mutated in place and declared so in the schema (``Tensor(a!)``), and not
  returned;
- scalar parameters follow as ``float`` (f32/f16/bf16) or ``int``
  arguments, then every dim that is not the extent of some tensor
  argument's axis, as an ``int`` argument (``K`` of examples/moe).

Shape inference (the FakeTensor kernel: ``torch.library.register_fake``,
else ``impl_abstract``, else a ``Meta`` kernel on torch 1.x) reads the dims
from the tensor arguments' shapes and asks the runtime for each output's
extents (``etlProgramTensorShape``), so ``torch.compile`` and make_fx see
the outputs' shapes without running anything. The op has no backward.
"""
import os
import re

import torch

from . import _lib, _tensors, errors

_c = _lib._c

# ETL dtype name -> torch dtype attribute, from _tensors' table (u16/u32 and
# the fp8 types exist in newer torch only)
_TORCH_DTYPES = {_tensors.NAMES[code]: key.split(".", 1)[1] for key, code in _tensors._TORCH.items()}
_FLOAT_SCALARS = ("f32", "f16", "bf16")

_NAMESPACE = "etl"
_library = None  # one torch.library.Library("etl", "DEF") for the process
_ops = {}  # op name -> _Op: the programs stay alive while torch may call them


def _torch_dtype(p):
    dtype = getattr(torch, _TORCH_DTYPES.get(p.dtype, "?"), None)
    if not isinstance(dtype, torch.dtype):
        raise errors.DTypeError("etl.torch_op: tensor '%s' is %s, which torch %s has no dtype for"
                                % (p.name, p.dtype, torch.__version__))
    return dtype


class _Op:
    """The op's argument layout and its two kernels (real and fake)."""

    def __init__(self, prog, name, inplace):
        self.prog, self.name = prog, name
        tensors = [p for p in prog.params if p.kind == "tensor"]
        self.index = {p.name: i for i, p in enumerate(tensors)}  # etlProgramTensorShape's
        self.inputs = [p for p in tensors if not p.written or p.name in inplace]
        self.outputs = [p for p in tensors if p.written and p.name not in inplace]
        self.scalars = [p for p in prog.params if p.kind == "scalar"]
        for p in tensors:
            _torch_dtype(p)  # raises now, not at the first call
        known = {d for p in self.inputs for d in p.dims}
        self.dim_args = [d for d in prog.dims if d not in known]
        self.arg_names = ([p.name for p in self.inputs] + [p.name for p in self.scalars] +
                          self.dim_args)
        args, alias = [], iter("abcdefghijklmnopqrstuvwxyz")
        for p in self.inputs:
            args.append("Tensor(%s!) %s" % (next(alias), p.name) if p.written else
                        "Tensor " + p.name)
        args += ["%s %s" % ("float" if p.dtype in _FLOAT_SCALARS else "int", p.name)
                 for p in self.scalars]
        args += ["int " + d for d in self.dim_args]
        ret = ("Tensor" if len(self.outputs) == 1 else
               "(%s)" % ", ".join("Tensor" for _ in self.outputs))
        self.schema = "%s(%s) -> %s" % (name, ", ".join(args), ret)

    def _what(self):
        return "etl op %s::%s" % (_NAMESPACE, self.name)

    def _dims(self, kw):
        """The call's dims: from the tensor arguments' axes, then the int ones."""
        dims, source = {}, {}
        for p in self.inputs:
            t = kw[p.name]
            if t.dtype != _torch_dtype(p):
                raise errors.DTypeError("%s: tensor '%s' must be %s (the program's %s), not %s" %
                                        (self._what(), p.name, _torch_dtype(p), p.dtype, t.dtype))
            if t.dim() != p.rank:
                raise errors.BindingError(
                    "%s: tensor '%s' has %d dimensions (shape %s), the program's [%s] has %d" %
                    (self._what(), p.name, t.dim(), tuple(t.shape), ", ".join(p.dims), p.rank))
            for axis, extent in zip(p.dims, t.shape):
                if axis not in self.prog.dims:
                    continue
                extent = int(extent)  # a SymInt under dynamic shapes: specialised
                if axis in dims and dims[axis] != extent:
                    raise errors.BindingError(
                        "%s: dim %s is %d in tensor '%s' but %d in tensor '%s'" %
                        (self._what(), axis, dims[axis], source[axis], extent, p.name))
                dims[axis], source[axis] = extent, p.name
        for d in self.dim_args:
            v = kw[d]
            if isinstance(v, bool) or int(v) < 1:
                raise errors.InvalidValueError("%s: dim %s = %r: a positive int is expected" %
                                               (self._what(), d, v))
            dims[d] = int(v)
        return dims

    def _output_shapes(self, dims):
        prog = self.prog
        if prog._prog is None:
            raise errors.InvalidHandleError("%s: its program was closed" % self._what())
        for name, value in dims.items():
            _lib.check(_lib.lib.etlBindDim(prog._prog, name.encode(), value))
        shapes = []
        for p in self.outputs:
            shape = (_c.c_int64 * max(1, p.rank))()
            _lib.check(_lib.lib.etlProgramTensorShape(prog._prog, self.index[p.name], shape))
            shapes.append(tuple(shape[:p.rank]))
        return shapes

    def _device(self, kw):
        for p in self.inputs:
            return kw[p.name].device
        if self.prog.is_gpu:
            return torch.device("cuda", self.prog.cuda_device)
        return torch.device("cpu")

    def _result(self, outs):
        if not outs:  # every written tensor in place: the schema returns ()
            return None
        if len(outs) == 1:
            return outs[0]
        return tuple(outs)

    def fake(self, *args):
        """Shape inference: empty outputs of the shapes a run would give."""
        kw = dict(zip(self.arg_names, args))
        shapes = self._output_shapes(self._dims(kw))
        device = self._device(kw)
        return self._result([torch.empty(s, dtype=_torch_dtype(p), device=device)
                             for p, s in zip(self.outputs, shapes)])

    def run(self, *args):
        """The real kernel: allocate the outputs, bind everything, run."""
        kw = dict(zip(self.arg_names, args))
        dims = self._dims(kw)
        shapes = self._output_shapes(dims)
        device = self._device(kw)
        outs = [torch.empty(s, dtype=_torch_dtype(p), device=device)
                for p, s in zip(self.outputs, shapes)]
        call = {p.name: (kw[p.name] if p.written else kw[p.name].contiguous())
                for p in self.inputs}
        call.update(zip((p.name for p in self.outputs), outs))
        call.update((p.name, kw[p.name]) for p in self.scalars)
        call.update(dims)
        self.prog.run(**call)
        return self._result(outs)


def _default_name(prog):
    stem = re.sub(r"\W", "_", os.path.basename(prog.path).split(".")[0]) or "program"
    return "_" + stem if stem[0].isdigit() else stem


def torch_op(prog, name=None, inplace=()):
    """See etl.torch_op."""
    global _library
    from . import Program  # the package's, imported lazily (no cycle at import time)
    if not isinstance(prog, Program):
        raise TypeError("etl.torch_op: prog must be an etl.Program (from etl.load or "
                        "etl.compile), not %s" % type(prog).__name__)
    if prog._prog is None:
        raise errors.InvalidHandleError("etl.torch_op: the program was closed")
    if isinstance(inplace, str):
        inplace = (inplace,)
    inplace = tuple(inplace)
    written = [p.name for p in prog.params if p.kind == "tensor" and p.written]
    for n in inplace:
        if n not in written:
            raise errors.NotFoundError(
                "etl.torch_op: inplace=%r: '%s' is not a tensor the program writes "
                "(written tensors: %s)" % (inplace, n, ", ".join(written) or "none"))
    if name is None:
        base, name, k = _default_name(prog), _default_name(prog), 1
        while name in _ops:
            k += 1
            name = "%s_%d" % (base, k)
    elif not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise errors.InvalidValueError("etl.torch_op: name=%r: an identifier is expected "
                                       "(letters, digits, _)" % (name,))
    elif name in _ops:
        raise errors.InvalidValueError("etl.torch_op: an op etl::%s exists already "
                                       "(give another name=)" % name)
    op = _Op(prog, name, inplace)
    if _library is None:
        _library = torch.library.Library(_NAMESPACE, "DEF")
    try:
        _library.define(op.schema)
    except RuntimeError as e:  # a parameter name torch's schemas reserve (None, True)
        raise errors.InvalidValueError("etl.torch_op: torch cannot declare %s: %s" %
                                       (op.schema, str(e).splitlines()[0])) from None
    for key in ("CPU", "CUDA"):
        _library.impl(name, op.run, key)
    qualname = "%s::%s" % (_NAMESPACE, name)
    if hasattr(torch.library, "register_fake"):  # torch >= 2.4
        torch.library.register_fake(qualname, op.fake, lib=_library)
    elif hasattr(torch.library, "impl_abstract"):  # torch 2.1 .. 2.3
        torch.library.impl_abstract(qualname, op.fake, lib=_library)
    else:  # torch 1.x: FakeTensorMode runs the Meta kernel
        _library.impl(name, op.fake, "Meta")
    _ops[name] = op
    return getattr(getattr(torch.ops, _NAMESPACE), name).default
