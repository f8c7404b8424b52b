"""Recurrent layers as ops: one op runs one layer in one direction over the whole sequence.

The pure function projects every time step's input at once (one large matmul), then runs
``lax.scan`` over time for the recurrent part, so an LSTM layer's forward is one jitted
program per (mode, direction, shapes) and its backward -- ``jax.vjp`` of the forward, like
every op of the table -- is one more, instead of a program per time step.

Inputs, in torch's ``mkldnn_rnn_layer`` order: ``input (T, B, I)``, ``weight_ih (G*H, I)``,
``weight_hh (G*H, P)``, ``bias_ih``/``bias_hh (G*H,)`` or None, ``hx (B, P)``, ``cx (B, H)``
(LSTM only), ``weight_hr (P, H)`` or None (LSTM projections), ``lengths (B,)`` int or None.
``P`` is ``proj_size`` when the LSTM projects, else ``H``. With ``lengths`` (packed
sequences) the steps at or after a sequence's length keep its state and output zeros, so
the final state is the one after its last valid step, and the reverse direction starts
there, as torch's packed kernels do.

Gate order and formulas are torch's: LSTM ``i, f, g, o``; GRU ``r, z, n`` with
``n = tanh(x_n + r * (h W_hn + b_hn))``.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from .registry import defop

_HI = lax.Precision.HIGHEST
_ARGS = ("input", "weight_ih", "weight_hh", "bias_ih", "bias_hh", "hx", "cx", "weight_hr", "lengths")


def _mm(a, w):
    return jnp.matmul(a, w.T, precision=_HI)


def _cell(mode, w_hh, b_hh, w_hr):
    """``step(carry, xw_t) -> (new carry, output)`` for one time step; ``xw_t`` is the input
    projection ``x_t W_ih^T + b_ih`` of that step."""
    def recur(h):
        g = _mm(h, w_hh)
        return g if b_hh is None else g + b_hh

    if mode == "LSTM":
        def step(carry, xw):
            h, c = carry
            i, f, g, o = jnp.split(xw + recur(h), 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            if w_hr is not None:
                h = _mm(h, w_hr)
            return (h, c), h
    elif mode == "GRU":
        def step(carry, xw):
            (h,) = carry
            xr, xz, xn = jnp.split(xw, 3, axis=-1)
            hr, hz, hn = jnp.split(recur(h), 3, axis=-1)
            r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
            n = jnp.tanh(xn + r * hn)
            h = n + z * (h - n)
            return (h,), h
    else:
        act = jnp.tanh if mode == "RNN_TANH" else jax.nn.relu

        def step(carry, xw):
            h = act(xw + recur(carry[0]))
            return (h,), h
    return step


def _rnn_layer(x, w_ih, w_hh, b_ih, b_hh, hx, cx, w_hr, lengths, *, mode, reverse):
    xw = _mm(x, w_ih)
    if b_ih is not None:
        xw = xw + b_ih
    step = _cell(mode, w_hh, b_hh, w_hr)
    carry0 = (hx, cx) if mode == "LSTM" else (hx,)
    if lengths is None:
        carry, ys = lax.scan(step, carry0, xw, reverse=reverse)
    else:
        # packed sequences: past a sequence's end the state is held and the output is zero
        valid = jnp.arange(x.shape[0])[:, None] < lengths[None, :]       # (T, B)

        def masked(carry, inp):
            xw_t, ok = inp
            new, y = step(carry, xw_t)
            ok = ok[:, None]
            new = tuple(jnp.where(ok, n, o) for n, o in zip(new, carry))
            return new, jnp.where(ok, y, jnp.zeros_like(y))
        carry, ys = lax.scan(masked, carry0, (xw, valid), reverse=reverse)
    return (ys,) + tuple(carry)


def _rnn_layer_nocell(x, w_ih, w_hh, b_ih, b_hh, hx, cx, w_hr, lengths, *, mode, reverse):
    return _rnn_layer(x, w_ih, w_hh, b_ih, b_hh, hx, None, None, lengths, mode=mode, reverse=reverse)


# torch CPU runs LSTM layers through oneDNN, one MkldnnRnnLayerBackward0 node per layer and
# direction; we give RNN/GRU layers (which torch CPU unrolls per step) the same node name.
_COMMON = dict(args=_ARGS, grad_fn="MkldnnRnnLayerBackward0", no_edge=("lengths",),
               saves=("input", "weight_ih", "weight_hh", "bias_ih", "bias_hh", "hx", "cx", "weight_hr", "lengths"))
defop("lstm_layer", _rnn_layer, n_out=3, **_COMMON)
defop("rnn_layer", _rnn_layer_nocell, n_out=2, **_COMMON)


# torch's _pack_padded_sequence: the valid steps of a padded (T, B, *) (or (B, T, *)) input,
# gathered into packed rows ``rows`` of its (T*B, *) flattening; one PackPaddedSequenceBackward0
# node whose backward scatters the gradient back into the padded layout
defop("pack_padded_sequence", lambda x, rows: x.reshape((-1,) + x.shape[2:])[jnp.asarray(rows)],
      grad_fn="PackPaddedSequenceBackward0")
