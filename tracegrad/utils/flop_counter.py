"""``tracegrad.utils.flop_counter``: mirrors ``torch.utils.flop_counter`` -- ``FlopCounterMode``
counts the floating-point operations of the matrix products and convolutions a block of code
runs, forward and backward, per module.

torch counts at the level of its ATen kernels (``aten.mm``, ``aten.addmm``, ``aten.bmm``,
``aten.convolution``, ``aten.convolution_backward``...) with its published formulas (a product
of ``m x k`` and ``k x n`` is ``2 m k n``; only multiply-adds of products and convolutions
count, elementwise ops count nothing). tracegrad's ops are coarser (one ``matmul`` op for every
batched product, one VJP per backward node), so each op is mapped onto the kernels torch would
have run for it (NOTE [torch's kernels]): the totals and the per-kernel keys come out as
torch's. The mode sits in the dispatch slot the profiler uses (NOTE [interposer] in
``_state.py``) and hands every op on to a running profiler; compiled functions run eagerly
inside it, so their ops are counted too.

Differs from torch: ``scaled_dot_product_attention`` counts its two products (``aten.bmm``),
as torch counts its fused attention kernels on a GPU (torch's CPU kernel is not counted).
"""
from __future__ import annotations

import math
import weakref
from collections import defaultdict

from .. import _state
from ..autograd import _dispatch
from .._ops.registry import CONST
from ..autograd._dispatch import _input_shape
from .._ops.warn import warn as _warn

__all__ = ["FlopCounterMode", "register_flop_formula"]

# user formulas (``register_flop_formula``): op name -> f(*arg shapes, out_shape=...)
flop_registry: dict = {}


def register_flop_formula(targets, get_raw=False):
    """Mirrors ``torch.utils.flop_counter.register_flop_formula``: a decorator registering a
    formula for the ops ``targets`` (``tracegrad.ops.<namespace>.<name>`` or a list of them).
    The formula gets the op's arguments as shapes (tensors) or values, and ``out_shape``; with
    ``get_raw=True`` the tensors themselves and ``out_val``. RuntimeError for an op registered
    twice."""
    def register(formula):
        for target in targets if isinstance(targets, (list, tuple)) else (targets,):
            name = _op_name(target)
            if name in flop_registry:
                raise RuntimeError(f"duplicate registrations for {target}")
            flop_registry[name] = (formula, get_raw)
        return formula
    return register


def _op_name(target) -> str:
    """The name an op is counted under: ``tracegrad.ops.aten.mm`` -> "mm", a custom op
    ``ns::name`` (or its ``tracegrad.ops.ns.name``) -> "name"."""
    name = getattr(target, "_name", None)
    if not isinstance(name, str):
        name = str.__str__(target) if isinstance(target, str) else getattr(target, "__name__", str(target))
    return name.split("::")[-1].split(".")[0]


# ---- torch's formulas -----------------------------------------------------------------------

def _mm(m, k, n):
    return 2 * m * k * n


def conv_flop_count(x_shape, w_shape, out_shape, transposed=False) -> int:
    """torch's count for a convolution: ``2 * batch * prod(spatial) * prod(filter) * c_out * c_in``,
    the spatial size taken from the output (from the input when ``transposed``); shapes in
    torch's layouts, bias not counted."""
    batch = x_shape[0]
    spatial = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filt = w_shape
    return math.prod(spatial) * math.prod(filt) * batch * c_out * c_in * 2


def _swap01(shape):
    return (shape[1], shape[0], *shape[2:])


def conv_backward_flop_count(grad_out_shape, x_shape, w_shape, transposed, need_input, need_weight) -> int:
    """torch's count for ``aten.convolution_backward``: the input's gradient as a (transposed)
    convolution of the output's gradient with the weight, the weight's as a convolution of the
    input with the output's gradient (batch and channel dims swapped)."""
    flops = 0
    if need_input:
        flops += conv_flop_count(grad_out_shape, w_shape, x_shape, not transposed)
    if need_weight:
        if transposed:
            flops += conv_flop_count(_swap01(grad_out_shape), _swap01(x_shape), _swap01(w_shape))
        else:
            flops += conv_flop_count(_swap01(x_shape), _swap01(grad_out_shape), _swap01(w_shape))
    return flops


