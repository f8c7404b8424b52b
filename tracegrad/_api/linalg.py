"""Tensor methods, linear-algebra family: matmul/mm/bmm/mv/dot/addmm/outer/einsum, and ``@``."""
from __future__ import annotations

from .. import _autocast
from ..autograd._dispatch import apply_op
from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._tensor.layout import SparseOperand
from .._tensor.tensor import Tensor
from ._registry import function, method
from .elementwise import mul, operator, reflected
from .promotion import _CPP_NAME, _SCALAR_NAME, beta_first, check_real_scalars, check_tensors
from .shape import unsqueeze


# ---- linear algebra ---------------------------------------------------------------------
def _mm_dtype(a, b, name):
    if a.dtype.name == "bool" and b.dtype.name == "bool":   # torch's CPU matmul kernels refuse bool
        raise NotImplementedError(f'"{"dot" if name == "dot" else "addmm_impl_cpu_"}" not implemented for \'Bool\'; '
                                  'convert the tensors with .int() or .float() first')
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_CPP_NAME[a.dtype.name]} != {_CPP_NAME[b.dtype.name]}" if name != "dot" else
                           f"dot : expected both vectors to have same dtype, but found {_SCALAR_NAME[a.dtype.name]} and "
                           f"{_SCALAR_NAME[b.dtype.name]}; convert one with .to()")
    return (("dtype", a._value.dtype),)


@method(function=True)
def matmul(self, other):
    """Mirrors ``torch.matmul`` / ``@``: dot (1-D x 1-D), mv, mm, and batched products with
    broadcasting. Autograd names follow torch's kernels (``DotBackward0``, ``MvBackward0``,
    ``MmBackward0``, ``UnsafeViewBackward0`` for batched). RuntimeError on shape mismatch."""
    if not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'other' must be Tensor, not {type(other).__name__}")
    self, other = _autocast.cast("lower", "matmul", self, other)
    a, b = self.ndim, other.ndim
    if a == 0 or b == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a}D and {b}D")
    ka = self.shape[-1]
    kb = other.shape[-2] if b >= 2 else other.shape[0]
    if ka != kb:
        if a == 1 and b == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the same number of elements, but got {ka} and {kb} elements respectively")
        sa = "x".join(map(str, self.shape if a > 1 else (1, ka)))
        sb = "x".join(map(str, other.shape if b > 1 else (kb, 1)))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
    st = _mm_dtype(self, other, "dot" if a == 1 and b == 1 else "matmul")
    if a == 1 and b == 1:
        return apply_op(OPS["dot"], (self, other), st)
    if a == 2 and b == 1:
        return apply_op(OPS["mv"], (self, other), st)
    if a == 2 and b == 2:
        try:
            return apply_op(OPS["mm"], (self, other), st)
        except SparseOperand as e:   # dense @ sparse COO (NOTE in _tensor/layout.py)
            return e.tensor._sparse_operand(e, "matmul", self, other)
    if a == 1 and b == 2:
        return apply_op(OPS["matmul_squeeze"], (self, other), st)
    if a == 2:
        return apply_op(OPS["matmul_clone"], (self, other), st)
    return apply_op(OPS["matmul"], (self, other), st)


@method(function=True)
def mm(self, mat2):
    """Mirrors ``torch.mm``: 2-D x 2-D. RuntimeError for other ranks or mismatched shapes."""
    check_tensors("mm", self, mat2, names=("input", "mat2"))
    if self.is_sparse:   # torch.mm(sparse, dense): the sparse tensor's own mm, with torch's checks
        return self.mm(mat2)
    if self.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("self must be a matrix" if self.ndim != 2 else "mat2 must be a matrix")
    return matmul(self, mat2)


