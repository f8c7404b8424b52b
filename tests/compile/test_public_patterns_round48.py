"""Compile patterns met in the forty-eighth round of public programs
(tests/api/test_public_programs_round48.py).

LSTNet's highway branch (laiguokun/LSTNet, MIT) takes ``x[:, -hw:, :].permute(0, 2, 1)
.contiguous()`` of its batch; a compiled training step given a batch sliced off a bigger tensor
(a view argument) asked ``is_contiguous()`` of a view of the argument's stand-in, and that was a
graph break: the whole step ran eagerly. An argument with row-major strides has the stand-in's
strides, so its views' layout questions are answered in the trace, with the strides guarded.
"""
import copy

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _step(T):
    def step(x):
        z = x[:, -2:, :]
        zt = z.permute(0, 2, 1)
        # ``contiguous()`` asks is_contiguous() of a view of the argument
        flat = zt.contiguous().view(-1, 2)
        return flat * 2, zt.stride(), zt.is_contiguous(), z.is_contiguous()
    return step


def test_layout_of_a_view_of_a_view_argument():
    big = np.arange(8 * 4 * 3, dtype=np.float32).reshape(8, 4, 3)
    runs = {}
    for name, T in (("torch", torch), ("tracegrad", tracegrad)):
        step = _step(T)
        if T is tracegrad:
            step = tracegrad.compile(step)
        X = T.tensor(big)
        wide = T.tensor(np.concatenate([big, big], axis=1))   # [8, 8, 3]
        args = [X[0:2], X[2:4], X[4:6],              # row-major slices: one program
                wide[0:2, 0:4],                      # the same shape, other strides
                X[6:8]]                              # row-major again
        outs = []
        for i, a in enumerate(args):
            flat, stride, c1, c2 = step(a)
            outs.append((flat.numpy(), tuple(stride), c1, c2))
            if T is tracegrad and i == 2:
                runs["stats"] = copy.deepcopy(step.stats)
        runs[name] = outs
    for i, (ref, got) in enumerate(zip(runs["torch"], runs["tracegrad"])):
        np.testing.assert_array_equal(got[0], ref[0], err_msg=f"call {i}")
        assert got[1:] == ref[1:], (i, got[1:], ref[1:])
    # the row-major slices: call 0 eager, calls 1 and 2 one program (before: "is_contiguous() of
    # a tensor argument that is a view" broke the graph, every call ran eagerly). The slice with
    # other strides fails the strides guard, and a view of its stand-in cannot answer for it: it
    # is still the graph break (eager answers, checked above)
    st = runs["stats"]
    assert st["graph_breaks"] == [] and st["traces"] == 1 and st["eager_calls"] == 1, st