# NOTE [torch's kernels]
# What torch runs for each tracegrad op, as (kernel name, flops) per forward, and per backward
# node the kernels of its VJP for the inputs that need a gradient:
# - mm, addmm, baddbmm (the added input not counted), bmm: themselves; their backward: one mm/bmm
#   per product operand needing a gradient (the added input's gradient is a sum), each of the
#   forward's size;
# - matmul with batch dims: ``aten.bmm`` when both operands have 3+ dims or the first is a
#   matrix (torch broadcasts and batches them), ``aten.mm`` when the second is a matrix (torch
#   folds the batch into rows), nothing with a vector operand (torch's mv/dot are not counted),
#   except vector @ matrix, an ``aten.mm`` of one row;
# - einsum: torch contracts operands left to right, summing out labels no later operand and
#   not the output needs; a step with a contracted label is one ``aten.bmm`` of
#   ``2 * prod(sizes of the labels involved)`` (a step without one is a mul: nothing), and its
#   backward one bmm per side needing a gradient (the running result needs one when any
#   operand before it does);
# - convolution / ``aten.convolution_backward``: torch's formulas above.

def _matmul_kernel(a_shape, b_shape, a_rg=False, b_rg=False, a_dense=True):
    """(kernel, flops) torch counts for ``matmul`` of these shapes (kernel None: not counted).
    ``a_rg``/``b_rg``: whether the operands require grad and ``a_dense`` whether the first one's
    batch dims can be flattened without a copy: they decide, as in torch's ``should_fold``,
    whether the batch folds into the rows of one mm (or an mv) or runs as a bmm."""
    da, db = len(a_shape), len(b_shape)
    if db == 1 and da <= 2:
        return None, 0                       # dot, mv
    if da <= 2 and db == 2:
        m = 1 if da == 1 else a_shape[0]
        return "mm", _mm(m, a_shape[-1], b_shape[1])
    first_larger = da >= db
    small = db if first_larger else da
    fold = False
    if max(da, db) >= 3 and small <= 2:
        if b_rg if first_larger else a_rg:
            fold = True
        elif da != 2:
            # the larger operand flattened: the first as it is, the second transposed (never
            # flat without a copy unless trivially)
            fold = a_dense if first_larger else False
    m = 1 if da == 1 else a_shape[-2]
    k = a_shape[-1]
    n = 1 if db == 1 else b_shape[-1]
    batch = math.prod(max(x, y) for x, y in _batch_pairs(a_shape[:-2], b_shape[:-2]))
    if fold:
        return (None, 0) if small == 1 else ("mm", _mm(batch * m, k, n))
    return "bmm", _mm(batch * m, k, n)


