"""Round 40's second program, run eagerly with torch and with tracegrad (``parity.run_both``:
every logged value and everything printed must agree), from a repository no earlier round used,
KasperGroesLudvigsen/influenza_transformer (the time-series transformer of Wu et al. 2020, the
code of the "How to make a PyTorch Transformer for time series forecasting" article), all files
at 4093544:

- ``transformer_timeseries.py``: ``TimeSeriesTransformer`` (input ``Linear`` layers, a
  ``PositionalEncoder``, ``nn.TransformerEncoder`` of ``TransformerEncoderLayer``s and
  ``nn.TransformerDecoder`` of ``TransformerDecoderLayer``s with ``batch_first=False`` and
  ``norm=None``, the decoder called with a float ``tgt_mask`` and a non-square float
  ``memory_mask``, a final ``Linear``).
- ``positional_encoder.py``: the sin/cos table written through strided slices
  (``pe[:, 0, 0::2] = ...``) and registered as a buffer, sliced by sequence length.
- ``utils.py``: ``generate_square_subsequent_mask`` (``torch.triu(torch.ones(d1, d2) *
  float('-inf'), diagonal=1)``: ``0 * -inf`` NaNs below the diagonal that ``triu`` clears) and
  ``get_indices_entire_sequence``.
- ``dataset.py``: ``TransformerDataset`` (``get_src_trg``'s slices and asserts, ``trg_y.squeeze
  (-1)``) batched by ``torch.utils.data.DataLoader``.
- ``sandbox.py``: the ``permute(1, 0, 2)`` of ``src``/``trg`` for ``batch_first=False`` and its
  prints of the shapes; ``inference_example.py``'s training loop (Adam, ``MSELoss`` called as
  ``criterion(tgt_y, prediction)``: a ``[B, T]`` target against a ``[T, B, 1]`` prediction, which
  broadcasts to ``[T, B, T]`` with torch's size-mismatch ``UserWarning``, kept as written) and its
  validation loop through ``inference.py``'s ``run_encoder_decoder_inference`` (``src[-1, :, 0]``,
  ``unsqueeze``, masks regrown each step, ``torch.cat`` of the detached last prediction).

Changes, the same on both sides: sizes are tiny (a 24-point series, windows of 6 + 3 points,
batches of 4, ``dim_val`` 8, 2 heads, 2 + 2 layers, feed-forward width 16), the three dropout
rates are 0 (constructor arguments), parameters are overwritten from numpy after construction, the
series is a seeded noisy sine instead of the CSV, ``inference_example.py``'s ``Adam()`` gets the
model's parameters, lr 0.01 and eps 1e-3 (see the comment there), and
``generate_square_subsequent_mask`` takes the ``device`` argument ``inference.py`` passes
(utils.py's version lacks it) and moves the mask there. The training step also runs under
``tracegrad.compile`` in ``tests/compile/test_public_patterns_round40.py``.
"""
import math
import warnings
from typing import Tuple

import numpy as np
import pytest
from parity import init_params, run_both

torch = pytest.importorskip("torch")


