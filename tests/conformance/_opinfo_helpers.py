"""Helpers for test_opinfo.py: find tracegrad's counterpart of a torch OpInfo's callable, carry
OpInfo samples over to tracegrad, run both libraries and compare what they return.

The counterpart is looked up by name at collection time (``getattr`` on tracegrad), so an op added
to tracegrad later is picked up without touching this file."""
from __future__ import annotations

import dataclasses
import dis
import types

import numpy as np
import torch

import tracegrad

# torch namespace -> tracegrad namespace, for OpInfo names ("nn.functional.relu") and for the
# globals of OpInfo's own lambdas ("lambda x: torch.linalg.norm(x)").
_MODULES = {
    torch: tracegrad,
    torch.nn: tracegrad.nn,
    torch.nn.functional: tracegrad.nn.functional,
    torch.linalg: tracegrad.linalg,
    torch.special: tracegrad.special,
    torch.fft: tracegrad.fft,
}


class Unsupported(Exception):
    """A sample holds something with no tracegrad counterpart (a dtype, a Generator, a layout)."""


def _walk(root, dotted):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _lambda_refs(code):
    """Dotted names a function's code (nested lambdas included) reads from its globals
    (``torch.linalg.norm``), and every other attribute name it reads (``x.clone().resize_``)."""
    refs, attrs = [], []
    chain = None
    for ins in dis.get_instructions(code):
        if ins.opname == "LOAD_GLOBAL":
            chain = [ins.argval]
            refs.append(chain)
        elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD"):
            (chain if chain is not None else attrs).append(ins.argval)
        else:
            chain = None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            r, a = _lambda_refs(const)
            refs += r
            attrs += a
    return refs, attrs


def _counterpart(obj):
    """tracegrad's object of the same name as the public torch function ``obj``, else None."""
    for mod, tg_mod in _MODULES.items():
        name = getattr(obj, "__name__", None)
        if name and getattr(mod, name, None) is obj:
            return getattr(tg_mod, name, None)
    return None


# OpInfo helpers that only call the function they are given (and seed torch's generator)
_PASS_THROUGH = ("wrapper_set_seed",)


def _rebind(fn, seen):
    """OpInfo's own Python function ``fn`` (a lambda or a helper) re-created with torch's namespaces
    in its globals swapped for tracegrad's and its OpInfo helpers rebound the same way; or the
    first name tracegrad lacks (a str)."""
    if fn in seen:
        return seen[fn]
    glb = {name: _MODULES.get(val, val) if isinstance(val, types.ModuleType) else val
           for name, val in fn.__globals__.items()}
    cells = []
    for cell in fn.__closure__ or ():
        val = cell.cell_contents
        if callable(val) and getattr(val, "__module__", "") and val.__module__.startswith("torch") \
                and not val.__module__.startswith("torch.testing"):
            val = _counterpart(val)
            if val is None:
                return f"{cell.cell_contents} (captured by an OpInfo lambda)"
        cells.append(types.CellType(val))
    new = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, tuple(cells) or None)
    seen[fn] = new
    refs, methods = _lambda_refs(fn.__code__)
    for chain in refs:
        root = fn.__globals__.get(chain[0])
        if isinstance(root, types.ModuleType):
            if root in _MODULES and len(chain) > 1 and _walk(_MODULES[root], ".".join(chain[1:])) is None:
                return f"{root.__name__}.{'.'.join(chain[1:])}"
        elif isinstance(root, types.FunctionType) and root.__module__.startswith("torch.testing"):
            if root.__name__ in _PASS_THROUGH:
                continue
            sub = _rebind(root, seen)
            if isinstance(sub, str):
                return sub
            glb[chain[0]] = sub
        elif callable(root) and getattr(root, "__module__", "").startswith("torch"):
            return f"{chain[0]} (a torch callable read directly)"
    for m in methods if fn.__name__ == "<lambda>" else ():
        if hasattr(torch.Tensor, m) and not hasattr(tracegrad.Tensor, m):
            return f"Tensor.{m}"
    return new


def resolve(op):
    """``(callable, None)`` for tracegrad's counterpart of ``op.op``, or ``(None, what_is_missing)``;
    ``(None, None)`` for callables outside the public torch API (aten overloads, CUDA jiterator)."""
    fn = op.op
    if any(part.startswith("_") or part == "ops" for part in op.name.split(".")):
        return None, None
    named = _walk(torch, op.name)
    if named is not None and named is fn:
        tg = _walk(tracegrad, op.name)
        return (tg, None) if tg is not None else (None, "torch." + op.name)
    name = getattr(fn, "__name__", "")
    if getattr(torch.Tensor, name, None) is fn:
        tg = getattr(tracegrad.Tensor, name, None)
        return (tg, None) if tg is not None else (None, "Tensor." + name)
    if isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing"):
        out = _rebind(fn, {})
        return (out, None) if callable(out) else (None, out)
    return None, None


