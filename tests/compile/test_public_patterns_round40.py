"""Round 40's compiled program: KasperGroesLudvigsen/influenza_transformer's training step
(``transformer_timeseries.py``, ``positional_encoder.py``, ``utils.py``, ``dataset.py``,
``inference_example.py`` at 4093544, ported in ``tests/api/test_public_programs_round40_tst.py``
and loaded from there) under ``tracegrad.compile``, against torch and tracegrad eager after every
call: the masks built inside the step (``torch.triu(torch.ones(d1, d2) * float('-inf'),
diagonal=1)``, square for the decoder's self-attention and 3 x 6 for its ``memory_mask``), the
encoder and decoder stacks with ``batch_first=False``, the broadcasting ``MSELoss`` call as
written (``criterion(tgt_y, prediction)``), ``backward`` and an Adam step in one compiled call,
on the loader's first two batches in turn (one shape: one program), with one encoder and one
decoder layer (the eager test has two of each)."""
import pytest

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
        batches = []
        batches = list(training_dataloader)[:2]

        @wrap
        def step(src, tgt, tgt_y):
            # inference_example.py's loop body, after sandbox.py's permute (inside the step: a
            # permuted view passed in is a graph break at the first Linear's reshape, tracegrad's
            # stand-ins for arguments being contiguous)
            src, tgt = src.permute(1, 0, 2), tgt.permute(1, 0, 2)
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