def _program_classes(torch):
    nn = torch.nn
    Tensor = torch.Tensor
    Dataset = torch.utils.data.Dataset

    # ---- positional_encoder.py ----
    class PositionalEncoder(nn.Module):
        def __init__(
            self,
            dropout: float=0.1,
            max_seq_len: int=5000,
            d_model: int=512,
            batch_first: bool=False
            ):
            super().__init__()

            self.d_model = d_model

            self.dropout = nn.Dropout(p=dropout)

            self.batch_first = batch_first

            # adapted from PyTorch tutorial
            position = torch.arange(max_seq_len).unsqueeze(1)

            div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))

            if self.batch_first:
                pe = torch.zeros(1, max_seq_len, d_model)

                pe[0, :, 0::2] = torch.sin(position * div_term)

                pe[0, :, 1::2] = torch.cos(position * div_term)
            else:
                pe = torch.zeros(max_seq_len, 1, d_model)

                pe[:, 0, 0::2] = torch.sin(position * div_term)

                pe[:, 0, 1::2] = torch.cos(position * div_term)

            self.register_buffer('pe', pe)

        def forward(self, x: Tensor) -> Tensor:
            if self.batch_first:
                x = x + self.pe[:,:x.size(1)]
            else:
                x = x + self.pe[:x.size(0)]

            return self.dropout(x)

    pe = type("pe", (), {"PositionalEncoder": PositionalEncoder})

    # ---- transformer_timeseries.py ----
    class TimeSeriesTransformer(nn.Module):
        def __init__(self,
            input_size: int,
            dec_seq_len: int,
            batch_first: bool,
            out_seq_len: int=58,
            dim_val: int=512,
            n_encoder_layers: int=4,
            n_decoder_layers: int=4,
            n_heads: int=8,
            dropout_encoder: float=0.2,
            dropout_decoder: float=0.2,
            dropout_pos_enc: float=0.1,
            dim_feedforward_encoder: int=2048,
            dim_feedforward_decoder: int=2048,
            num_predicted_features: int=1
            ):
            super().__init__()

            self.dec_seq_len = dec_seq_len

            #print("input_size is: {}".format(input_size))
            #print("dim_val is: {}".format(dim_val))

            # Creating the three linear layers needed for the model
            self.encoder_input_layer = nn.Linear(
                in_features=input_size,
                out_features=dim_val
                )

            self.decoder_input_layer = nn.Linear(
                in_features=num_predicted_features,
                out_features=dim_val
                )

            self.linear_mapping = nn.Linear(
                in_features=dim_val,
                out_features=num_predicted_features
                )

            # Create positional encoder
            self.positional_encoding_layer = pe.PositionalEncoder(
                d_model=dim_val,
                dropout=dropout_pos_enc
                )

            # The encoder layer used in the paper is identical to the one used by
            # Vaswani et al (2017) on which the PyTorch module is based.
            encoder_layer = nn.TransformerEncoderLayer(
                d_model=dim_val,
                nhead=n_heads,
                dim_feedforward=dim_feedforward_encoder,
                dropout=dropout_encoder,
                batch_first=batch_first
                )

            # Stack the encoder layers in nn.TransformerDecoder
            self.encoder = nn.TransformerEncoder(
                encoder_layer=encoder_layer,
                num_layers=n_encoder_layers,
                norm=None
                )

            decoder_layer = nn.TransformerDecoderLayer(
                d_model=dim_val,
                nhead=n_heads,
                dim_feedforward=dim_feedforward_decoder,
                dropout=dropout_decoder,
                batch_first=batch_first
                )

            # Stack the decoder layers in nn.TransformerDecoder
            self.decoder = nn.TransformerDecoder(
                decoder_layer=decoder_layer,
                num_layers=n_decoder_layers,
                norm=None
                )

        def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor=None,
                    tgt_mask: Tensor=None) -> Tensor:
            # Pass throguh the input layer right before the encoder
            src = self.encoder_input_layer(src) # src shape: [batch_size, src length, dim_val] regardless of number of input features
            #print("From model.forward(): Size of src after input layer: {}".format(src.size()))

            # Pass through the positional encoding layer
            src = self.positional_encoding_layer(src) # src shape: [batch_size, src length, dim_val] regardless of number of input features
            #print("From model.forward(): Size of src after pos_enc layer: {}".format(src.size()))

            # Pass through all the stacked encoder layers in the encoder
            src = self.encoder( # src shape: [batch_size, enc_seq_len, dim_val]
                src=src
                )
            #print("From model.forward(): Size of src after encoder: {}".format(src.size()))

            # Pass decoder input through decoder input layer
            decoder_output = self.decoder_input_layer(tgt) # src shape: [target sequence length, batch_size, dim_val] regardless of number of input features
            #print("From model.forward(): Size of decoder_output after linear decoder layer: {}".format(decoder_output.size()))

            # Pass throguh decoder - output shape: [batch_size, target seq len, dim_val]
            decoder_output = self.decoder(
                tgt=decoder_output,
                memory=src,
                tgt_mask=tgt_mask,
                memory_mask=src_mask
                )

            # Pass through linear mapping
            decoder_output = self.linear_mapping(decoder_output) # shape [batch_size, target seq len]
            #print("From model.forward(): decoder_output size after linear_mapping = {}".format(decoder_output.size()))

            return decoder_output

    # ---- utils.py ----
    def generate_square_subsequent_mask(dim1: int, dim2: int, device="cpu") -> Tensor:
        return torch.triu(torch.ones(dim1, dim2) * float('-inf'), diagonal=1).to(device)

    def get_indices_entire_sequence(data, window_size: int, step_size: int) -> list:
        stop_position = len(data)-1 # 1- because of 0 indexing

        # Start the first sub-sequence at index position 0
        subseq_first_idx = 0

        subseq_last_idx = window_size

        indices = []

        while subseq_last_idx <= stop_position:

            indices.append((subseq_first_idx, subseq_last_idx))

            subseq_first_idx += step_size

            subseq_last_idx += step_size

        return indices

    utils = type("utils", (), {
        "generate_square_subsequent_mask": staticmethod(generate_square_subsequent_mask),
        "get_indices_entire_sequence": staticmethod(get_indices_entire_sequence)})

    # ---- dataset.py ----
    class TransformerDataset(Dataset):
        def __init__(self,
            data,
            indices: list,
            enc_seq_len: int,
            dec_seq_len: int,
            target_seq_len: int
            ) -> None:
            super().__init__()

            self.indices = indices

            self.data = data

            print("From get_src_trg: data size = {}".format(data.size()))

            self.enc_seq_len = enc_seq_len

            self.dec_seq_len = dec_seq_len

            self.target_seq_len = target_seq_len

        def __len__(self):

            return len(self.indices)

        def __getitem__(self, index):
            # Get the first element of the i'th tuple in the list self.indicesasdfas
            start_idx = self.indices[index][0]

            # Get the second (and last) element of the i'th tuple in the list self.indices
            end_idx = self.indices[index][1]

            sequence = self.data[start_idx:end_idx]

            src, trg, trg_y = self.get_src_trg(
                sequence=sequence,
                enc_seq_len=self.enc_seq_len,
                dec_seq_len=self.dec_seq_len,
                target_seq_len=self.target_seq_len
                )

            return src, trg, trg_y

        def get_src_trg(
            self,
            sequence,
            enc_seq_len: int,
            dec_seq_len: int,
            target_seq_len: int
            ) -> Tuple:
            assert len(sequence) == enc_seq_len + target_seq_len, "Sequence length does not equal (input length + target length)"

            # encoder input
            src = sequence[:enc_seq_len]

            # decoder input. As per the paper, it must have the same dimension as the
            # target sequence, and it must contain the last value of src, and all
            # values of trg_y except the last (i.e. it must be shifted right by 1)
            trg = sequence[enc_seq_len-1:len(sequence)-1]

            assert len(trg) == target_seq_len, "Length of trg does not match target sequence length"

            # The target sequence against which the model output will be compared to compute loss
            trg_y = sequence[-target_seq_len:]

            assert len(trg_y) == target_seq_len, "Length of trg_y does not match target sequence length"

            return src, trg, trg_y.squeeze(-1) # change size from [batch_size, target_seq_len, num_features] to [batch_size, target_seq_len]

    # ---- inference.py ----
    def run_encoder_decoder_inference(
        model,
        src,
        forecast_window: int,
        batch_size: int,
        device,
        batch_first: bool=False
        ):
        # Dimension of a batched model input that contains the target sequence values
        target_seq_dim = 0 if batch_first == False else 1

        # Take the last value of thetarget variable in all batches in src and make it tgt
        # as per the Influenza paper
        tgt = src[-1, :, 0] if batch_first == False else src[:, -1, 0] # shape [1, batch_size, 1]

        # Change shape from [batch_size] to [1, batch_size, 1]
        if batch_size == 1 and batch_first == False:
            tgt = tgt.unsqueeze(0).unsqueeze(0) # change from [1] to [1, 1, 1]

        # Change shape from [batch_size] to [1, batch_size, 1]
        if batch_first == False and batch_size > 1:
            tgt = tgt.unsqueeze(0).unsqueeze(-1)

        # Iteratively concatenate tgt with the first element in the prediction
        for _ in range(forecast_window-1):

            # Create masks
            dim_a = tgt.shape[1] if batch_first == True else tgt.shape[0]

            dim_b = src.shape[1] if batch_first == True else src.shape[0]

            tgt_mask = utils.generate_square_subsequent_mask(
                dim1=dim_a,
                dim2=dim_a,
                device=device
                )

            src_mask = utils.generate_square_subsequent_mask(
                dim1=dim_a,
                dim2=dim_b,
                device=device
                )

            # Make prediction
            prediction = model(src, tgt, src_mask, tgt_mask)

            # If statement simply makes sure that the predicted value is
            # extracted and reshaped correctly
            if batch_first == False:

                # Obtain the predicted value at t+1 where t is the last time step
                # represented in tgt
                last_predicted_value = prediction[-1, :, :]

                # Reshape from [batch_size, 1] --> [1, batch_size, 1]
                last_predicted_value = last_predicted_value.unsqueeze(0)

            else:

                # Obtain predicted value
                last_predicted_value = prediction[:, -1, :]

                # Reshape from [batch_size, 1] --> [batch_size, 1, 1]
                last_predicted_value = last_predicted_value.unsqueeze(-1)

            # Detach the predicted element from the graph and concatenate with
            # tgt in dimension 1 or 0
            tgt = torch.cat((tgt, last_predicted_value.detach()), target_seq_dim)

        # Create masks
        dim_a = tgt.shape[1] if batch_first == True else tgt.shape[0]

        dim_b = src.shape[1] if batch_first == True else src.shape[0]

        tgt_mask = utils.generate_square_subsequent_mask(
            dim1=dim_a,
            dim2=dim_a,
            device=device
            )

        src_mask = utils.generate_square_subsequent_mask(
            dim1=dim_a,
            dim2=dim_b,
            device=device
            )

        # Make final prediction
        final_prediction = model(src, tgt, src_mask, tgt_mask)

        return final_prediction

    return TimeSeriesTransformer, utils, TransformerDataset, run_encoder_decoder_inference