# --- carrying samples over ---------------------------------------------------------------------

def _tg_dtype(dt):
    tg = getattr(tracegrad, str(dt).split(".")[-1], None)
    if tg is None:
        raise Unsupported(f"tracegrad has no dtype {dt}")
    return tg


class Carrier:
    """Converts torch values to tracegrad ones; each torch tensor object maps to one tracegrad
    tensor (an input passed twice stays one input), requiring grad where torch's does."""

    def __init__(self, grad=False, sparse=False):
        self.grad = grad
        self.sparse = sparse   # carry sparse COO tensors (as tracegrad.sparse_coo_tensor) too
        self.memo = {}
        self.leaves = []   # (torch tensor, tracegrad tensor) pairs that require grad

    def __call__(self, x):
        if isinstance(x, torch.Tensor):
            key = id(x)
            if key not in self.memo and self.sparse and x.layout == torch.sparse_coo:
                # the parts are temporaries (their ids are reused): carried outside the memo
                parts = [Carrier()(p) for p in (x._indices(), x._values())]
                self.memo[key] = tracegrad.sparse_coo_tensor(*parts, tuple(x.shape), is_coalesced=x.is_coalesced())
            if key not in self.memo:
                if x.layout != torch.strided or x.is_quantized or x.is_conj() or x.is_neg():
                    raise Unsupported("sparse, quantized or lazily conjugated tensor")
                if x.device.type != "cpu":
                    raise Unsupported(f"a tensor on the {x.device.type} device (no values to carry over)")
                if x.dim() > 32:
                    raise Unsupported(f"{x.dim()}-d tensor (numpy holds at most 64 dimensions)")
                v = x.detach().resolve_conj()
                a = v.float().numpy() if v.dtype == torch.bfloat16 else v.numpy()   # numpy has no bfloat16
                t = tracegrad.tensor(a.copy(), dtype=_tg_dtype(x.dtype))
                if self.grad and x.requires_grad:
                    t.requires_grad_(True)
                    self.leaves.append((x, t))
                self.memo[key] = t
            return self.memo[key]
        if isinstance(x, torch.dtype):
            return _tg_dtype(x)
        if isinstance(x, torch.device):
            return str(x)
        if isinstance(x, (torch.Generator, torch.memory_format, torch.layout)):
            raise Unsupported(f"argument of type {type(x).__name__}")
        if isinstance(x, torch.Size):
            return tuple(x)
        if callable(x) and getattr(x, "__module__", "").startswith("torch") and not isinstance(x, type):
            tg = _counterpart(x)   # a torch function passed as an argument (distance_function=...)
            if tg is None:
                raise Unsupported(f"argument {x!r}")
            return tg
        if dataclasses.is_dataclass(x) and not isinstance(x, type) and type(x).__module__.startswith("torch"):
            # a torch options object (nn.LinearCrossEntropyOptions): tracegrad's own class of the
            # same name, with the fields carried over, as a tracegrad user would build it
            cls = _counterpart(type(x))
            if cls is None:
                raise Unsupported(f"argument of type {type(x).__name__}")
            return cls(**{f.name: self(getattr(x, f.name)) for f in dataclasses.fields(x) if f.init})
        if isinstance(x, (list, tuple)):
            out = [self(v) for v in x]
            return type(x)(out) if type(x) in (list, tuple) else tuple(out)
        if isinstance(x, dict):
            return {k: self(v) for k, v in x.items()}
        return x


def carries_over(sample):
    """Whether tracegrad can take the sample: every value converts, and no ``out=`` (checked
    separately, by test_out_functions.py)."""
    if "out" in sample.kwargs:
        return False
    try:
        Carrier()((sample.input, sample.args, sample.kwargs))
    except Unsupported:
        return False
    return True


def call(fn, sample, carry=None):
    """``fn(input, *args, **kwargs)`` on the sample, carried over by ``carry`` when given."""
    c = carry or (lambda v: v)
    return fn(c(sample.input), *c(tuple(sample.args)), **c(dict(sample.kwargs)))


def flat(x):
    """Tensors and Python values of a (nested) op result, in order."""
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in flat(item)]
    return [x]


def _np(t):
    return np.array(t.detach().numpy())


def tg_to_torch(t):
    a = _np(t)
    if a.dtype.name == "bfloat16":   # numpy holds it through ml_dtypes; torch.from_numpy does not
        return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(a)