@method(function=True)
def bmm(self, mat2):
    """Mirrors ``torch.bmm``: ``(b, n, m) x (b, m, p) -> (b, n, p)``."""
    check_tensors("bmm", self, mat2, names=("input", "mat2"))
    if self.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if self.ndim != 3 else "batch2 must be a 3D tensor")
    if self.shape[0] != mat2.shape[0] or self.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{self.shape[0]}, {self.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    self, mat2 = _autocast.cast("lower", "bmm", self, mat2)
    return apply_op(OPS["bmm"], (self, mat2), _mm_dtype(self, mat2, "bmm"))


@method(function=True)
def mv(self, vec):
    """Mirrors ``torch.mv``: ``(n, m) x (m,) -> (n,)``."""
    check_tensors("mv", self, vec, names=("input", "vec"))
    if self.ndim == 0:   # torch sizes the result from self.size(0) first
        raise IndexError("mv(): Dimension specified as 0 but tensor has no dimensions; pass a 2-D matrix")
    if self.ndim != 2 or vec.ndim != 1:
        raise RuntimeError("vector + matrix @ vector expected, got " + f"{self.ndim}, {vec.ndim}")
    if self.shape[1] != vec.shape[0]:   # torch's own check, before matmul's mat1/mat2 wording
        raise RuntimeError(f"size mismatch, got input ({self.shape[0]}), mat ({self.shape[0]}x{self.shape[1]}), "
                           f"vec ({vec.shape[0]}) (mv: the matrix's columns must match the vector's length)")
    return matmul(self, vec)


@method(function=True)
def dot(self, other):
    """Mirrors ``torch.dot``: 1-D x 1-D -> 0-D."""
    check_tensors("dot", self, other, names=("input", "tensor"))
    if self.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {other.ndim}D tensors")
    # torch checks the dtypes before the lengths (matmul's order is the other), after autocast's cast
    self, other = _autocast.cast("lower", "matmul", self, other)
    if self.dtype is not other.dtype:
        _mm_dtype(self, other, "dot")
    return matmul(self, other)


@method(function=True)
def addmm(self, mat1, mat2, *rest, beta=1, alpha=1):
    """Mirrors ``torch.addmm``: ``beta * input + alpha * (mat1 @ mat2)``. Autograd: ``AddmmBackward0``.
    torch's deprecated scalars-first overloads (``x.addmm_(1, -2, a, b)``) warn and bind."""
    self, mat1, mat2, beta, alpha = beta_first("addmm", self, mat1, mat2, rest, beta, alpha)
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("mat1 must be a matrix, got {}-D tensor".format(mat1.ndim))
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    self, mat1, mat2 = _autocast.cast("lower", "addmm", self, mat1, mat2)
    # torch compares self with mat2 first, then mat1 with mat2
    for what, a in (("self", self), ("mat1", mat1)):
        if isinstance(a, Tensor) and a.dtype is not mat2.dtype:
            raise RuntimeError(f"{what} and mat2 must have the same dtype, but got {_SCALAR_NAME[a.dtype.name]} and "
                               f"{_SCALAR_NAME[mat2.dtype.name]}; convert them to one dtype (nn.Linear: cast the "
                               "input or the module)")
    check_real_scalars("addmm", mat2.dtype, beta=beta, alpha=alpha)
    return apply_op(OPS["addmm"], (self, mat1, mat2, beta, alpha), _mm_dtype(mat1, mat2, "addmm"))


@method("outer", "ger", function=True)
def outer(self, vec2):
    """Mirrors ``torch.outer``: ``(n,) x (m,) -> (n, m)``. Autograd: ``MulBackward0``.
    RuntimeError unless both are 1-D."""
    check_tensors("outer", self, vec2, names=("input", "vec2"))
    for name, v in (("self", self), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return mul(self.reshape(self.shape[0], 1), vec2)    # torch reshapes (ViewBackward0), then multiplies


def _sublist_equation(args):
    """torch's sublist form ``einsum(op0, sub0, op1, sub1, ..., [out])`` as ``(equation,
    operands)``: subscripts 0-25 are ``A``-``Z``, 26-51 ``a``-``z``, ``...`` an ellipsis."""
    def letters(sub):
        out = []
        for i in sub:
            if i is Ellipsis:
                out.append("...")
            elif not 0 <= i < 52:
                raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52); got {i}")
            else:
                out.append(chr(ord("A") + i) if i < 26 else chr(ord("a") + i - 26))
        return "".join(out)
    operands, subs = args[0::2], args[1::2]
    ops = [t for t in operands if isinstance(t, Tensor)]
    eq = ",".join(letters(s) for s in subs[:len(ops)])
    if len(operands) > len(ops):           # a trailing output sublist
        eq += "->" + letters(operands[-1])
    return eq, tuple(ops)


@function()
def einsum(equation, *operands):
    """Mirrors ``torch.einsum(equation, *operands)`` (operands may also be one list, or the
    sublist form ``einsum(op0, [0, 1], op1, [1, 2], [0, 2])``). RuntimeError for operands of
    different dtypes summed over a shared subscript (torch's bmm; without one torch multiplies,
    and the operands promote to one dtype, as here); ValueError for a sublist subscript outside
    ``[0, 52)``, as torch; NotImplementedError for bool operands summed over a shared subscript (torch's bmm)."""
    if isinstance(equation, Tensor):
        equation, operands = _sublist_equation((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    for i, c in enumerate(equation):
        # '-' and '>' only as the arrow
        arrow_part = (c == "-" and equation[i + 1:i + 2] == ">") or (c == ">" and equation[i - 1:i] == "-" and i > 0)
        if not (c.isascii() and c.isalpha()) and c not in "., " and not arrow_part:
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, subscripts "
                               "must be in [a-zA-Z]")
    _check_einsum_periods(equation, output=False)
    raw, equation = equation, equation.replace(" ", "")
    mixed = [t for t in operands[1:] if isinstance(t, Tensor) and isinstance(operands[0], Tensor)
             and t.dtype is not operands[0].dtype]
    if mixed and _contracts(equation):   # torch contracts in one dtype (bmm) and does not promote
        raise RuntimeError(f"einsum(): expected scalar type {_CPP_NAME[operands[0].dtype.name]} but found "
                           f"{_CPP_NAME[mixed[0].dtype.name]}; convert the operands to one dtype")
    if mixed:   # no shared subscript summed: torch multiplies the operands, which promotes
        dtype = operands[0].dtype
        for t in mixed:
            dtype = _dt.promote_types(dtype, t.dtype)
        operands = tuple(t.to(dtype) for t in operands)
    if len(operands) > 1 and all(isinstance(t, Tensor) and t.dtype.name == "bool" for t in operands) \
            and _contracts(equation):   # torch sums products through bmm, which has no bool kernel
        raise NotImplementedError("einsum(): \"bmm\" not implemented for 'Bool'; contract integer operands "
                                  "(.long()) and compare the result with 0")
    if len(operands) == 1 and isinstance(operands[0], Tensor) and operands[0].dtype.name == "bool" \
            and _sums(equation):   # torch sums a bool operand with sum(): an int64 count
        operands = (operands[0].long(),)
    _check_einsum(equation, operands, raw)
    return apply_op(OPS["einsum"], operands, (("equation", equation),))


def _check_einsum_periods(equation, output):
    """torch's parser takes a period only as part of three adjacent ones (``...``), at most one
    ellipsis per operand (``output=False``: the left side) and in the output (``output=True``,
    which torch parses after checking the operands); checked on the equation with its spaces
    (``'. ..'`` would otherwise read as an ellipsis)."""
    lhs, arrow, out = equation.partition("->")
    for part, is_out in (((out, True),) if arrow else ()) if output else ((lhs, False),):
        op, found, i = 0, False, 0
        while i < len(part):
            if part[i] == ",":
                op, found = op + 1, False
            elif part[i] == ".":
                who = "output" if is_out else f"operand {op}"
                if found:
                    raise RuntimeError(f"einsum(): found '.' for {who} " + ("but an ellipsis (...) was already found"
                                       if is_out else "for which an ellipsis was already found"))
                if part[i:i + 3] != "...":
                    raise RuntimeError(f"einsum(): found '.' for {who} that is not part of any ellipsis"
                                       + (" (...)" if is_out else ""))
                found = True
                i += 3
                continue
            i += 1


def _check_einsum(equation, operands, raw=None):
    """torch's checks of ``equation`` against the operands' count and shapes, in its order (each
    operand's subscript count, then the output, then the sizes operand by operand); the op failed
    on these with no torch message. ``raw``: the equation with its spaces, whose output periods
    are checked after the operands, as torch's parser does."""
    for i, t in enumerate(operands):   # torch's parser comes first (the op failed with no torch message)
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): expected Tensor as element {i} in argument 1, but got {type(t).__name__}")
    lhs, arrow, out = equation.partition("->")
    specs = lhs.split(",")
    if len(specs) != len(operands):
        raise RuntimeError(f"einsum(): {'fewer' if len(specs) > len(operands) else 'more'} operands were provided "
                           f"than specified in the equation {equation!r}")
    ell_dims = 0   # the most dims an ellipsis covers
    for i, (spec, t) in enumerate(zip(specs, operands)):
        head, ell, tail = spec.partition("...")
        n = len(head) + len(tail)
        if n > t.ndim or (not ell and n != t.ndim):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) "
                               + (f"is more than the number of dimensions ({t.ndim}) for operand {i}" if ell else
                                  f"does not match the number of dimensions ({t.ndim}) for operand {i} and no "
                                  f"ellipsis was given"))
        if ell:
            ell_dims = max(ell_dims, t.ndim - n)
    if raw is not None:
        _check_einsum_periods(raw, output=True)
    if arrow:
        letters = out.replace("...", "")
        for c in letters:
            if letters.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            if c not in lhs:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any "
                                   "input operand")
    # sizes, as torch walks them: dims of size 1 broadcast and are not recorded; ``dim`` counts
    # the operand's dims less the repeated subscripts (torch has taken their diagonals), and an
    # ellipsis' dims are right-aligned to the widest ellipsis
    sizes, ell_sizes = {}, [1] * ell_dims
    for i, (spec, t) in enumerate(zip(specs, operands)):
        head, ell, tail = spec.partition("...")
        items = list(head) + (["..."] if ell else []) + list(tail)
        pos = dim = 0
        seen = {}
        for c in items:
            if c == "...":
                covered = t.ndim - (len(items) - 1)
                for j in range(ell_dims - covered, ell_dims):
                    size = t.shape[pos]
                    if size != 1:
                        if ell_sizes[j] not in (1, size):
                            # torch's words, its missing space included
                            raise RuntimeError(f"einsum(): dimension {dim} covered by ellipsis in operand {i}has size "
                                               f"{size} which does not broadcast with previously seen ellipsis with "
                                               f"size {ell_sizes[j]} for the respective dimension")
                        ell_sizes[j] = size
                    pos, dim = pos + 1, dim + 1
                continue
            size = t.shape[pos]
            if c in seen:
                if size != seen[c]:
                    raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't "
                                       f"match, {size} != {seen[c]}")
            else:
                seen[c] = size
                if size != 1:
                    if sizes.get(c, 1) not in (1, size):
                        raise RuntimeError(f"einsum(): subscript {c} has size {size} for operand {i} which does not "
                                           f"broadcast with previously seen size {sizes[c]}")
                    sizes[c] = size
                dim += 1
            pos += 1


def _sums(equation):
    """Whether a one-operand einsum ``equation`` sums over a subscript (drops it from the output)."""
    lhs, arrow, out = equation.partition("->")
    letters = lhs.replace(".", "")
    if not arrow:
        return any(letters.count(c) > 1 for c in letters)
    return any(c not in out for c in letters)


def _contracts(equation):
    """Whether an einsum ``equation`` sums over a subscript shared by two operands (a product
    that torch computes with ``bmm``)."""
    lhs, _, out = equation.partition("->")
    terms = [set(t.replace(".", "")) for t in lhs.split(",")]
    if "->" not in equation:     # implicit output: the subscripts that appear once
        counts = {}
        for t in lhs.split(","):
            for c in t.replace(".", ""):
                counts[c] = counts.get(c, 0) + 1
        out = "".join(c for c, n in counts.items() if n == 1)
    return any(sum(c in t for t in terms) > 1 and c not in out for c in set().union(*terms))


method("__matmul__")(operator(matmul))
# torch's __rmatmul__ takes a Tensor only: anything else is NotImplemented (Python's TypeError)
method("__rmatmul__")(reflected(lambda s, o: matmul(o, s) if isinstance(o, Tensor) else NotImplemented))
