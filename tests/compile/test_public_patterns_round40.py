"""Round 40's compiled program: KasperGroesLudvigsen/influenza_transformer's training step
(``transformer_timeseries.py``, ``positional_encoder.py``, ``utils.py``, ``dataset.py``,
``inference_example.py`` at 4093544, ported in ``tests/api/test_public_programs_round40_tst.py``
and loaded from there) under ``tracegrad.compile``, against torch and tracegrad eager after every
call: the masks built inside the step (``torch.triu(torch.ones(d1, d2) * float('-inf'),
diagonal=1)``, square for the decoder's self-attention and 3 x 6 for its ``memory_mask``), the
encoder and decoder stacks with ``batch_first=False``, the broadcasting ``MSELoss`` call as
written (``criterion(tgt_y, prediction)``), ``backward`` and an Adam step in one compiled call,
on the loader's first two batches in turn (one shape: one program), with one encoder and one
decoder layer (the eager test has two of each).

The step gets sandbox.py's permuted ``[seq, batch, feature]`` views as arguments; the first
``Linear`` asks ``is_contiguous()`` of such a view and reshapes it. That was a graph break (the
trace's stand-in for an argument is contiguous, so its layout answers were not eager's): now the
stand-in of a view argument answers ``is_contiguous()``, ``stride()`` and ``reshape``/``view``'s
view-or-copy choice from the caller's tensor, and the program keeps that argument's strides as a
guard (``Capture.argument_layout``, ``Region.args_contiguous``)."""
import numpy as np
import pytest

import tracegrad

from ._dynamo_port import api_programs, compare_programs

torch = pytest.importorskip("torch")


def _programs():
    return api_programs('test_public_programs_round40_tst.py')


def test_time_series_transformer_train_step_compiled():
    progs = _programs()

    def build(T, wrap):
        model, utils, training_dataloader = progs.build(T, n_layers=1)
        # eps 1e-3 for the reason the eager test gives (the key bias's gradient is rounding noise)
        optimizer = T.optim.Adam(model.parameters(), lr=0.01, eps=1e-3)
        criterion = T.nn.MSELoss()
        forecast_window, enc_seq_len = progs.output_sequence_length, progs.enc_seq_len
        # sandbox.py's permute, outside the step: the step gets [seq, batch, feature] views of
        # the loader's batches (the first Linear asks is_contiguous() and reshapes them)
        batches = [(src.permute(1, 0, 2), tgt.permute(1, 0, 2), tgt_y)
                   for src, tgt, tgt_y in list(training_dataloader)[:2]]

        @wrap
        def step(src, tgt, tgt_y):
            # inference_example.py's loop body
            optimizer.zero_grad()
            tgt_mask = utils.generate_square_subsequent_mask(
                dim1=forecast_window,
                dim2=forecast_window
                )
            src_mask = utils.generate_square_subsequent_mask(
                dim1=forecast_window,
                dim2=enc_seq_len
                )
            prediction = model(src, tgt, src_mask, tgt_mask)
            loss = criterion(tgt_y, prediction)
            loss.backward()
            optimizer.step()
            return loss, prediction

        def run(i):
            model.train()
            loss, prediction = step(*batches[i % 2])
            attn = model.decoder.layers[0].multihead_attn
            return [loss, prediction, attn.in_proj_weight.detach(),
                    model.encoder.layers[0].linear1.weight.grad]
        return run

    compare_programs(build, calls=3, traces=1)


def _layout_step(T, lin):
    def step(x):
        # a Linear on a 3-d argument asks is_contiguous() and reshapes it; reshape and stride()
        # of the argument itself answer as eager does, by the caller's layout
        return lin(x), x.reshape(-1), x.stride(), x.is_contiguous()
    return step


def test_view_argument_layout_guarded():
    """A non-contiguous view argument's own layout questions are answered from it, and the
    program keeps its strides as a guard: another layout of the same shape (a contiguous slice,
    another permutation) gets a program of its own, or eager's answers, never the first one's.
    Before, the first question was a graph break (the step ran eagerly)."""
    base = np.random.RandomState(0).randn(4, 3, 2).astype(np.float32)
    runs = {}
    for name, T in (("torch", torch), ("tracegrad", tracegrad)):
        lin = T.nn.Linear(2, 3)
        with T.no_grad():
            lin.weight.copy_(T.tensor(np.arange(6, dtype=np.float32).reshape(3, 2) / 7))
            lin.bias.copy_(T.tensor([0.5, -1.0, 2.0]))
        step = _layout_step(T, lin)
        if T is tracegrad:
            step = tracegrad.compile(step)
        bt = base.transpose(1, 0, 2)                                   # [3, 4, 2]
        args = [T.tensor(base).permute(1, 0, 2),                       # a permuted view
                T.tensor(base * 2).permute(1, 0, 2),                   # the same layout: its program
                T.tensor(np.concatenate([bt, bt]).copy())[:3],         # a contiguous view
                T.tensor(bt.transpose(2, 0, 1).copy()).permute(1, 2, 0),   # another permutation
                T.tensor(base - 1).permute(1, 0, 2)]                   # the first layout again
        outs = []
        for a in args:
            y, flat, stride, contiguous = step(a)
            outs.append((y.detach().numpy(), flat.detach().numpy(), stride, contiguous))
        runs[name] = outs
        if T is tracegrad:
            runs["stats"] = step.stats
    for i, (ref, got) in enumerate(zip(runs["torch"], runs["tracegrad"])):
        np.testing.assert_allclose(got[0], ref[0], rtol=1e-5, atol=1e-6, err_msg=f"call {i}")
        np.testing.assert_allclose(got[1], ref[1], rtol=1e-6, err_msg=f"call {i}")
        assert got[2:4] == ref[2:4], (i, got[2:4], ref[2:4])
    st = runs["stats"]
    assert st["graph_breaks"] == [], st
    # call 0 runs eagerly; calls 1, 2 and 3 trace a program each (three layouts of one shape);
    # call 4 reuses call 1's
    assert st["traces"] == 3 and st["calls"] == 5, st
