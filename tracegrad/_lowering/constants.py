"""Values a trace knows without running the program: small tensors made from Python numbers.

NOTE [constants in a trace]: U-Net's up-sampling block (milesial/Pytorch-UNet) pads by
``diff = torch.tensor([x2.size()[2] - x1.size()[2]])``, halved with ``diff // 2`` and passed to
``F.pad``, which reads each amount as a Python int. JAX stages every op inside a trace, the
factory too, so that read met a tracer: an ``item()`` graph break, and the whole step ran
eagerly on every call. torch.compile folds such tensors (they hold numbers the trace already
knows) and captures one graph.

Here the trace keeps, beside the staged array, the concrete value of a small tensor that
``tensor()`` made from Python data, and of what ops compute from such tensors alone
(``diff // 2``, ``diff - diff // 2``, views of them): the op runs once more on the concrete
values under ``jax.ensure_compile_time_eval``. A Python read of such a tensor (``item()``,
``int()``, ``tolist()``, ``bool()``) answers from that value instead of breaking the graph. The
program itself is unchanged: the staged arrays stay in it, and the numbers Python read are
constants of the trace exactly as the Python numbers they were made from (guarded the same
way). A value is kept per storage together with the array it describes: any write to the
storage replaces the array, and the kept value no longer applies.
"""
from __future__ import annotations

import jax

from .._tensor.convert import to_array
from .._tensor.tensor import Tensor, chain_value_fn

# elements: a shape, a handful of sizes or indices; a larger tensor's value is left to the program
FOLD_MAX = 64


def _concrete(v) -> bool:
    return isinstance(v, jax.Array) and not isinstance(v, jax.core.Tracer)


class Constants:
    """id(storage) -> (its array while tracing, that array's concrete value), for one trace.
    The array is held so that its id stays its own while the entry lives."""

    def __init__(self):
        self.values = {}

    def made(self, t, data, dtype):
        """``tensor(data, dtype=dtype)`` made ``t`` inside the trace: keep its value when small."""
        if t._value.size > FOLD_MAX or t._chain:
            return
        try:
            with jax.ensure_compile_time_eval():
                v, _ = to_array(data, dtype)
        except Exception:      # data JAX cannot evaluate here (a traced 0-d tensor in a list)
            return
        if _concrete(v) and v.shape == t._value.shape and v.dtype == t._value.dtype:
            self.values[id(t._st)] = (t._st.array, v)

    def value(self, t):
        """The concrete value of ``t`` (a tensor over a kept storage, or a view of one), or None."""
        st = t._st
        kept = self.values.get(id(st))
        if kept is None or kept[0] is not st.array or getattr(st, "_layout", False):
            return None
        v = kept[1]
        if t._chain:
            try:
                with jax.ensure_compile_time_eval():
                    v = chain_value_fn(t._chain)(v)
            except Exception:
                return None
        return v if _concrete(v) else None

    def fold(self, op, args, static, outs):
        """After ``op`` ran on ``args`` in the trace: when every tensor argument has a kept value,
        run it again on those values and keep what it gives for the outputs ``outs``. A view's
        value comes from its base's (``value``)."""
        if op.view:
            return
        vals = []
        for a in args:
            if isinstance(a, Tensor):
                a = self.value(a)
                if a is None:
                    return
            elif isinstance(a, jax.core.Tracer):     # a traced key of a random op, a traced number
                return
            vals.append(a)
        try:
            with jax.ensure_compile_time_eval():
                out = op.run(vals, static)
        except Exception:      # the staged op already ran: its error, if any, was raised there
            return
        for t, v in zip(outs, out if op.n_out != 1 else (out,)):
            if _concrete(v) and v.size <= FOLD_MAX and v.shape == t._value.shape and not t._chain:
                self.values[id(t._st)] = (t._st.array, v)