# sizes (sandbox.py's names)
dim_val, n_heads = 8, 2
enc_seq_len, output_sequence_length, batch_size = 6, 3, 4
window_size = enc_seq_len + output_sequence_length
step_size = 1
batch_first = False


def series(n=24, seed=0):
    rs = np.random.RandomState(seed)
    t = np.arange(n)
    return (np.sin(t / 3.0) + 0.1 * rs.randn(n))[:, None]   # [num obs, 1 variable]


def build(torch, seed=2, n_layers=2):
    """sandbox.py: the dataset, the loader and the model (dropouts 0, numpy parameters);
    ``n_layers`` encoder and decoder layers each."""
    TimeSeriesTransformer, utils, TransformerDataset, _ = _program_classes(torch)
    DataLoader = torch.utils.data.DataLoader
    training_data = series()
    training_indices = utils.get_indices_entire_sequence(
        data=training_data,
        window_size=window_size,
        step_size=step_size)
    training_data = TransformerDataset(
        data=torch.tensor(training_data).float(),
        indices=training_indices,
        enc_seq_len=enc_seq_len,
        dec_seq_len=enc_seq_len,
        target_seq_len=output_sequence_length
        )
    training_dataloader = DataLoader(training_data, batch_size)
    model = TimeSeriesTransformer(
        input_size=1,
        dec_seq_len=enc_seq_len,
        batch_first=batch_first,
        num_predicted_features=1,
        dim_val=dim_val,
        n_encoder_layers=n_layers,
        n_decoder_layers=n_layers,
        n_heads=n_heads,
        dropout_encoder=0.0,
        dropout_decoder=0.0,
        dropout_pos_enc=0.0,
        dim_feedforward_encoder=16,
        dim_feedforward_decoder=16,
        )
    init_params(torch, model, seed, scale=0.4)
    return model, utils, training_dataloader


