"""XLA compile options for eager mode's per-op programs (NOTE [eager compile options])."""
from __future__ import annotations

import jax
import numpy as np

from .host_first import FirstCallsOnHost

# NOTE [eager compile options]
# Eager mode compiles one small XLA program per (op, shapes, dtypes, static arguments): a
# new model or a notebook cell spends most of its first call compiling (a 3-layer MLP's first
# SGD step: 36 programs, ~2 s of its ~2.5 s). On XLA:CPU about half of each compile is the MLIR
# fusion emitters; the older LLVM IR emitters compile the same single-op programs in about half
# the time, run them as fast and give bitwise the same results (measured on exp, tanh, log, erf,
# gelu, sigmoid, softmax, logsumexp, pow, sin and sums over 2**20 floats). So per-op programs
# take them (except ops that reduce: NOTE [reductions compile with the fusion emitters]),
# through jit's per-function ``compiler_options`` (the user's own JAX programs and
# XLA_FLAGS are untouched). Compiled regions (one large program run every step) keep XLA's
# defaults. The option is CPU-only: other backends ignore it. A jaxlib that does not know it
# (older than the fusion emitters) gets no options, found by compiling one trivial program on
# first use.
# Measured and left (JAX 0.10.2): ``xla_backend_optimization_level=0`` halves the compile again
# (median 42 -> 21 ms per single-op program) but the programs run 1.6-10x slower (a 64-element
# add 11 -> 18 us, cumsum over 4096 floats 111 -> 486 us, random draws 10x) and round tanh, gelu
# and pow 1-3 ulp differently; choosing it by size would make an op's last bits depend on its
# input's size, and tiering up after a few calls would make a second run of the same loop differ
# bitwise from the first. ``xla_llvm_disable_expensive_passes`` saves ~10%; the other CPU
# options tried (``xla_cpu_parallel_codegen_split_count``, ``xla_llvm_force_inline_before_split``)
# nothing. In a test suite about a third of the rest is JAX's lowering (an MLIR context per
# program, ~7 ms) and tracing.
# JAX refuses a jit with compiler options inside another trace (staging it as a nested call):
# a per-op program met there with concrete arrays (a constant inside a compiled region) is
# traced through instead, as one met with tracers always is (``nested_options_error``).
_WANTED = {"xla_cpu_use_fusion_emitters": False}
_EAGER: list = []


def eager_compiler_options() -> dict:
    """The ``compiler_options`` for an eager per-op ``jax.jit`` ({} where this jaxlib refuses
    them)."""
    if not _EAGER:
        try:
            jax.jit(lambda x: x + 1, compiler_options=_WANTED).lower(np.float32(0)).compile()
            _EAGER.append(dict(_WANTED))
        except Exception:      # an unknown option: XLA's compile error, whatever its class
            _EAGER.append({})
    return _EAGER[0]


# NOTE [reductions compile with the fusion emitters]
# The LLVM IR emitters unroll the loops of small multi-axis reductions into seconds of
# compiling (measured 2026-12-01, JAX 0.10.2, one program each: sum of a (2, 32, 32) float32
# tensor 2.75 s, a BatchNorm-style mean/var over (2, 1, 32, 32) 7.5 s, its gradient 9.3 s;
# with XLA's default fusion emitters 0.10, 0.18 and 0.34 s). XLA's own switch for that
# (``xla_cpu_disable_loop_unrolling``) is a backend extra option, a map entry jit's
# per-program ``compiler_options`` cannot carry. So an op whose program reduces an array of
# rank 3 or more (its first traced jaxpr has such a ``reduce_*``/``arg*``/``cum*`` primitive)
# keeps XLA's defaults; every other op keeps the faster-compiling emitters above (rank 1-2
# reductions compile fine with them: the unrolling showed on the small 3-D and 4-D ones).
_REDUCING = ("reduce_", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")

# NOTE [transposes run with the fusion emitters]
# The LLVM IR emitters move a large transposed array element by element: measured 2026-12-06
# (JAX 0.10.2, XLA:CPU, float32, median of 300 calls) a 256x256 transpose runs in 50 us
# against the fusion emitters' 16, 784x128 in 70 against 21, a (8, 128, 256) swap of the last
# two axes (attention's ``k.transpose(-2, -1)``) in 244 against 51, 2048x2048 in 24 ms against
# 1.4; up to 2**13 elements (a 64x64 or 32x256 transpose) both take the same 4-5 us. Every
# Linear layer's ``weight.t()``, its gradient's transpose back and the backward of ``addmm``
# hold one. A transpose moves values without rounding them, and the two emitters round the
# element-wise ops alike (above), so which emitters a program gets changes no bit of a result;
# it costs the fusion emitters' longer compile once per program (47 ms against 33 for the
# 256x256 transpose, 43 against 35 for addmm's backward). Every transpose, whatever its size:
# an op's programs share the emitters its first signature chose (``FirstCallsOnHost._pick``),
# and a size rule would leave a layer's 256x256 weights with the choice its 10x256 ones made.


def _wants_defaults(jaxpr) -> bool:
    """Whether an eager program of ``jaxpr`` compiles with XLA's defaults: it reduces an array
    of rank 3 or more (NOTE [reductions compile with the fusion emitters]) or transposes one
    (NOTE [transposes run with the fusion emitters])."""
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name     # reduce_precision only rounds, element by element
        if name == "transpose":
            return True
        rank = max((getattr(v.aval, "ndim", 0) for v in eqn.invars), default=0)
        if name.startswith(_REDUCING) and name != "reduce_precision" and rank >= 3:
            return True
        for v in eqn.params.values():
            inner = getattr(v, "jaxpr", None)
            if inner is not None and _wants_defaults(getattr(inner, "jaxpr", inner)):
                return True
    return False


def compiler_options_for(jaxpr) -> dict:
    """The ``compiler_options`` for an eager program of ``jaxpr`` built outside ``eager_jit``
    (the fused in-place updates: NOTE [eager compile options]): XLA's defaults ({}) where
    ``_wants_defaults``."""
    return {} if _wants_defaults(jaxpr) else eager_compiler_options()


def eager_jit(fn):
    """``jax.jit(fn)`` with the eager programs' compile options (XLA's defaults for an op that
    reduces or transposes: ``_wants_defaults``), its first calls per signature
    on the host where the program only moves data (NOTE [host first calls]). Call it with
    positional arguments."""
    options = eager_compiler_options()
    retarget = (lambda jaxpr: jax.jit(fn) if _wants_defaults(jaxpr) else None) if options else None
    return FirstCallsOnHost(jax.jit(fn, compiler_options=options), retarget)


def nested_options_error(e: BaseException) -> bool:
    """Whether ``e`` is JAX refusing an ``eager_jit`` program called inside another trace."""
    return isinstance(e, ValueError) and "compiler_options" in str(e) and "nested" in str(e)