def assert_same(tg, ref, tol, *, values=True, where="result"):
    """tracegrad's ``tg`` equals torch's ``ref``: same structure, shapes, dtypes and (unless
    ``values`` is False, for random ops) the same values, NaNs in the same places. ``tol`` maps
    torch's floating/complex dtypes to ``dict(rtol=, atol=)``; other dtypes compare exactly."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(tg, tracegrad.Tensor), f"{where}: tracegrad gave {type(tg).__name__}, torch a Tensor"
        assert tuple(tg.shape) == tuple(ref.shape), f"{where}: shape {tuple(tg.shape)} != torch {tuple(ref.shape)}"
        assert str(tg.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], \
            f"{where}: dtype {tg.dtype} != torch {ref.dtype}"
        if values:
            torch.testing.assert_close(tg_to_torch(tg), ref.detach().resolve_conj(), equal_nan=True,
                                       check_dtype=False, msg=lambda m: f"{where}: {m}",
                                       **tol.get(ref.dtype, dict(rtol=0, atol=0)))
    elif isinstance(ref, (list, tuple)):
        assert isinstance(tg, (list, tuple)), f"{where}: tracegrad gave {type(tg).__name__}, torch a sequence"
        assert len(tg) == len(ref), f"{where}: {len(tg)} items != torch {len(ref)}"
        for i, (a, b) in enumerate(zip(tg, ref)):
            assert_same(a, b, tol, values=values, where=f"{where}[{i}]")
    elif isinstance(ref, (bool, int, float, complex)) and not isinstance(tg, tracegrad.Tensor):
        assert type(tg) is type(ref) or (isinstance(tg, (int, float)) and type(ref) is float), \
            f"{where}: {type(tg).__name__} != torch {type(ref).__name__}"
        if values:
            assert np.isclose(tg, ref, equal_nan=True, **tol[torch.float64]), f"{where}: {tg} != torch {ref}"
    elif values:
        assert tg == ref, f"{where}: {tg!r} != torch {ref!r}"


def assert_tie_indices(tg_idx, ref, sample, dim_pos, *, keepdim=False, where="indices"):
    """tracegrad's indices ``tg_idx`` of a (values, indices) reduction along ``dim`` have the shape
    and dtype of torch's and pick, from the sample's input, torch's values ``ref[0]`` (NaN where
    torch's is NaN): the index among equal values is free. ``dim`` (default -1) and ``keepdim``
    (default ``keepdim``) are read from the sample's args at ``dim_pos``, ``dim_pos + 1`` or its
    kwargs."""
    assert_same(tg_idx, ref[1], {}, values=False, where=where)
    args = list(sample.args)
    dim = args[dim_pos] if len(args) > dim_pos else sample.kwargs.get("dim", -1)
    keep = args[dim_pos + 1] if len(args) > dim_pos + 1 else sample.kwargs.get("keepdim", keepdim)
    x, idx = sample.input.detach(), tg_to_torch(tg_idx)
    if x.dim() == 0:
        assert not idx.any(), f"{where}: index {idx} into a 0-d input"
        picked = x.expand(idx.shape)
    else:
        assert ((idx >= 0) & (idx < x.shape[dim])).all(), f"{where}: index out of range: {idx}"
        picked = x.gather(dim, idx if keep else idx.unsqueeze(dim))
        picked = picked if keep else picked.squeeze(dim)
    torch.testing.assert_close(picked, ref[0].detach(), rtol=0, atol=0, equal_nan=True,
                               msg=lambda m: f"{where}: the indices do not pick torch's values: {m}")


def seed_torch(seed):
    """``torch.manual_seed`` for CPU torch at a fraction of its cost: CPU torch's only generator
    is seeded the same way, without ``manual_seed``'s lazy seeds for accelerator backends (each
    formats the whole Python stack: ~4 ms a call under pytest, thousands of calls here)."""
    torch.default_generator.manual_seed(seed)


def is_random(fn, sample):
    """Whether torch's op draws random numbers on this sample: OpInfo wraps such ops in its
    ``wrapper_set_seed``; otherwise two seeds give two results."""
    if "wrapper_set_seed" in getattr(getattr(fn, "__code__", None), "co_names", ()):
        return True
    outs = []
    for seed in (0, 1):
        seed_torch(seed)
        outs.append(flat(call(fn, sample)))
    try:
        torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=0, equal_nan=True)
    except AssertionError:
        return True
    return False


def cotangents(outs, seed=0):
    """Fixed random cotangents, one per output."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(o.shape, generator=g, dtype=torch.float64).to(o.dtype) for o in outs]