def permuted(src, trg):
    # sandbox.py: [batch size, seq len, num features] -> [seq len, batch size, num features]
    if batch_first == False:
        shape_before = src.shape
        src = src.permute(1, 0, 2)
        print("src shape changed from {} to {}".format(shape_before, src.shape))
        shape_before = trg.shape
        trg = trg.permute(1, 0, 2)
        print("src shape changed from {} to {}".format(shape_before, src.shape))
    return src, trg


def _program(mod, log):
    torch = mod
    model, utils, training_dataloader = build(torch)
    run_encoder_decoder_inference = _program_classes(torch)[3]
    log("pe", model.positional_encoding_layer.pe[:12])
    forecast_window = output_sequence_length
    log("tgt_mask", utils.generate_square_subsequent_mask(dim1=forecast_window, dim2=forecast_window))
    log("src_mask", utils.generate_square_subsequent_mask(dim1=forecast_window, dim2=enc_seq_len))

    # inference_example.py
    epochs = 2
    # eps 1e-3, not 1e-8: the attention's key bias (in_proj_bias[8:16]) has an exactly zero
    # gradient in exact arithmetic (a constant added to a softmax row), so its computed gradient
    # is float32 rounding noise, which Adam at eps 1e-8 turns into steps of about lr
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, eps=1e-3)
    criterion = torch.nn.MSELoss()
    for epoch in range(epochs):
        model.train()
        for i, (src, tgt, tgt_y) in enumerate(training_dataloader):
            src, tgt = permuted(src, tgt)
            # zero the parameter gradients
            optimizer.zero_grad()

            # Generate masks
            tgt_mask = utils.generate_square_subsequent_mask(
                dim1=forecast_window,
                dim2=forecast_window
                )

            src_mask = utils.generate_square_subsequent_mask(
                dim1=forecast_window,
                dim2=enc_seq_len
                )

            # Make forecasts
            prediction = model(src, tgt, src_mask, tgt_mask)

            # Compute and backprop loss
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                loss = criterion(tgt_y, prediction)
            print([str(w.message) for w in caught])
            loss.backward()

            # Take optimizer step
            optimizer.step()
            log(f"prediction{epoch}.{i}", prediction)
            log(f"loss{epoch}.{i}", loss)
            print(f"epoch {epoch} batch {i} loss {loss.item():.5f}")

        # Iterate over all (x,y) pairs in validation dataloader
        model.eval()
        with torch.no_grad():
            for i, (src, tgt, tgt_y) in enumerate(training_dataloader):
                src, tgt = permuted(src, tgt)
                prediction = run_encoder_decoder_inference(
                    model=model,
                    src=src,
                    forecast_window=forecast_window,
                    batch_size=src.shape[1],
                    device="cpu",
                    )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    loss = criterion(tgt_y, prediction)
                log(f"val prediction{epoch}.{i}", prediction)
                log(f"val loss{epoch}.{i}", loss)
    log("grad_fn", type(prediction.grad_fn).__name__ if prediction.grad_fn else None)
    for name, p in model.named_parameters():
        log("param " + name, p)
        log("grad " + name, p.grad)


def test_influenza_time_series_transformer():
    run_both(_program)