def _batch_pairs(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return zip(a, b)


def _einsum_steps(equation, shapes):
    """The left-to-right contraction steps torch's einsum runs: one flop count per step (0 for
    a step that contracts nothing)."""
    lhs, _, out = equation.partition("->")
    ops = lhs.split(",")
    ell = max((len(s) - len(t.replace("...", "")) for t, s in zip(ops, shapes) if "..." in t), default=0)
    ell_labels = [chr(0x2460 + i) for i in range(ell)]    # stand-ins for the ellipsis dims
    labels, sizes = [], {}
    for term, shape in zip(ops, shapes):
        n_ell = len(shape) - len(term.replace("...", ""))
        ls = list(term.replace("...", "".join(ell_labels[ell - n_ell:]))) if "..." in term else list(term)
        labels.append(ls)
        for lab, size in zip(ls, shape):
            sizes[lab] = max(sizes.get(lab, 1), size)
    if "->" in equation:
        out_labels = set(out.replace("...", "".join(ell_labels)))
    else:   # implicit output: the labels used once, and the ellipsis
        counts = defaultdict(int)
        for ls in labels:
            for lab in ls:
                counts[lab] += 1
        out_labels = {lab for lab, c in counts.items() if c == 1} | set(ell_labels)
    steps = []
    current = set(labels[0])
    for i in range(1, len(labels)):
        right = set(labels[i])
        later = set().union(*map(set, labels[i + 1:])) | out_labels
        left = {lab for lab in current if lab in later or lab in right}     # summed out before
        right = {lab for lab in right if lab in later or lab in left}
        contracted = (left & right) - later
        involved = left | right
        steps.append(2 * math.prod(sizes[lab] for lab in involved) if contracted else 0)
        current = involved & later
    return steps


def _forward_counts(op, args, static, out):
    """[(kernel, flops)] torch counts for one forward op."""
    name = op.name
    shapes = [tuple(a.shape) if hasattr(a, "shape") else None for a in args]
    if name == "mm":
        return [("mm", _mm(shapes[0][0], shapes[0][1], shapes[1][1]))]
    if name == "addmm":
        return [("addmm", _mm(shapes[1][0], shapes[1][1], shapes[2][1]))]
    if name == "bmm":
        b, m, k = shapes[0]
        return [("bmm", b * _mm(m, k, shapes[1][2]))]
    if name == "baddbmm":   # the batched product of batch1 and batch2 (the added input not counted)
        b, m, k = shapes[1]
        return [("baddbmm", b * _mm(m, k, shapes[2][2]))]
    if name in ("matmul", "matmul_clone", "matmul_squeeze"):
        a, b = args[0], args[1]
        kernel, flops = _matmul_kernel(shapes[0], shapes[1], a.requires_grad, b.requires_grad,
                                       a.ndim < 3 or a.is_contiguous())
        return [(kernel, flops)] if kernel else []
    if name == "einsum":
        steps = _einsum_steps(dict(static)["equation"], [s for s in shapes if s is not None])
        return [("bmm", f) for f in steps if f]
    if name == "convolution":
        st = dict(static)
        return [("convolution", conv_flop_count(shapes[0], shapes[1], tuple(out.shape), st["transposed"]))]
    return []


def _backward_counts(node, grads, forward=None):
    """[(kernel, flops)] torch counts for the backward of one recorded op node (``forward``:
    what its forward counted, when the mode saw it)."""
    op = node.op
    name = op.name
    if name not in _COUNTED:
        return []
    layout = node.layout
    need, k = {}, 0
    for p, kind in enumerate(layout.kinds):
        if kind != CONST:    # constants have no ``needs`` entry
            need[p] = bool(layout.needs[k])
            k += 1
    shape = lambda p: _input_shape(node, p)  # noqa: E731
    if name in ("mm", "bmm", "addmm", "baddbmm", "matmul", "matmul_clone", "matmul_squeeze"):
        a, b = (1, 2) if name in ("addmm", "baddbmm") else (0, 1)
        if name == "addmm":
            kernel, flops = "mm", _mm(shape(1)[0], shape(1)[1], shape(2)[1])
        elif name == "baddbmm":   # torch's backward: one bmm per batch operand needing a gradient
            (bs, m, kk), n = shape(1), shape(2)[2]
            kernel, flops = "bmm", bs * _mm(m, kk, n)
        elif name == "mm":
            kernel, flops = "mm", _mm(*shape(0), shape(1)[1])
        elif name == "bmm":
            (bs, m, kk), n = shape(0), shape(1)[2]
            kernel, flops = "bmm", bs * _mm(m, kk, n)
        else:
            kernel, flops = _matmul_kernel(shape(0), shape(1), need.get(0, False), need.get(1, False))
            if forward is not None:   # as torch chose it in the forward (it depends on layouts)
                kernel, flops = forward[0] if forward else (None, 0)
            if kernel is None:
                return []
        return [(kernel, flops)] * (need.get(a, False) + need.get(b, False))
    if name == "einsum":
        shapes = [shape(p) for p in range(len(layout.kinds))]
        steps = _einsum_steps(dict(node.static)["equation"], shapes)
        counts, running = [], need.get(0, False)
        for i, flops in enumerate(steps):
            right = need.get(i + 1, False)
            if flops:
                counts += [("bmm", flops)] * (running + right)
            running = running or right
        return counts
    # convolution
    st = dict(node.static)
    g = next(x for x in grads if x is not None)
    flops = conv_backward_flop_count(tuple(g.shape), shape(0), shape(1), st["transposed"],
                                     need.get(0, False), need.get(1, False))
    return [("convolution_backward", flops)] if flops else []


_COUNTED = frozenset(("mm", "addmm", "bmm", "baddbmm", "matmul", "matmul_clone", "matmul_squeeze", "einsum", "convolution"))


# ---- the mode -------------------------------------------------------------------------------

class FlopCounterMode:
    """Mirrors ``torch.utils.flop_counter.FlopCounterMode``: inside ``with FlopCounterMode() as
    fc:`` the flops of matrix products and convolutions are counted, forward and backward,
    under "Global" and under the dotted name of each module running them (a top-level module
    is its class name: "Net", "Net.fc1"; a backward op counts for the modules of its forward).

    Args: ``mods`` (ignored, warns as torch), ``depth`` (module levels of the table),
    ``display`` (print the table on exit), ``custom_mapping`` ({op: formula}, as
    ``register_flop_formula``). ``get_total_flops()`` (int), ``get_flop_counts()`` ({module:
    {op: int}}; ops are ``tracegrad.ops.aten.<name>``), ``get_table(depth)`` (str). Not
    reentrant, as torch's."""

    def __init__(self, mods=None, depth: int = 2, display: bool = True, custom_mapping=None):
        self.flop_counts = defaultdict(lambda: defaultdict(int))
        self.depth, self.display = depth, display
        if mods is not None:
            _warn("mods argument is not needed anymore, you can stop passing it")
        self.flop_registry = dict(flop_registry)
        for target, formula in (custom_mapping or {}).items():
            self.flop_registry[_op_name(target)] = (formula, getattr(formula, "_get_raw", False))
        self._parents = ["Global"]          # the running modules' names, outermost first
        self._names = weakref.WeakKeyDictionary()
        # backward node -> (its forward's modules, what its forward counted)
        self._nodes = weakref.WeakKeyDictionary()
        self._outer = self._hooks = None
        self._active = False

    # ---- results ------------------------------------------------------------------------------
    def get_total_flops(self) -> int:
        """All flops counted (the "Global" entry)."""
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict:
        """{module name: {op: flops}}, "Global" holding everything."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None) -> str:
        """The counts as torch's table: module, flops (with torch's K/M/B/T suffix of the total),
        share of the total; modules deeper than ``depth`` left out."""
        depth = self.depth if depth is None else depth
        depth = 999999 if depth is None else depth
        total = self.get_total_flops()
        suffix = _suffix(total)
        rows, subsumed = [], False
        for mod in sorted(self.flop_counts):
            if mod == "Global" or mod.count(".") + 1 > depth:
                continue
            mod_rows, covers = self._rows(mod, mod.count("."), total, suffix)
            subsumed |= covers
            rows += mod_rows
        if "Global" in self.flop_counts and not subsumed:
            rows = self._rows("Global", 0, total, suffix)[0] + [[" " + r[0], *r[1:]] for r in rows]
        if not rows:
            rows = [["Global", "0", "0%"]]
        return _format_table(["Module", "FLOP", "% Total"], rows)

    def _rows(self, mod, depth, total, suffix):
        counts = self.flop_counts[mod]
        flops = sum(counts.values())
        pad = " " * depth
        rows = [[pad + mod, _with_suffix(flops, suffix), _percent(flops, total)]]
        rows += [[pad + " - aten." + str.__str__(k), _with_suffix(v, suffix), _percent(v, total)]
                 for k, v in counts.items()]
        return rows, flops >= total

    # ---- entering / leaving -------------------------------------------------------------------
    def __enter__(self):
        from ..nn.modules import module as _module   # a sibling library layer, loaded on use
        if _state.CAPTURE[0] is not None:
            # entered inside a compiled function: counting while tracing would count one trace,
            # not each call (the function runs eagerly instead: a graph break)
            _state.CAPTURE[0].python_effect("entering FlopCounterMode")
        self.flop_counts.clear()
        self._parents = ["Global"]
        self._hooks = (_module.register_module_forward_pre_hook(self._enter_module),
                       _module.register_module_forward_hook(self._leave_module))
        self._outer, self._active = _state.PROFILER[0], True
        _state.set_profiler(self)
        return self

    def __exit__(self, *exc):
        self._active = False
        if _state.PROFILER[0] is self:
            _state.set_profiler(self._outer)
        for h in self._hooks or ():
            h.remove()
        self._hooks = self._outer = None
        if self.display:
            print(self.get_table(self.depth))
        return False

    def _enter_module(self, module, args):
        self._parents.append(self._name(module))

    def _leave_module(self, module, args, output):
        name = self._name(module)
        for i in range(len(self._parents) - 1, 0, -1):
            if self._parents[i] == name:
                del self._parents[i]
                break

    def _name(self, module):
        name = self._names.get(module)
        if name is None:
            name = self._names[module] = type(module).__name__
        for child_name, child in module.named_children():
            if child not in self._names:
                self._names[child] = f"{name}.{child_name}"
        return name

    def _count(self, counts, parents):
        for kernel, flops in counts:
            key = _aten(kernel)
            for par in parents:
                self.flop_counts[par][key] += flops

    # ---- the interposer protocol (NOTE [interposer]) -----------------------------------------
    sees_ops = True     # compiled functions run eagerly, so that each op is seen

    def apply_op(self, op, args, static):
        out = self._run("apply_op", (op, args, static))
        self._forward(op, args, static, out)
        return out

    def apply_inplace(self, op, self_t, args, static):
        return self._run("apply_inplace", (op, self_t, args, static))

    def _live_outer(self):
        """The profiler this mode was entered inside, while it still records (else None)."""
        outer = self._outer
        return outer if outer is not None and getattr(outer, "active", False) else None

    def _run(self, method, call_args):
        outer = self._live_outer()
        if outer is not None:
            return getattr(outer, method)(*call_args)
        prev = _state.INTERPOSE[0]
        _state.INTERPOSE[0] = None     # plain dispatch for this op and what it runs itself
        try:
            return getattr(_dispatch, method)(*call_args)
        finally:
            _state.INTERPOSE[0] = prev

    def _forward(self, op, args, static, out):
        custom = self.flop_registry.get(op.name)
        if custom is not None:
            counts = [(op.name, _custom_flops(custom, args, out))]
        elif op.name in _COUNTED:
            counts = _forward_counts(op, args, static, out)
        else:
            return
        parents = tuple(dict.fromkeys(self._parents))
        self._count(counts, parents)
        node = getattr(out, "grad_fn", None) if not isinstance(out, tuple) else None
        if node is not None:
            self._nodes[node] = (parents, counts)

    def custom_op(self, name, args, out):
        """A ``library.custom_op`` ran (outside dispatch): counted when a formula names it."""
        entry = self.flop_registry.get(name)
        if entry is not None:
            self._count([(name, _custom_flops(entry, args, out))], tuple(dict.fromkeys(self._parents)))

    def evaluate_function(self, node, grads, create_graph):
        outer = self._live_outer()
        out = outer.evaluate_function(node, grads, create_graph) if outer is not None else node.apply(grads, create_graph)
        if getattr(node, "op", None) is not None and any(g is not None for g in grads):
            parents, forward = self._nodes.get(node, (("Global",), None))
            self._count(_backward_counts(node, grads, forward), parents)
        return out

    def compiled_call(self, label, fn, *args):
        outer = self._live_outer()
        return outer.compiled_call(label, fn, *args) if outer is not None else fn(*args)

    def begin(self, name, category, args=()):
        outer = self._live_outer()
        return (outer, outer.begin(name, category, args)) if outer is not None else (None, None)

    def end(self, frame, mem=0):
        outer, inner = frame
        if outer is not None:
            outer.end(inner, mem)

    @property
    def active(self):
        return self._active


def _custom_flops(entry, args, out):
    formula, raw = entry
    if raw:
        return formula(*args, out_val=out)
    shapes = [tuple(a.shape) if hasattr(a, "shape") and not isinstance(a, (int, float)) else a for a in args]
    out_shape = tuple(out.shape) if hasattr(out, "shape") else out
    return formula(*shapes, out_shape=out_shape)


def _aten(kernel):
    """The key torch's counts use for a kernel: ``tracegrad.ops.aten.<kernel>`` (a string of the
    name, so ``counts[torch.ops.aten.mm]`` finds it), made for kernels tracegrad has no op of
    (``convolution_backward``)."""
    from .. import ops, library   # the ops namespace, built with the package
    try:
        return getattr(ops.aten, kernel)
    except AttributeError:
        return library.AtenOp(kernel, None)


# ---- torch's table format --------------------------------------------------------------------
_SUFFIXES = ["", "K", "M", "B", "T"]


def _suffix(number):
    return _SUFFIXES[max(0, min(len(_SUFFIXES) - 1, (len(str(number)) - 2) // 3))]


def _with_suffix(number, suffix):
    return f"{number / 1000 ** _SUFFIXES.index(suffix):.3f}{suffix}"


def _percent(num, denom):
    return "0%" if denom == 0 else f"{num / denom:.2%}"


def _format_table(header, rows):
    """A plain-text table in the layout of ``tabulate``'s "simple" format (first column left
    aligned, the others right), which torch uses for this table."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells):
        return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, rows)])
