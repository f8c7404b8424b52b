"""A forty-ninth round of public PyTorch programs run with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from repositories no
earlier round used, then their training steps under ``tracegrad.compile`` against tracegrad eager
and torch:

- wavefrontshaping/complexPyTorch (MIT), ``complexPyTorch/complexFunctions.py`` and
  ``complexLayers.py`` at 636e1cc: complex64 networks built from real layers
  (``apply_complex``'s ``(fr(x.real) - fi(x.imag)).type(torch.complex64) + 1j * ...``), the
  README's ``ComplexNet`` (complex conv, ``complex_max_pool2d`` by ``abs``/``atan2``/``gather`` of
  flattened indices, the whitening ``ComplexBatchNorm2d`` with its complex64 ``running_mean``
  buffer reassigned under ``no_grad``, ``x.abs()`` then ``log_softmax``) trained by momentum SGD;
  ``ComplexBatchNorm1d``, the naive batch norms, ``ComplexConvTranspose2d``, the complex pools,
  upsampling by parts and by amplitude/phase, ``complex_normalize``/``matmul``/``stack``, the
  complex GRU cell, ``ComplexGRU``/``ComplexLSTM`` (``torch.complex``), ``ComplexBNGRUCell``
  (returns None at that commit) and ``ComplexPReLU`` (a staticmethod taking ``self``: TypeError).

- timbmg/Sentence-VAE (no license file in the stored snapshot; embedded for testing only; Bowman
  et al. 2016), ``model.py``/``utils.py``/``train.py``/``inference.py`` at 4e2c700: ``sort`` by
  length, ``pack_padded_sequence`` of ``sorted_lengths.data.tolist()`` into a GRU/RNN (and a
  bidirectional two-layer RNN), the reparameterised latent, word dropout by a boolean-mask
  assignment of ``<unk>``, ``pad_packed_sequence`` and the inverse sort, ``NLLLoss(ignore_index=,
  reduction='sum')`` with the logistic KL annealing, ``defaultdict(torch.Tensor)`` trackers grown
  by ``torch.cat`` onto an empty 1-D tensor, ``torch.save``/``load_state_dict``, greedy
  ``inference`` (``arange(out=self.tensor())``, ``topk``, ``masked_select``, index assignment of
  rows); its ``unsqueeze`` of an already 3-D hidden state for a bidirectional model is a logged
  RuntimeError.

- pbloem/former (MIT), ``former/modules.py``, ``former/transformers.py``, ``former/util/util.py``
  and ``experiments/generate.py``'s ``go`` at ad9cc70: ``GTransformer`` with each attention kind
  (default, ``einsum`` 'alt', wide, GPT-2's split/permute, narrow, relative with ``slice_diag``),
  ``mask_`` by ``triu_indices`` index assignment of ``-inf``, ``LambdaLR`` warmup,
  ``clip_grad_norm_``, greedy ``sample_sequence`` printing ``chr`` of 0-d tensors,
  ``compute_compression`` (``type(output) != torch.Tensor``, advanced indexing of log-probs), the
  ``Categorical`` of ``util.sample``; ``CTransformer`` pooling, cross ``Attention`` with
  ``kqnorm``, GPT's ``Conv1D`` by ``addmm``.

- Harry24k/bayesian-neural-network-pytorch (MIT), ``torchbnn`` at 3555c30: ``BayesLinear``/
  ``BayesConv2d`` (circular padding)/``BayesBatchNorm2d`` drawing ``randn_like`` noise, buffers
  registered as None then set (``freeze``/``unfreeze``), ``bayesian_kl_loss`` accumulating into
  ``torch.Tensor([0])`` in place, ``BKLLoss`` (its ValueError), the classification and freeze
  demos (``demos/*.ipynb`` at 5f501ef).

- chrischute/real-nvp (MIT), ``models/``, ``util/`` and ``train.py`` at df51ad5: ``RealNVP`` with
  checkerboard couplings (``nn.utils.weight_norm`` on every convolution and on ``Rescale``;
  ``x *= 2.`` on a batch norm's output; ``sldj +=``), the logit pre-processing with
  ``rand_like`` dequantisation, ``RealNVPLoss``, parameter groups with weight decay on
  ``weight_g``, ``clip_grad_norm_`` per group, sampling in reverse, ``squeeze_2x2`` by permutes and
  by a ``conv_transpose2d`` of a permutation kernel. With two scales the channel-wise coupling's
  ``s.view`` of a channels-last ``chunk`` is torch 2.x's RuntimeError (logged on both sides).

Changes, the same on both sides: tiny sizes (complex: 12 x 12 images, 3/4 channels; VAE: 12 words,
hidden 6, latent 3; former: embedding 8, 2 heads, depth 2, context 6; torchbnn: 8 hidden units;
real-nvp: 3 x 8 x 8 images, 4 channels, one block, one scale), a few steps, synthetic data,
weights overwritten from numpy, random draws from seeded numpy streams (``SeededTorch`` and its
subclasses here), loaders unshuffled, progress bars, tensorboard and plots left out. Each
section notes its own.

Found: ``nn.utils.weight_norm`` and the weight_norm parametrization gave a weight with grad_fn
``MulBackward0`` where torch's ``_weight_norm`` runs its fused ``WeightNormInterfaceBackward0``
node (dim 0 or last); ``torch._weight_norm``/``_weight_norm_interface`` were missing (fixed:
``_ops/nn_ops.py``, ``_api/nn_functions.py``). Gradients through no-op parameters (a key bias
before softmax, conv biases before batch norm, a weight norm over single entries) are float32
noise that Adam turns into lr-sized steps: those entries are left out or Adam's eps is raised.
"""
import types
import warnings

import numpy as np
import pytest

from parity import same_step_runs as _same_runs, step_arrays as _np, SeededTorch, get_torch, grad_fn_name, init_params, np_randn, printer, run_both, seeded

import tracegrad

# ---- wavefrontshaping/complexPyTorch -----------------------------------------------------------
def _complex_modules(torch):
    # ``complexPyTorch/complexFunctions.py`` and ``complexLayers.py`` at 636e1cc (MIT), their
    # ``from torch... import`` lines as names of the given module
    from typing import Optional
    F = torch.nn.functional
    max_pool2d, avg_pool2d, dropout, dropout2d, interpolate = (
        F.max_pool2d, F.avg_pool2d, F.dropout, F.dropout2d, F.interpolate)
    tanh, relu, sigmoid = torch.tanh, torch.relu, torch.sigmoid
    nn = torch.nn
    Module, Parameter, init = nn.Module, nn.Parameter, nn.init
    Conv2d, ConvTranspose2d, Linear, LSTM, GRU = nn.Conv2d, nn.ConvTranspose2d, nn.Linear, nn.LSTM, nn.GRU
    BatchNorm1d, BatchNorm2d, PReLU = nn.BatchNorm1d, nn.BatchNorm2d, nn.PReLU

    def complex_matmul(A, B):
        """
        Performs the matrix product between two complex matrices
        """

        outp_real = torch.matmul(A.real, B.real) - torch.matmul(A.imag, B.imag)
        outp_imag = torch.matmul(A.real, B.imag) + torch.matmul(A.imag, B.real)

        return outp_real.type(torch.complex64) + 1j * outp_imag.type(torch.complex64)


    def complex_avg_pool2d(inp, *args, **kwargs):
        """
        Perform complex average pooling.
        """
        absolute_value_real = avg_pool2d(inp.real, *args, **kwargs)
        absolute_value_imag = avg_pool2d(inp.imag, *args, **kwargs)

        return absolute_value_real.type(torch.complex64) + 1j * absolute_value_imag.type(
            torch.complex64
        )


    def complex_normalize(inp):
        """
        Perform complex normalization
        """
        real_value, imag_value = inp.real, inp.imag
        real_norm = (real_value - real_value.mean()) / real_value.std()
        imag_norm = (imag_value - imag_value.mean()) / imag_value.std()
        return real_norm.type(torch.complex64) + 1j * imag_norm.type(torch.complex64)


    def complex_relu(inp):
        return relu(inp.real).type(torch.complex64) + 1j * relu(inp.imag).type(
            torch.complex64
        )


    def complex_sigmoid(inp):
        return sigmoid(inp.real).type(torch.complex64) + 1j * sigmoid(inp.imag).type(
            torch.complex64
        )


    def complex_tanh(inp):
        return tanh(inp.real).type(torch.complex64) + 1j * tanh(inp.imag).type(
            torch.complex64
        )


    def complex_opposite(inp):
        return -inp.real.type(torch.complex64) + 1j * (-inp.imag.type(torch.complex64))


    def complex_stack(inp, dim):
        inp_real = [x.real for x in inp]
        inp_imag = [x.imag for x in inp]
        return torch.stack(inp_real, dim).type(torch.complex64) + 1j * torch.stack(
            inp_imag, dim
        ).type(torch.complex64)


    def _retrieve_elements_from_indices(tensor, indices):
        flattened_tensor = tensor.flatten(start_dim=-2)
        output = flattened_tensor.gather(
            dim=-1, index=indices.flatten(start_dim=-2)
        ).view_as(indices)
        return output


    def complex_upsample(
        inp,
        size=None,
        scale_factor=None,
        mode="nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        """
        Performs upsampling by separately interpolating the real and imaginary part and recombining
        """
        outp_real = interpolate(
            inp.real,
            size=size,
            scale_factor=scale_factor,
            mode=mode,
            align_corners=align_corners,
            recompute_scale_factor=recompute_scale_factor,
        )
        outp_imag = interpolate(
            inp.imag,
            size=size,
            scale_factor=scale_factor,
            mode=mode,
            align_corners=align_corners,
            recompute_scale_factor=recompute_scale_factor,
        )

        return outp_real.type(torch.complex64) + 1j * outp_imag.type(torch.complex64)


    def complex_upsample2(
        inp,
        size=None,
        scale_factor=None,
        mode="nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        """
        Performs upsampling by separately interpolating the amplitude and phase part and recombining
        """
        outp_abs = interpolate(
            inp.abs(),
            size=size,
            scale_factor=scale_factor,
            mode=mode,
            align_corners=align_corners,
            recompute_scale_factor=recompute_scale_factor,
        )
        angle = torch.atan2(inp.imag, inp.real)
        outp_angle = interpolate(
            angle,
            size=size,
            scale_factor=scale_factor,
            mode=mode,
            align_corners=align_corners,
            recompute_scale_factor=recompute_scale_factor,
        )

        return outp_abs * (
            torch.cos(outp_angle).type(torch.complex64)
            + 1j * torch.sin(outp_angle).type(torch.complex64)
        )


    def complex_max_pool2d(
        inp,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        ceil_mode=False,
        return_indices=False,
    ):
        """
        Perform complex max pooling by selecting on the absolute value on the complex values.
        """
        absolute_value, indices = max_pool2d(
            inp.abs(),
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            ceil_mode=ceil_mode,
            return_indices=True,
        )
        # performs the selection on the absolute values
        absolute_value = absolute_value.type(torch.complex64)
        # retrieve the corresponding phase value using the indices
        # unfortunately, the derivative for 'angle' is not implemented
        angle = torch.atan2(inp.imag, inp.real)
        # get only the phase values selected by max pool
        angle = _retrieve_elements_from_indices(angle, indices)
        return absolute_value * (
            torch.cos(angle).type(torch.complex64)
            + 1j * torch.sin(angle).type(torch.complex64)
        )


    def complex_dropout(inp, p=0.5, training=True):
        # need to have the same dropout mask for real and imaginary part,
        # this not a clean solution!
        mask = torch.ones(*inp.shape, dtype=torch.float32, device=inp.device)
        mask = dropout(mask, p, training) * 1 / (1 - p)
        mask.type(inp.dtype)
        return mask * inp


    def complex_dropout2d(inp, p=0.5, training=True):
        # need to have the same dropout mask for real and imaginary part,
        # this not a clean solution!
        mask = torch.ones(*inp.shape, dtype=torch.float32, device=inp.device)
        mask = dropout2d(mask, p, training) * 1 / (1 - p)
        mask.type(inp.dtype)
        return mask * inp


    def apply_complex(fr, fi, input, dtype=torch.complex64):
        return (fr(input.real)-fi(input.imag)).type(dtype) \
            + 1j*(fr(input.imag)+fi(input.real)).type(dtype)


    class ComplexDropout(Module):
        def __init__(self, p=0.5):
            super().__init__()
            self.p = p

        def forward(self, input):
            if self.training:
                return complex_dropout(input, self.p)
            else:
                return input


    class ComplexDropout2d(Module):
        def __init__(self, p=0.5):
            super(ComplexDropout2d, self).__init__()
            self.p = p

        def forward(self, inp):
            if self.training:
                return complex_dropout2d(inp, self.p)
            else:
                return inp


    class ComplexMaxPool2d(Module):
        def __init__(
            self,
            kernel_size,
            stride=None,
            padding=0,
            dilation=1,
            return_indices=False,
            ceil_mode=False,
        ):
            super(ComplexMaxPool2d, self).__init__()
            self.kernel_size = kernel_size
            self.stride = stride
            self.padding = padding
            self.dilation = dilation
            self.ceil_mode = ceil_mode
            self.return_indices = return_indices

        def forward(self, inp):
            return complex_max_pool2d(
                inp,
                kernel_size=self.kernel_size,
                stride=self.stride,
                padding=self.padding,
                dilation=self.dilation,
                ceil_mode=self.ceil_mode,
                return_indices=self.return_indices,
            )


    class ComplexAvgPool2d(torch.nn.Module):

        def __init__(self, kernel_size, stride=None, padding=0,
                     ceil_mode=False, count_include_pad=True, divisor_override=None):
            super(ComplexAvgPool2d, self).__init__()
            self.kernel_size = kernel_size
            self.stride = stride
            self.padding = padding
            self.ceil_mode = ceil_mode
            self.count_include_pad = count_include_pad
            self.divisor_override = divisor_override

        def forward(self, inp):
            return complex_avg_pool2d(inp, kernel_size=self.kernel_size,
                                      stride=self.stride, padding=self.padding,
                                      ceil_mode=self.ceil_mode, count_include_pad=self.count_include_pad,
                                      divisor_override=self.divisor_override)


    class ComplexReLU(Module):
        @staticmethod
        def forward(inp):
            return complex_relu(inp)


    class ComplexSigmoid(Module):
        @staticmethod
        def forward(inp):
            return complex_sigmoid(inp)


    class ComplexPReLU(Module):
        def __init__(self):
            super().__init__()
            self.r_prelu = PReLU()
            self.i_prelu = PReLU()

        @staticmethod
        def forward(self, inp):
            return self.r_prelu(inp.real) + 1j*self.i_prelu(inp.imag)


    class ComplexTanh(Module):
        @staticmethod
        def forward(inp):
            return complex_tanh(inp)


    class ComplexConvTranspose2d(Module):
        def __init__(
            self,
            in_channels,
            out_channels,
            kernel_size,
            stride=1,
            padding=0,
            output_padding=0,
            groups=1,
            bias=True,
            dilation=1,
            padding_mode="zeros",
        ):

            super().__init__()

            self.conv_tran_r = ConvTranspose2d(in_channels, out_channels, kernel_size, stride, padding,
                                               output_padding, groups, bias, dilation, padding_mode)
            self.conv_tran_i = ConvTranspose2d(in_channels, out_channels, kernel_size, stride, padding,
                                               output_padding, groups, bias, dilation, padding_mode)

        def forward(self, inp):
            return apply_complex(self.conv_tran_r, self.conv_tran_i, inp)


    class ComplexConv2d(Module):
        def __init__(
            self,
            in_channels,
            out_channels,
            kernel_size=3,
            stride=1,
            padding=0,
            dilation=1,
            groups=1,
            bias=True,
        ):
            super(ComplexConv2d, self).__init__()
            self.conv_r = Conv2d(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                dilation,
                groups,
                bias,
            )
            self.conv_i = Conv2d(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                dilation,
                groups,
                bias,
            )

        def forward(self, inp):
            return apply_complex(self.conv_r, self.conv_i, inp)


    class ComplexLinear(Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.fc_r = Linear(in_features, out_features)
            self.fc_i = Linear(in_features, out_features)

        def forward(self, inp):
            return apply_complex(self.fc_r, self.fc_i, inp)


    class NaiveComplexBatchNorm1d(Module):
        """
        Naive approach to complex batch norm, perform batch norm independently on real and imaginary part.
        """

        def __init__(
            self,
            num_features,
            eps=1e-5,
            momentum=0.1,
            affine=True,
            track_running_stats=True,
        ):
            super(NaiveComplexBatchNorm1d, self).__init__()
            self.bn_r = BatchNorm1d(
                num_features, eps, momentum, affine, track_running_stats
            )
            self.bn_i = BatchNorm1d(
                num_features, eps, momentum, affine, track_running_stats
            )

        def forward(self, inp):
            return self.bn_r(inp.real).type(torch.complex64) + 1j * self.bn_i(
                inp.imag
            ).type(torch.complex64)


    class NaiveComplexBatchNorm2d(Module):
        """
        Naive approach to complex batch norm, perform batch norm independently on real and imaginary part.
        """

        def __init__(
            self,
            num_features,
            eps=1e-5,
            momentum=0.1,
            affine=True,
            track_running_stats=True,
        ):
            super(NaiveComplexBatchNorm2d, self).__init__()
            self.bn_r = BatchNorm2d(
                num_features, eps, momentum, affine, track_running_stats
            )
            self.bn_i = BatchNorm2d(
                num_features, eps, momentum, affine, track_running_stats
            )

        def forward(self, inp):
            return self.bn_r(inp.real).type(torch.complex64) + 1j * self.bn_i(
                inp.imag
            ).type(torch.complex64)


    class _ComplexBatchNorm(Module):
        running_mean: Optional[torch.Tensor]

        def __init__(
            self,
            num_features,
            eps=1e-5,
            momentum=0.1,
            affine=True,
            track_running_stats=True,
        ):
            super(_ComplexBatchNorm, self).__init__()
            self.num_features = num_features
            self.eps = eps
            self.momentum = momentum
            self.affine = affine
            self.track_running_stats = track_running_stats
            if self.affine:
                self.weight = Parameter(torch.Tensor(num_features, 3))
                self.bias = Parameter(torch.Tensor(num_features, 2))
            else:
                self.register_parameter("weight", None)
                self.register_parameter("bias", None)
            if self.track_running_stats:
                self.register_buffer(
                    "running_mean", torch.zeros(
                        num_features, dtype=torch.complex64)
                )
                self.register_buffer("running_covar", torch.zeros(num_features, 3))
                self.running_covar[:, 0] = 1.4142135623730951
                self.running_covar[:, 1] = 1.4142135623730951
                self.register_buffer(
                    "num_batches_tracked", torch.tensor(0, dtype=torch.long)
                )
            else:
                self.register_parameter("running_mean", None)
                self.register_parameter("running_covar", None)
                self.register_parameter("num_batches_tracked", None)
            self.reset_parameters()

        def reset_running_stats(self):
            if self.track_running_stats:
                self.running_mean.zero_()
                self.running_covar.zero_()
                self.running_covar[:, 0] = 1.4142135623730951
                self.running_covar[:, 1] = 1.4142135623730951
                self.num_batches_tracked.zero_()

        def reset_parameters(self):
            self.reset_running_stats()
            if self.affine:
                init.constant_(self.weight[:, :2], 1.4142135623730951)
                init.zeros_(self.weight[:, 2])
                init.zeros_(self.bias)


    class ComplexBatchNorm2d(_ComplexBatchNorm):
        def forward(self, inp):
            exponential_average_factor = 0.0

            if self.training and self.track_running_stats:
                if self.num_batches_tracked is not None:
                    self.num_batches_tracked += 1
                    if self.momentum is None:  # use cumulative moving average
                        exponential_average_factor = 1.0 / \
                            float(self.num_batches_tracked)
                    else:  # use exponential moving average
                        exponential_average_factor = self.momentum

            if self.training or (not self.track_running_stats):
                # calculate mean of real and imaginary part
                # mean does not support automatic differentiation for outputs with complex dtype.
                mean_r = inp.real.mean([0, 2, 3]).type(torch.complex64)
                mean_i = inp.imag.mean([0, 2, 3]).type(torch.complex64)
                mean = mean_r + 1j * mean_i
            else:
                mean = self.running_mean

            if self.training and self.track_running_stats:
                # update running mean
                with torch.no_grad():
                    self.running_mean = (
                        exponential_average_factor * mean
                        + (1 - exponential_average_factor) * self.running_mean
                    )

            inp = inp - mean[None, :, None, None]

            if self.training or (not self.track_running_stats):
                # Elements of the covariance matrix (biased for train)
                n = inp.numel() / inp.size(1)
                Crr = 1.0 / n * inp.real.pow(2).sum(dim=[0, 2, 3]) + self.eps
                Cii = 1.0 / n * inp.imag.pow(2).sum(dim=[0, 2, 3]) + self.eps
                Cri = (inp.real.mul(inp.imag)).mean(dim=[0, 2, 3])
            else:
                Crr = self.running_covar[:, 0] + self.eps
                Cii = self.running_covar[:, 1] + self.eps
                Cri = self.running_covar[:, 2]  # +self.eps

            if self.training and self.track_running_stats:
                with torch.no_grad():
                    self.running_covar[:, 0] = (
                        exponential_average_factor * Crr * n / (n - 1)  #
                        + (1 - exponential_average_factor) * \
                        self.running_covar[:, 0]
                    )

                    self.running_covar[:, 1] = (
                        exponential_average_factor * Cii * n / (n - 1)
                        + (1 - exponential_average_factor) *
                        self.running_covar[:, 1]
                    )

                    self.running_covar[:, 2] = (
                        exponential_average_factor * Cri * n / (n - 1)
                        + (1 - exponential_average_factor) *
                        self.running_covar[:, 2]
                    )

            # calculate the inverse square root the covariance matrix
            det = Crr * Cii - Cri.pow(2)
            s = torch.sqrt(det)
            t = torch.sqrt(Cii + Crr + 2 * s)
            inverse_st = 1.0 / (s * t)
            Rrr = (Cii + s) * inverse_st
            Rii = (Crr + s) * inverse_st
            Rri = -Cri * inverse_st

            inp = (
                Rrr[None, :, None, None] * inp.real +
                Rri[None, :, None, None] * inp.imag
            ).type(torch.complex64) + 1j * (
                Rii[None, :, None, None] * inp.imag +
                Rri[None, :, None, None] * inp.real
            ).type(
                torch.complex64
            )

            if self.affine:
                inp = (
                    self.weight[None, :, 0, None, None] * inp.real
                    + self.weight[None, :, 2, None, None] * inp.imag
                    + self.bias[None, :, 0, None, None]
                ).type(torch.complex64) + 1j * (
                    self.weight[None, :, 2, None, None] * inp.real
                    + self.weight[None, :, 1, None, None] * inp.imag
                    + self.bias[None, :, 1, None, None]
                ).type(
                    torch.complex64
                )
            return inp


    class ComplexBatchNorm1d(_ComplexBatchNorm):
        def forward(self, inp):

            exponential_average_factor = 0.0

            if self.training and self.track_running_stats:
                if self.num_batches_tracked is not None:
                    self.num_batches_tracked += 1
                    if self.momentum is None:  # use cumulative moving average
                        exponential_average_factor = 1.0 / \
                            float(self.num_batches_tracked)
                    else:  # use exponential moving average
                        exponential_average_factor = self.momentum

            if self.training or (not self.track_running_stats):
                # calculate mean of real and imaginary part
                mean_r = inp.real.mean(dim=0).type(torch.complex64)
                mean_i = inp.imag.mean(dim=0).type(torch.complex64)
                mean = mean_r + 1j * mean_i
            else:
                mean = self.running_mean

            if self.training and self.track_running_stats:
                # update running mean
                with torch.no_grad():
                    self.running_mean = (
                        exponential_average_factor * mean
                        + (1 - exponential_average_factor) * self.running_mean
                    )

            inp = inp - mean[None, ...]

            if self.training or (not self.track_running_stats):
                # Elements of the covariance matrix (biased for train)
                n = inp.numel() / inp.size(1)
                Crr = inp.real.var(dim=0, unbiased=False) + self.eps
                Cii = inp.imag.var(dim=0, unbiased=False) + self.eps
                Cri = (inp.real.mul(inp.imag)).mean(dim=0)
            else:
                Crr = self.running_covar[:, 0] + self.eps
                Cii = self.running_covar[:, 1] + self.eps
                Cri = self.running_covar[:, 2]

            if self.training and self.track_running_stats:
                with torch.no_grad():
                    self.running_covar[:, 0] = (
                        exponential_average_factor * Crr * n / (n - 1)
                        + (1 - exponential_average_factor) *
                        self.running_covar[:, 0]
                    )

                    self.running_covar[:, 1] = (
                        exponential_average_factor * Cii * n / (n - 1)
                        + (1 - exponential_average_factor) *
                        self.running_covar[:, 1]
                    )

                    self.running_covar[:, 2] = (
                        exponential_average_factor * Cri * n / (n - 1)
                        + (1 - exponential_average_factor) *
                        self.running_covar[:, 2]
                    )

            # calculate the inverse square root the covariance matrix
            det = Crr * Cii - Cri.pow(2)
            s = torch.sqrt(det)
            t = torch.sqrt(Cii + Crr + 2 * s)
            inverse_st = 1.0 / (s * t)
            Rrr = (Cii + s) * inverse_st
            Rii = (Crr + s) * inverse_st
            Rri = -Cri * inverse_st

            inp = (Rrr[None, :] * inp.real + Rri[None, :] * inp.imag).type(
                torch.complex64
            ) + 1j * (Rii[None, :] * inp.imag + Rri[None, :] * inp.real).type(
                torch.complex64
            )

            if self.affine:
                inp = (
                    self.weight[None, :, 0] * inp.real
                    + self.weight[None, :, 2] * inp.imag
                    + self.bias[None, :, 0]
                ).type(torch.complex64) + 1j * (
                    self.weight[None, :, 2] * inp.real
                    + self.weight[None, :, 1] * inp.imag
                    + self.bias[None, :, 1]
                ).type(
                    torch.complex64
                )

            del Crr, Cri, Cii, Rrr, Rii, Rri, det, s, t
            return inp


    class ComplexGRUCell(Module):
        """
        A GRU cell for complex-valued inputs
        """

        def __init__(self, input_length, hidden_length):
            super().__init__()
            self.input_length = input_length
            self.hidden_length = hidden_length

            # reset gate components
            self.linear_reset_w1 = ComplexLinear(
                self.input_length, self.hidden_length)
            self.linear_reset_r1 = ComplexLinear(
                self.hidden_length, self.hidden_length)

            self.linear_reset_w2 = ComplexLinear(
                self.input_length, self.hidden_length)
            self.linear_reset_r2 = ComplexLinear(
                self.hidden_length, self.hidden_length)

            # update gate components
            self.linear_gate_w3 = ComplexLinear(
                self.input_length, self.hidden_length)
            self.linear_gate_r3 = ComplexLinear(
                self.hidden_length, self.hidden_length)

            self.activation_gate = ComplexSigmoid()
            self.activation_candidate = ComplexTanh()

        def reset_gate(self, x, h):
            x_1 = self.linear_reset_w1(x)
            h_1 = self.linear_reset_r1(h)
            # gate update
            reset = self.activation_gate(x_1 + h_1)
            return reset

        def update_gate(self, x, h):
            x_2 = self.linear_reset_w2(x)
            h_2 = self.linear_reset_r2(h)
            z = self.activation_gate(h_2 + x_2)
            return z

        def update_component(self, x, h, r):
            x_3 = self.linear_gate_w3(x)
            h_3 = r * self.linear_gate_r3(h)  # element-wise multiplication
            gate_update = self.activation_candidate(x_3 + h_3)
            return gate_update

        def forward(self, x, h):
            # Equation 1. reset gate vector
            r = self.reset_gate(x, h)

            # Equation 2: the update gate - the shared update gate vector z
            z = self.update_gate(x, h)

            # Equation 3: The almost output component
            n = self.update_component(x, h, r)

            # Equation 4: the new hidden state
            h_new = (1 + complex_opposite(z)) * n + \
                z * h  # element-wise multiplication
            return h_new


    class ComplexBNGRUCell(Module):
        """
        A BN-GRU cell for complex-valued inputs
        """

        def __init__(self, input_length=10, hidden_length=20):
            super().__init__()
            self.input_length = input_length
            self.hidden_length = hidden_length

            # reset gate components
            self.linear_reset_w1 = ComplexLinear(
                self.input_length, self.hidden_length)
            self.linear_reset_r1 = ComplexLinear(
                self.hidden_length, self.hidden_length)

            self.linear_reset_w2 = ComplexLinear(
                self.input_length, self.hidden_length)
            self.linear_reset_r2 = ComplexLinear(
                self.hidden_length, self.hidden_length)

            # update gate components
            self.linear_gate_w3 = ComplexLinear(
                self.input_length, self.hidden_length)
            self.linear_gate_r3 = ComplexLinear(
                self.hidden_length, self.hidden_length)

            self.activation_gate = ComplexSigmoid()
            self.activation_candidate = ComplexTanh()

            self.bn = ComplexBatchNorm2d(1)

        def reset_gate(self, x, h):
            x_1 = self.linear_reset_w1(x)
            h_1 = self.linear_reset_r1(h)
            # gate update
            reset = self.activation_gate(self.bn(x_1) + self.bn(h_1))
            return reset

        def update_gate(self, x, h):
            x_2 = self.linear_reset_w2(x)
            h_2 = self.linear_reset_r2(h)
            z = self.activation_gate(self.bn(h_2) + self.bn(x_2))
            return z

        def update_component(self, x, h, r):
            x_3 = self.linear_gate_w3(x)
            # element-wise multiplication
            h_3 = r * self.bn(self.linear_gate_r3(h))
            gate_update = self.activation_candidate(self.bn(self.bn(x_3) + h_3))
            return gate_update

        def forward(self, x, h):
            # Equation 1. reset gate vector
            r = self.reset_gate(x, h)

            # Equation 2: the update gate - the shared update gate vector z
            z = self.update_gate(x, h)

            # Equation 3: The almost output component
            n = self.update_component(x, h, r)

            # Equation 4: the new hidden state


    class ComplexGRU(Module):
        def __init__(self, input_size, hidden_size, num_layers=1, bias=True,
                     batch_first=False, dropout=0, bidirectional=False):
            super().__init__()

            self.gru_re = GRU(input_size=input_size, hidden_size=hidden_size,
                              num_layers=num_layers, bias=bias,
                              batch_first=batch_first, dropout=dropout,
                              bidirectional=bidirectional)
            self.gru_im = GRU(input_size=input_size, hidden_size=hidden_size,
                              num_layers=num_layers, bias=bias,
                              batch_first=batch_first, dropout=dropout,
                              bidirectional=bidirectional)

        def forward(self, x):
            real, state_real = self._forward_real(x)
            imaginary, state_imag = self._forward_imaginary(x)

            output = torch.complex(real, imaginary)
            state = torch.complex(state_real, state_imag)

            return output, state

        def forward(self, x):
            r2r_out = self.gru_re(x.real)[0]
            r2i_out = self.gru_im(x.real)[0]
            i2r_out = self.gru_re(x.imag)[0]
            i2i_out = self.gru_im(x.imag)[0]
            real_out = r2r_out - i2i_out
            imag_out = i2r_out + r2i_out

            return torch.complex(real_out, imag_out), None

        def _forward_real(self, x):
            real_real, h_real = self.gru_re(x.real)
            imag_imag, h_imag = self.gru_im(x.imag)
            real = real_real - imag_imag

            return real, torch.complex(h_real, h_imag)

        def _forward_imaginary(self, x):
            imag_real, h_real = self.gru_re(x.imag)
            real_imag, h_imag = self.gru_im(x.real)
            imaginary = imag_real + real_imag

            return imaginary, torch.complex(h_real, h_imag)


    class ComplexLSTM(Module):
        def __init__(self, input_size, hidden_size, num_layers=1, bias=True,
                     batch_first=False, dropout=0, bidirectional=False):
            super().__init__()
            self.num_layer = num_layers
            self.hidden_size = hidden_size
            self.batch_dim = 0 if batch_first else 1
            self.bidirectional = bidirectional

            self.lstm_re = LSTM(input_size=input_size, hidden_size=hidden_size,
                                num_layers=num_layers, bias=bias,
                                batch_first=batch_first, dropout=dropout,
                                bidirectional=bidirectional)
            self.lstm_im = LSTM(input_size=input_size, hidden_size=hidden_size,
                                num_layers=num_layers, bias=bias,
                                batch_first=batch_first, dropout=dropout,
                                bidirectional=bidirectional)

        def forward(self, x):
            real, state_real = self._forward_real(x)
            imaginary, state_imag = self._forward_imaginary(x)

            output = torch.complex(real, imaginary)

            return output, (state_real, state_imag)

        def _forward_real(self, x):
            h_real, h_imag, c_real, c_imag = self._init_state(
                self._get_batch_size(x), x.is_cuda)
            real_real, (h_real, c_real) = self.lstm_re(x.real, (h_real, c_real))
            imag_imag, (h_imag, c_imag) = self.lstm_im(x.imag, (h_imag, c_imag))
            real = real_real - imag_imag
            return real, ((h_real, c_real), (h_imag, c_imag))

        def _forward_imaginary(self, x):
            h_real, h_imag, c_real, c_imag = self._init_state(
                self._get_batch_size(x), x.is_cuda)
            imag_real, (h_real, c_real) = self.lstm_re(x.imag, (h_real, c_real))
            real_imag, (h_imag, c_imag) = self.lstm_im(x.real, (h_imag, c_imag))
            imaginary = imag_real + real_imag

            return imaginary, ((h_real, c_real), (h_imag, c_imag))

        def _init_state(self, batch_size, to_gpu=False):
            dim_0 = 2 if self.bidirectional else 1
            dims = (dim_0, batch_size, self.hidden_size)

            h_real, h_imag, c_real, c_imag = [
                torch.zeros(dims) for i in range(4)]

            if to_gpu:
                h_real, h_imag, c_real, c_imag = [
                    t.cuda() for t in [h_real, h_imag, c_real, c_imag]]

            return h_real, h_imag, c_real, c_imag

        def _get_batch_size(self, x):
            return x.size(self.batch_dim)
            h_new = (1 + complex_opposite(z)) * n + \
                z * h  # element-wise multiplication

            return h_new


    return types.SimpleNamespace(**{k: v for k, v in locals().items()
                                    if k.startswith(("complex_", "Complex", "Naive", "apply_"))})


def _complex_net(torch, C):
    # the README's ``ComplexNet`` (MNIST 28 x 28, 10/20 channels, 500 hidden) at 12 x 12 with
    # 3/4 channels, 8 hidden and 4 classes
    nn = torch.nn
    F = torch.nn.functional
    ComplexConv2d, ComplexBatchNorm2d, ComplexLinear = C.ComplexConv2d, C.ComplexBatchNorm2d, C.ComplexLinear
    complex_relu, complex_max_pool2d = C.complex_relu, C.complex_max_pool2d

    class ComplexNet(nn.Module):

        def __init__(self):
            super(ComplexNet, self).__init__()
            self.conv1 = ComplexConv2d(1, 3, 3, 1)
            self.bn  = ComplexBatchNorm2d(3)
            self.conv2 = ComplexConv2d(3, 4, 2, 1)
            self.fc1 = ComplexLinear(2*2*4, 8)
            self.fc2 = ComplexLinear(8, 4)

        def forward(self,x):
            x = self.conv1(x)
            x = complex_relu(x)
            x = complex_max_pool2d(x, 2, 2)
            x = self.bn(x)
            x = self.conv2(x)
            x = complex_relu(x)
            x = complex_max_pool2d(x, 2, 2)
            x = x.view(-1,2*2*4)
            x = self.fc1(x)
            x = complex_relu(x)
            x = self.fc2(x)
            x = x.abs()
            x =  F.log_softmax(x, dim=1)
            return x

    return ComplexNet


def _complex_batches(torch, n=3):
    out = []
    for i in range(n):
        data = torch.tensor(np_randn((4, 1, 12, 12), 40 + i))
        target = torch.tensor(np.random.RandomState(50 + i).randint(0, 4, 4))
        out.append((data, target))
    return out


def _complex_program(torch, log):
    C = _complex_modules(torch)
    F = torch.nn.functional
    model = _complex_net(torch, C)()
    init_params(torch, model, 7)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    device = torch.device('cpu')
    train_loader = _complex_batches(torch)

    # the README's ``train``
    def train(model, device, train_loader, optimizer, epoch):
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            data, target = data.to(device).type(torch.complex64), target.to(device)
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            if batch_idx % 1 == 0:
                print('Train Epoch: {:3} [{:6}/{:6} ({:3.0f}%)]\tLoss: {:.6f}'.format(
                    epoch,
                    batch_idx * len(data),
                    len(train_loader) * len(data),
                    100. * batch_idx / len(train_loader),
                    loss.item())
                )
            log("loss", loss)

    for epoch in range(2):
        train(model, device, train_loader, optimizer, epoch)
    for n, p in model.named_parameters():
        log(n, p)
        log(n + ".grad", p.grad)
    for n, b in model.named_buffers():
        log(n + " dtype", b.dtype)
        log(n, b)
    model.eval()
    with torch.no_grad():
        log("eval", model(train_loader[0][0].type(torch.complex64)))

    # the other layers and functions on complex batches
    rs = np.random.RandomState(3)
    z = torch.complex(torch.tensor(rs.randn(4, 3, 6, 6).astype(np.float32)),
                      torch.tensor(rs.randn(4, 3, 6, 6).astype(np.float32))).requires_grad_()
    v = (torch.tensor(rs.randn(5, 3).astype(np.float32))
         + 1j * torch.tensor(rs.randn(5, 3).astype(np.float32)))
    log("v dtype", v.dtype)
    bn1 = init_params(torch, C.ComplexBatchNorm1d(3), 8)
    naive1 = C.NaiveComplexBatchNorm1d(3)
    naive2 = C.NaiveComplexBatchNorm2d(3)
    tconv = init_params(torch, C.ComplexConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1), 9)
    for step in range(2):
        outs = {
            "bn1d": bn1(v),
            "naive1d": naive1(v),
            "naive2d": naive2(z),
            "tconv": tconv(z),
            "avg": C.ComplexAvgPool2d(2)(z),
            "maxpool": C.ComplexMaxPool2d(3, stride=2, padding=1)(z),
            "up": C.complex_upsample(z, scale_factor=2, mode="bilinear", align_corners=False),
            "up2": C.complex_upsample2(z, size=(9, 9), mode="nearest"),
            "normalize": C.complex_normalize(z),
            "matmul": C.complex_matmul(z, z.transpose(-1, -2)),
            "stack": C.complex_stack([z, z * 2], 1),
            "opposite": C.complex_opposite(z),
            "tanh": C.ComplexTanh()(z),
            "sigmoid": C.ComplexSigmoid()(z),
            "relu": C.ComplexReLU()(z),
            "dropout eval": C.ComplexDropout().eval()(z),
        }
        for k, o in outs.items():
            log(k + " dtype", o.dtype)
            log(k, o)
        total = sum((o.abs() ** 2).sum() for o in outs.values() if o.requires_grad)
        total.backward()
        log("z.grad", z.grad)
        z.grad = None
    log("bn1 running_mean", bn1.running_mean)
    log("bn1 running_covar", bn1.running_covar)
    log("naive running", [naive2.bn_r.running_mean, naive2.bn_i.running_var])
    for n, p in tconv.named_parameters():
        log("tconv " + n + ".grad", p.grad)

    # the recurrent cells and layers
    cell = init_params(torch, C.ComplexGRUCell(3, 4), 10)
    bncell = init_params(torch, C.ComplexBNGRUCell(3, 4), 11)
    gru = init_params(torch, C.ComplexGRU(3, 4, batch_first=True), 12)
    lstm = init_params(torch, C.ComplexLSTM(3, 4, batch_first=True, bidirectional=True), 13)
    seq = (torch.tensor(rs.randn(2, 5, 3).astype(np.float32))
           + 1j * torch.tensor(rs.randn(2, 5, 3).astype(np.float32)))
    h = torch.zeros(2, 4, dtype=torch.complex64)
    hb = torch.zeros(2, 1, 1, 4, dtype=torch.complex64)
    for t in range(seq.size(1)):
        h = cell(seq[:, t], h)
    # at 636e1cc ``ComplexBNGRUCell.forward`` stops after the candidate (no ``return``): None,
    # its batch norms' running statistics updated
    log("bn gru cell", bncell(seq[:, 0].view(2, 1, 1, 3), hb))
    g_out, g_state = gru(seq)
    l_out, (l_re, l_im) = lstm(seq)
    log("gru cell", h)
    log("gru", [g_out, g_state])
    log("lstm", [l_out, l_re[0][0], l_im[1][1]])
    loss = h.abs().sum() + g_out.real.sum() + (l_out * l_out.conj()).real.mean()
    loss.backward()
    for m in (cell, gru, lstm):
        for n, p in m.named_parameters():
            log(type(m).__name__ + " " + n + ".grad", p.grad)
    log("bncell running_mean", bncell.bn.running_mean)
    # ``ComplexPReLU.forward`` is a staticmethod taking ``self``: calling the module is a TypeError
    try:
        C.ComplexPReLU()(z)
    except TypeError as e:
        log("prelu", "TypeError")


def test_complex_program():
    run_both(_complex_program, rtol=1e-4, atol=1e-5)


# ---- timbmg/Sentence-VAE ------------------------------------------------------------------------
class _SeededSizes(SeededTorch):
    """``SeededTorch`` whose ``rand``/``randn`` also take one list or ``torch.Size`` (Sentence-VAE's
    ``torch.randn([batch_size, latent_size])`` and ``torch.rand(input_sequence.size())``) and
    float32 ``dtype=``/``device=`` keywords (real-nvp's ``sample``)."""

    def _size(self, size, kw):
        assert kw.get("dtype", self._mod.float32) == self._mod.float32, kw
        if len(size) == 1 and isinstance(size[0], (list, tuple)):
            size = tuple(size[0])
        return size

    def rand(self, *size, **kw):
        return super().rand(*self._size(size, kw))

    def randn(self, *size, **kw):
        return super().randn(*self._size(size, kw))


def _svae_modules(torch):
    # ``model.py`` (last changed at b8eb7dd), ``utils.py``'s ``to_var``/``idx2word``/``interpolate``
    # and ``train.py``'s ``main`` at 4e2c700 (the stored snapshot has no license file; embedded for
    # testing only). ``main`` takes its datasets instead of building ``PTB`` from the Penn Treebank
    # files, ``num_workers=cpu_count()`` is 0, the train split is not shuffled, tensorboard and the
    # json dumps are left out, the checkpoint goes to the given directory
    import os
    from collections import OrderedDict, defaultdict
    nn = torch.nn
    rnn_utils = torch.nn.utils.rnn
    DataLoader = torch.utils.data.DataLoader

    def to_var(x):
        if torch.cuda.is_available():
            x = x.cuda()
        return x

    def idx2word(idx, i2w, pad_idx):
        sent_str = [str()]*len(idx)
        for i, sent in enumerate(idx):
            for word_id in sent:
                if word_id == pad_idx:
                    break
                sent_str[i] += i2w[str(word_id.item())] + " "
            sent_str[i] = sent_str[i].strip()
        return sent_str

    def interpolate(start, end, steps):

        interpolation = np.zeros((start.shape[0], steps + 2))

        for dim, (s, e) in enumerate(zip(start, end)):
            interpolation[dim] = np.linspace(s, e, steps+2)

        return interpolation.T

    class SentenceVAE(nn.Module):
        def __init__(self, vocab_size, embedding_size, rnn_type, hidden_size, word_dropout, embedding_dropout, latent_size,
                    sos_idx, eos_idx, pad_idx, unk_idx, max_sequence_length, num_layers=1, bidirectional=False):

            super().__init__()
            self.tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.Tensor

            self.max_sequence_length = max_sequence_length
            self.sos_idx = sos_idx
            self.eos_idx = eos_idx
            self.pad_idx = pad_idx
            self.unk_idx = unk_idx

            self.latent_size = latent_size

            self.rnn_type = rnn_type
            self.bidirectional = bidirectional
            self.num_layers = num_layers
            self.hidden_size = hidden_size

            self.embedding = nn.Embedding(vocab_size, embedding_size)
            self.word_dropout_rate = word_dropout
            self.embedding_dropout = nn.Dropout(p=embedding_dropout)

            if rnn_type == 'rnn':
                rnn = nn.RNN
            elif rnn_type == 'gru':
                rnn = nn.GRU
            # elif rnn_type == 'lstm':
            #     rnn = nn.LSTM
            else:
                raise ValueError()

            self.encoder_rnn = rnn(embedding_size, hidden_size, num_layers=num_layers, bidirectional=self.bidirectional,
                                   batch_first=True)
            self.decoder_rnn = rnn(embedding_size, hidden_size, num_layers=num_layers, bidirectional=self.bidirectional,
                                   batch_first=True)

            self.hidden_factor = (2 if bidirectional else 1) * num_layers

            self.hidden2mean = nn.Linear(hidden_size * self.hidden_factor, latent_size)
            self.hidden2logv = nn.Linear(hidden_size * self.hidden_factor, latent_size)
            self.latent2hidden = nn.Linear(latent_size, hidden_size * self.hidden_factor)
            self.outputs2vocab = nn.Linear(hidden_size * (2 if bidirectional else 1), vocab_size)

        def forward(self, input_sequence, length):

            batch_size = input_sequence.size(0)
            sorted_lengths, sorted_idx = torch.sort(length, descending=True)
            input_sequence = input_sequence[sorted_idx]

            # ENCODER
            input_embedding = self.embedding(input_sequence)

            packed_input = rnn_utils.pack_padded_sequence(input_embedding, sorted_lengths.data.tolist(), batch_first=True)

            _, hidden = self.encoder_rnn(packed_input)

            if self.bidirectional or self.num_layers > 1:
                # flatten hidden state
                hidden = hidden.view(batch_size, self.hidden_size*self.hidden_factor)
            else:
                hidden = hidden.squeeze()

            # REPARAMETERIZATION
            mean = self.hidden2mean(hidden)
            logv = self.hidden2logv(hidden)
            std = torch.exp(0.5 * logv)

            z = to_var(torch.randn([batch_size, self.latent_size]))
            z = z * std + mean

            # DECODER
            hidden = self.latent2hidden(z)

            if self.bidirectional or self.num_layers > 1:
                # unflatten hidden state
                hidden = hidden.view(self.hidden_factor, batch_size, self.hidden_size)
            else:
                hidden = hidden.unsqueeze(0)

            # decoder input
            if self.word_dropout_rate > 0:
                # randomly replace decoder input with <unk>
                prob = torch.rand(input_sequence.size())
                if torch.cuda.is_available():
                    prob=prob.cuda()
                prob[(input_sequence.data - self.sos_idx) * (input_sequence.data - self.pad_idx) == 0] = 1
                decoder_input_sequence = input_sequence.clone()
                decoder_input_sequence[prob < self.word_dropout_rate] = self.unk_idx
                input_embedding = self.embedding(decoder_input_sequence)
            input_embedding = self.embedding_dropout(input_embedding)
            packed_input = rnn_utils.pack_padded_sequence(input_embedding, sorted_lengths.data.tolist(), batch_first=True)

            # decoder forward pass
            outputs, _ = self.decoder_rnn(packed_input, hidden)

            # process outputs
            padded_outputs = rnn_utils.pad_packed_sequence(outputs, batch_first=True)[0]
            padded_outputs = padded_outputs.contiguous()
            _,reversed_idx = torch.sort(sorted_idx)
            padded_outputs = padded_outputs[reversed_idx]
            b,s,_ = padded_outputs.size()

            # project outputs to vocab
            logp = nn.functional.log_softmax(self.outputs2vocab(padded_outputs.view(-1, padded_outputs.size(2))), dim=-1)
            logp = logp.view(b, s, self.embedding.num_embeddings)

            return logp, mean, logv, z

        def inference(self, n=4, z=None):

            if z is None:
                batch_size = n
                z = to_var(torch.randn([batch_size, self.latent_size]))
            else:
                batch_size = z.size(0)

            hidden = self.latent2hidden(z)

            if self.bidirectional or self.num_layers > 1:
                # unflatten hidden state
                hidden = hidden.view(self.hidden_factor, batch_size, self.hidden_size)

            hidden = hidden.unsqueeze(0)

            # required for dynamic stopping of sentence generation
            sequence_idx = torch.arange(0, batch_size, out=self.tensor()).long()  # all idx of batch
            # all idx of batch which are still generating
            sequence_running = torch.arange(0, batch_size, out=self.tensor()).long()
            sequence_mask = torch.ones(batch_size, out=self.tensor()).bool()
            # idx of still generating sequences with respect to current loop
            running_seqs = torch.arange(0, batch_size, out=self.tensor()).long()

            generations = self.tensor(batch_size, self.max_sequence_length).fill_(self.pad_idx).long()

            t = 0
            while t < self.max_sequence_length and len(running_seqs) > 0:

                if t == 0:
                    input_sequence = to_var(torch.Tensor(batch_size).fill_(self.sos_idx).long())

                input_sequence = input_sequence.unsqueeze(1)

                input_embedding = self.embedding(input_sequence)

                output, hidden = self.decoder_rnn(input_embedding, hidden)

                logits = self.outputs2vocab(output)

                input_sequence = self._sample(logits)

                # save next input
                generations = self._save_sample(generations, input_sequence, sequence_running, t)

                # update gloabl running sequence
                sequence_mask[sequence_running] = (input_sequence != self.eos_idx)
                sequence_running = sequence_idx.masked_select(sequence_mask)

                # update local running sequences
                running_mask = (input_sequence != self.eos_idx).data
                running_seqs = running_seqs.masked_select(running_mask)

                # prune input and hidden state according to local update
                if len(running_seqs) > 0:
                    input_sequence = input_sequence[running_seqs]
                    hidden = hidden[:, running_seqs]

                    running_seqs = torch.arange(0, len(running_seqs), out=self.tensor()).long()

                t += 1

            return generations, z

        def _sample(self, dist, mode='greedy'):

            if mode == 'greedy':
                _, sample = torch.topk(dist, 1, dim=-1)
            sample = sample.reshape(-1)

            return sample

        def _save_sample(self, save_to, sample, running_seqs, t):
            # select only still running
            running_latest = save_to[running_seqs]
            # update token at position t
            running_latest[:,t] = sample.data
            # save back
            save_to[running_seqs] = running_latest

            return save_to

    def main(args, datasets, save_model_path, log):
        splits = ['train', 'valid'] + (['test'] if args.test else [])

        params = dict(
            vocab_size=datasets['train'].vocab_size,
            sos_idx=datasets['train'].sos_idx,
            eos_idx=datasets['train'].eos_idx,
            pad_idx=datasets['train'].pad_idx,
            unk_idx=datasets['train'].unk_idx,
            max_sequence_length=args.max_sequence_length,
            embedding_size=args.embedding_size,
            rnn_type=args.rnn_type,
            hidden_size=args.hidden_size,
            word_dropout=args.word_dropout,
            embedding_dropout=args.embedding_dropout,
            latent_size=args.latent_size,
            num_layers=args.num_layers,
            bidirectional=args.bidirectional
        )
        model = SentenceVAE(**params)
        init_params(torch, model, 21)

        if torch.cuda.is_available():
            model = model.cuda()

        print(model)

        def kl_anneal_function(anneal_function, step, k, x0):
            if anneal_function == 'logistic':
                return float(1/(1+np.exp(-k*(step-x0))))
            elif anneal_function == 'linear':
                return min(1, step/x0)

        NLL = torch.nn.NLLLoss(ignore_index=datasets['train'].pad_idx, reduction='sum')
        def loss_fn(logp, target, length, mean, logv, anneal_function, step, k, x0):

            # cut-off unnecessary padding from target, and flatten
            target = target[:, :torch.max(length).item()].contiguous().view(-1)
            logp = logp.view(-1, logp.size(2))

            # Negative Log Likelihood
            NLL_loss = NLL(logp, target)

            # KL Divergence
            KL_loss = -0.5 * torch.sum(1 + logv - mean.pow(2) - logv.exp())
            KL_weight = kl_anneal_function(anneal_function, step, k, x0)

            return NLL_loss, KL_loss, KL_weight

        optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)

        tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.Tensor
        step = 0
        for epoch in range(args.epochs):

            for split in splits:

                data_loader = DataLoader(
                    dataset=datasets[split],
                    batch_size=args.batch_size,
                    shuffle=False,
                    num_workers=0,
                    pin_memory=torch.cuda.is_available()
                )

                tracker = defaultdict(tensor)

                # Enable/Disable Dropout
                if split == 'train':
                    model.train()
                else:
                    model.eval()

                for iteration, batch in enumerate(data_loader):

                    batch_size = batch['input'].size(0)

                    for k, v in batch.items():
                        if torch.is_tensor(v):
                            batch[k] = to_var(v)

                    # Forward pass
                    logp, mean, logv, z = model(batch['input'], batch['length'])

                    # loss calculation
                    NLL_loss, KL_loss, KL_weight = loss_fn(logp, batch['target'],
                        batch['length'], mean, logv, args.anneal_function, step, args.k, args.x0)

                    loss = (NLL_loss + KL_weight * KL_loss) / batch_size

                    # backward + optimization
                    if split == 'train':
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
                        step += 1

                    # bookkeepeing
                    tracker['ELBO'] = torch.cat((tracker['ELBO'], loss.data.view(1, -1)), dim=0)

                    if iteration % args.print_every == 0 or iteration+1 == len(data_loader):
                        print("%s Batch %04d/%i, Loss %9.4f, NLL-Loss %9.4f, KL-Loss %9.4f, KL-Weight %6.3f"
                              % (split.upper(), iteration, len(data_loader)-1, loss.item(), NLL_loss.item()/batch_size,
                              KL_loss.item()/batch_size, KL_weight))
                    log(split + " loss", [loss, NLL_loss, KL_loss, logp, z])

                    if split == 'valid':
                        if 'target_sents' not in tracker:
                            tracker['target_sents'] = list()
                        tracker['target_sents'] += idx2word(batch['target'].data, i2w=datasets['train'].get_i2w(),
                                                            pad_idx=datasets['train'].pad_idx)
                        tracker['z'] = torch.cat((tracker['z'], z.data), dim=0)

                print("%s Epoch %02d/%i, Mean ELBO %9.4f" % (split.upper(), epoch, args.epochs, tracker['ELBO'].mean()))
                log(split + " ELBO", tracker['ELBO'])

                # save a dump of all sentences and the encoded latent space
                if split == 'valid':
                    dump = {'target_sents': tracker['target_sents'], 'z': tracker['z'].tolist()}
                    log("dump", [dump['target_sents'], dump['z']])

                # save checkpoint
                if split == 'train':
                    checkpoint_path = os.path.join(save_model_path, "E%i.pytorch" % epoch)
                    torch.save(model.state_dict(), checkpoint_path)
                    print("Model saved at %s" % os.path.basename(checkpoint_path))
        return model, params

    return types.SimpleNamespace(SentenceVAE=SentenceVAE, main=main, idx2word=idx2word,
                                 interpolate=interpolate, to_var=to_var)


class _TinyPTB:
    """A stand-in for ``ptb.PTB``: its ``__getitem__`` dict, ``w2i``/``i2w`` (``i2w`` keyed by
    strings, as the json vocabulary is) and index properties, over sentences drawn from a seeded
    stream."""

    def __init__(self, n, seed, max_sequence_length=7):
        words = ['<pad>', '<unk>', '<sos>', '<eos>'] + ['w%d' % i for i in range(8)]
        self.w2i = {w: i for i, w in enumerate(words)}
        self.i2w = {str(i): w for i, w in enumerate(words)}
        rs = np.random.RandomState(seed)
        self.data = {}
        for i in range(n):
            sent = list(rs.randint(4, len(words), rs.randint(1, max_sequence_length - 1)))
            inp = [self.sos_idx] + sent
            tgt = sent + [self.eos_idx]
            length = len(inp)
            inp += [self.pad_idx] * (max_sequence_length - length)
            tgt += [self.pad_idx] * (max_sequence_length - length)
            self.data[str(i)] = {'input': inp, 'target': tgt, 'length': length}

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        idx = str(idx)

        return {
            'input': np.asarray(self.data[idx]['input']),
            'target': np.asarray(self.data[idx]['target']),
            'length': self.data[idx]['length']
        }

    vocab_size = property(lambda self: len(self.w2i))
    pad_idx = property(lambda self: self.w2i['<pad>'])
    sos_idx = property(lambda self: self.w2i['<sos>'])
    eos_idx = property(lambda self: self.w2i['<eos>'])
    unk_idx = property(lambda self: self.w2i['<unk>'])

    def get_w2i(self):
        return self.w2i

    def get_i2w(self):
        return self.i2w


SVAE_ARGS = dict(max_sequence_length=7, test=False, epochs=2, batch_size=4, learning_rate=0.01,
                 embedding_size=5, rnn_type='gru', hidden_size=6, num_layers=1, bidirectional=False,
                 latent_size=3, word_dropout=0.3, embedding_dropout=0.0, anneal_function='logistic',
                 k=0.5, x0=3, print_every=1)


def _svae_program(root, overrides):
    def program(torch, log):
        import argparse
        import os
        torch = _SeededSizes(torch, 6)
        S = _svae_modules(torch)
        args = argparse.Namespace(**dict(SVAE_ARGS, **overrides))
        datasets = {'train': _TinyPTB(10, 1), 'valid': _TinyPTB(5, 2)}
        d = os.path.join(root, torch.__name__)
        os.makedirs(d, exist_ok=True)
        model, params = S.main(args, datasets, d, log)
        for n, p in model.named_parameters():
            log(n, p)
            log(n + ".grad", p.grad)
        # ``inference.py``'s main: load the checkpoint, sample greedily, interpolate
        model = S.SentenceVAE(**params)
        model.load_state_dict(torch.load(os.path.join(d, "E%i.pytorch" % (args.epochs - 1))))
        model.eval()
        i2w, w2i = datasets['train'].get_i2w(), datasets['train'].get_w2i()
        if args.bidirectional or args.num_layers > 1:
            # ``inference`` views the latent's hidden state as (layers, batch, hidden) and then
            # ``unsqueeze(0)``s it too: the decoder RNN's "hx should also be 3-D" RuntimeError
            try:
                model.inference(n=3)
            except RuntimeError as e:
                log("inference", ["RuntimeError", "3-D" in str(e)])
            return
        samples, z = model.inference(n=3)
        print('----------SAMPLES----------')
        print(*S.idx2word(samples, i2w=i2w, pad_idx=w2i['<pad>']), sep='\n')
        log("samples", [samples, z])
        z1 = torch.randn([args.latent_size]).numpy()
        z2 = torch.randn([args.latent_size]).numpy()
        z = S.to_var(torch.from_numpy(S.interpolate(start=z1, end=z2, steps=2)).float())
        samples, _ = model.inference(z=z)
        print('-------INTERPOLATION-------')
        print(*S.idx2word(samples, i2w=i2w, pad_idx=w2i['<pad>']), sep='\n')
        log("interpolation", samples)
    return program


@pytest.mark.parametrize("overrides", [{}, {"bidirectional": True, "num_layers": 2, "rnn_type": "rnn"}],
                         ids=["gru", "birnn2"])
def test_sentence_vae_program(tmp_path, overrides):
    run_both(_svae_program(str(tmp_path), overrides), rtol=1e-4, atol=1e-5)


# ---- pbloem/former ------------------------------------------------------------------------------
def _former_modules(torch):
    # ``former/util/util.py``'s ``mask_``, ``d``, ``slice_diag``, ``compute_compression``,
    # ``sample``, ``sample_sequence``, ``sample_batch``; ``former/modules.py`` and
    # ``former/transformers.py``'s ``GTransformer``/``CTransformer`` at ad9cc70 (MIT).
    # ``compute_compression``'s ``tbw: SummaryWriter`` annotation is dropped (no tensorboard)
    import math
    import random
    nn = torch.nn
    F = torch.nn.functional
    dist = torch.distributions

    def mask_(matrices, maskval=0.0, mask_diagonal=True):
        """
        Masks out all values in the given batch of matrices where i <= j holds,
        i < j if mask_diagonal is false

        In place operation

        :param tns:
        :return:
        """

        h, w = matrices.size(-2), matrices.size(-1)

        indices = torch.triu_indices(h, w, offset=0 if mask_diagonal else 1)
        matrices[..., indices[0], indices[1]] = maskval

    def d(tensor=None):
        """
        Returns a device string either for the best available device,
        or for the device corresponding to the argument
        :param tensor:
        :return:
        """
        if tensor is None:
            return 'cuda' if torch.cuda.is_available() else 'cpu'
        return 'cuda' if tensor.is_cuda else 'cpu'

    def slice_diag(matrix, l, dv=None):
        """
        Take a batch of attention matrices for relative position encodings and slice out the relevant attentions. These
        are the length l sequences starting at the diagonal

        :param matrix:
        :return:
        """
        if dv is None:
            dv = d(matrix)

        h, w = matrix.size(-2), matrix.size(-1)

        assert w == 2 * l -1, f'(h, w)= {(h, w)}, l={l}'

        rest = matrix.size()[:-2]

        matrix = matrix.view(-1, h, w)
        b, h, w = matrix.size()

        result = matrix.view(b, -1)
        result = torch.cat([result, torch.zeros(b, l, device=dv)], dim=1)
        assert result.size() == (b, 2 * l * l), f'result.size() {result.size()}'

        result = result.view(b, l, 2*l)
        result = result[:, :, :l]

        result = result.view(*rest, h, l)
        return result

    # Used for converting between nats and bits
    LOG2E = math.log2(math.e)
    LOGE2 = math.log(2.0)

    def compute_compression(model, data, context, batch_size, verbose=False,
                            tbw=None, tok=None, skip=0):


        """
        Compute the _compression_ of a dataset under a model. That is, given a model, in how many bits could we represent
        the dataset. This requires us to turn a given probability distribution into a code for the outcomes.

        See [this video](https://youtu.be/mSneVjDvzNQ) for an explanation.

        :param model: A sequence-to-sequence model that takes as input a (sub) sequence of integers and produces a probability
        distributuion on the output.
        :param data: A singe list of integers representing the  data
        :return: The result of the computation in "bits per byte". That is, how many bits does the compressed representation
        spend on each byte (=ASCII character) of the raw data.
        """

        bits, tot = 0.0, 0
        batch = []
        # Buffer, every time it fills up, we run it through the model
        # --- For the sake of speed we want to process the data in batches. For each token in the data, we make a
        #     prediction based on all the `context` tokens before it. This means that for each subsequence in the batch, we
        #     need to shift the start/end indices ahead by one token.
        #
        #     After we pass the batch through the model, we look at only the probabilities predicted for the last token.

        target_indices = []
        i, ic = 0, 0

        for current in tqdm.trange(skip, data.size(0)) if verbose else range(skip, data.size(0)):

            # `current` is the character which we will ultimately predict

            fr = max(0, current - context)
            to = current + 1

            instance = data[fr:to].to(torch.long) # the subsequence of the data to add to the batch
            # -- slice out an instance of size context + 1 (or shorter at the start of the data)

            # if tok is not None:
            #     print(instance[:-1], tok.decode(instance[:-1]))
            #     print(instance[-1:], tok.decode(instance[-1:]))

            target_indices.append(instance.size(0) - 2) # index of the last element of the input to the model

            if instance.size(0) < context + 1:
                assert skip < context # We shouldn't get here if we skip the first `context` characters

                # the index in the output tensor of the character we want to predict
                # -- It's context + 1, because we clip off the last token as a target

                pad = torch.zeros(size=(context + 1 - instance.size(0),), dtype=torch.long)
                instance = torch.cat([instance, pad], dim=0)
                # -- the first tokens don't have enough tokens preceding them, so we pad them to the right size.

                assert instance.size(0) == context + 1 # all instances should be `context` + 1 long

            if torch.cuda.is_available():
                instance = instance.cuda()

            batch.append(instance[None, :])
            # -- We add a singleton dimension to concatenate along later.

            if len(batch) == batch_size or current == data.size(0) - 1:
                # batch is full or we are at the last instance, run it through the model

                b = len(batch)

                ti = torch.tensor(target_indices) + 1
                all = torch.cat(batch, dim=0)
                inputs = all[:, :-1] # input
                target = all[torch.arange(b), ti]  # target values

                with torch.no_grad():
                    if next(model.parameters()).is_cuda:
                        inputs = inputs.cuda()
                    output = model(inputs)

                if type(output) != torch.Tensor:
                    output = torch.log_softmax(output.logits, dim=2) # To make the method work for GPT2 models from Huggingface

                assert output.size()[:2] == (b, context), f'was: {output.size()}, should be {(b, context, -1)}'

                lnprobs = output[torch.arange(b, device=d()), target_indices, target]
                log2probs = lnprobs / LOGE2
                # -- The model produces natural logarithms of probabilities, but we need base-2 logarithms of the
                #    probabilities, since these give us bits.

                if tbw is not None:
                    for j, lp in enumerate(log2probs):
                        i += 1
                        tbw.add_scalar('compression/bits-per-token', -lp, i)

                        if tok is not None:
                            nc = len(tok.decode(target[j]))
                            ic += nc
                            tbw.add_scalar('compression/bits-per-byte', -lp/nc, ic)

                bits += - log2probs.sum() # Add the bits for each character (the negative log_2 probabilities) to the running total
                batch, target_indices = [], []  # clear the buffer

        if isinstance(bits, torch.Tensor):
            bits = bits.item()

        return bits # total nr of bits used

    def sample(lnprobs, temperature=1.0):
        """
        Sample an element from a categorical distribution
        :param lnprobs: Outcome log-probabilities
        :param temperature: Sampling temperature. 1.0 follows the given distribution,
            0.0 returns the maximum probability element.
        :return: The index of the sampled element.
        """

        if temperature == 0.0:
            return lnprobs.argmax()

        p = F.softmax(lnprobs / temperature, dim=0)
        cd = dist.Categorical(p)

        return cd.sample()

    def sample_sequence(model, seed, max_context, length=600, temperature=0.5, verbose=False):
        """
        Sequentially samples a sequence from the model, token by token.

        :param model:
        :param seed: The sequence to start with.
        :param length: The total number of characters to sample.
        :param temperature: The sampling temperature.
        :param verbose: If true, the sampled sequence is also printed as it is sampled.

        :return: The sampled sequence, including the seed.
        """

        sequence = seed.detach().clone()

        if verbose: # Print the seed, surrounded by square brackets
            print('[', end='', flush=True)
            for c in seed:
                print(str(chr(c)), end='', flush=True)
            print(']', end='', flush=True)

        for _ in range(length):

            # Input is the tail end of the sampled sequence (as many tokens as the model can handle)
            input = sequence[-max_context:]

            # Run the current input through the model
            output = model(input[None, :])

            # Sample the next token from the probabilitys at the last position of the output.
            c = sample(output[0, -1, :], temperature)

            if verbose:
                print(str(chr(max(32, c))), end='', flush=True)

            sequence = torch.cat([sequence, c[None]], dim=0) # Append the sampled token to the sequence

        print()
        return seed

    def sample_batch(data, length, batch_size):
        """
        Takes the data (a single sequence of tokens) and slices out a batch of subsequences to provide as input to the model.

        For each input instance, it also slices out the sequence that is shifted one position to the right, to provide as a
        target for the model.

        :param data: The (training) data. A single vector of tokens represented by integers
        :param length: The length of the subsequences in the batch.
        :param batch_size: The number of subsequences in the batch
        :return: A pair (input, target) of minteger matrices representing the input and target for the model.
        """

        # Sample the starting indices of the sequences to slice out.
        starts = torch.randint(size=(batch_size,), low=0, high=data.size(0) - length - 1)

        # Slice out the input sequences
        seqs_inputs  = [data[start:start + length] for start in starts]
        # -- the start index is the one we just sampled, and the end is exactly 'lentgh' positions after that.
        seqs_target = [data[start + 1:start + length + 1] for start in starts]
        # -- The target is the same sequence as input, except one character ahead (we are asking the model to predict the
        #    next character at each position)

        # We now have two lists of torch vectors, which we can concatenate into matrices of batch_size-by-length
        inputs = torch.cat([s[None, :] for s in seqs_inputs], dim=0).to(torch.long)
        target = torch.cat([s[None, :] for s in seqs_target], dim=0).to(torch.long)
        # -- Note that we add a singleton dimenson to each vector, s[None.,:], and then concatenate along that dimension.

        return inputs, target

    class SelfAttention(nn.Module):
        """
        Canonical implementation of multi-head self attention.
        """

        def __init__(self, emb, heads=8, mask=False, kqnorm=False, scalefactor=None):
            """

            :param emb: The dimension of the input and output vectors.
            :param heads: The number of heads (parallel executions of the self-attention)
            :param mask: Whether to apply an autoregressive mask.
            :param kqnorm: Whether to apply layer normalization to the keys and queries.
            :param scalefactor: Multiplier for the attention weights. If none, the default `1/sqrt(emb/heads)` is used,
            """

            super().__init__()

            assert emb % heads == 0, f'Embedding dimension ({emb}) should be divisible by nr. of heads ({heads})'

            self.emb = emb
            self.heads = heads
            self.mask = mask

            s = emb // heads
            # - We will break the embedding into `heads` chunks and feed each to a different attention head

            self.tokeys    = nn.Linear(emb, emb, bias=False)
            self.toqueries = nn.Linear(emb, emb, bias=False)
            self.tovalues  = nn.Linear(emb, emb, bias=False)

            self.unifyheads = nn.Linear(emb, emb)

            self.kqnorm = kqnorm
            if kqnorm:
                self.kln = nn.LayerNorm([s])
                self.qln = nn.LayerNorm([s])

            self.scalefactor = 1/math.sqrt(emb // heads) if scalefactor is None else scalefactor

        def forward(self, x):

            b, t, e = x.size()
            h = self.heads
            assert e == self.emb, f'Input embedding dim ({e}) should match layer embedding dim ({self.emb})'

            s = e // h

            keys    = self.tokeys(x)
            queries = self.toqueries(x)
            values  = self.tovalues(x)

            keys    = keys.view(b, t, h, s)
            queries = queries.view(b, t, h, s)
            values  = values.view(b, t, h, s)

            if self.kqnorm:
                keys = self.kln(keys)
                queries = self.qln(queries)

            # -- We first compute the k/q/v's on the whole embedding vectors, and then split into the different heads.
            #    See the following video for an explanation: https://youtu.be/KmAISyVvE1Y

            # Compute scaled dot-product self-attention

            # - fold heads into the batch dimension
            keys = keys.transpose(1, 2).contiguous().view(b * h, t, s)
            queries = queries.transpose(1, 2).contiguous().view(b * h, t, s)
            values = values.transpose(1, 2).contiguous().view(b * h, t, s)

            queries = queries
            keys    = keys

            # - get dot product of queries and keys, and scale
            dot = torch.bmm(queries, keys.transpose(1, 2))
            dot = dot * self.scalefactor

            assert dot.size() == (b*h, t, t)

            if self.mask: # mask out the upper half of the dot matrix, excluding the diagonal
                mask_(dot, maskval=float('-inf'), mask_diagonal=False)

            dot = F.softmax(dot, dim=2)
            # -- dot now has row-wise self-attention probabilities

            # apply the self attention to the values
            out = torch.bmm(dot, values).view(b, h, t, s)

            # swap h, t back, unify heads
            out = out.transpose(1, 2).contiguous().view(b, t, s * h)

            return self.unifyheads(out)

    class SelfAttentionAlt(nn.Module):
        """
        Alternative implementation of self-attention. Should contain fewer parameters, may be faster?
        """

        def __init__(self, emb, heads=8, mask=False):
            """

            :param emb:
            :param heads:
            :param mask:
            """

            super().__init__()

            assert emb % heads == 0, f'Embedding dimension ({emb}) should be divisible by nr. of heads ({heads})'

            self.emb = emb
            self.heads = heads
            self.mask = mask

            s = emb // heads
            # - We will break the embedding into `heads` chunks and feed each to a different attention head

            self.downproj    = nn.Linear(emb, emb, bias=False)
            # -- Single e x e priojection applied before splitting

            # The key, query and value projections of the different heads
            self.tokeys    = nn.Parameter(torch.empty(heads, s, s))
            self.toqueries = nn.Parameter(torch.empty(heads, s, s))
            self.tovalues  = nn.Parameter(torch.empty(heads, s, s))

            self.unifyheads = nn.Linear(emb, emb)

        def forward(self, x):

            b, t, e = x.size()
            h = self.heads
            assert e == self.emb, f'Input embedding dim ({e}) should match layer embedding dim ({self.emb})'

            s = e // h

            x = self.downproj(x).view(b, t, h, s)

            keys    = torch.einsum('bthk, hik -> bthi', x, self.tokeys)
            queries = torch.einsum('bthk, hik -> bthi', x, self.toqueries)
            values  = torch.einsum('bthk, hik -> bthi', x, self.tovalues)

            keys    = keys.view(b, t, h, s)
            queries = queries.view(b, t, h, s)
            values  = values.view(b, t, h, s)

            # Compute scaled dot-product self-attention

            # - fold heads into the batch dimension
            keys = keys.transpose(1, 2).contiguous().view(b * h, t, s)
            queries = queries.transpose(1, 2).contiguous().view(b * h, t, s)
            values = values.transpose(1, 2).contiguous().view(b * h, t, s)

            queries = queries / (s ** (1/4))
            keys    = keys / (s ** (1/4))
            # - Instead of dividing the dot products by sqrt(e), we scale the keys and values.
            #   This should be more memory efficient

            # - get dot product of queries and keys, and scale
            dot = torch.bmm(queries, keys.transpose(1, 2))

            assert dot.size() == (b*h, t, t)

            if self.mask: # mask out the upper half of the dot matrix, excluding the diagonal
                mask_(dot, maskval=float('-inf'), mask_diagonal=False)

            dot = F.softmax(dot, dim=2)
            # - dot now has row-wise self-attention probabilities

            # apply the self attention to the values
            out = torch.bmm(dot, values).view(b, h, t, s)

            # swap h, t back, unify heads
            out = out.transpose(1, 2).contiguous().view(b, t, s * h)

            return self.unifyheads(out)

    class SelfAttentionNarrow(nn.Module):
        """
        A self attention with a reduced parameter space (experimental).

        * Uses _the same_ key/query/value transformation on each head, but applied to a different slice of the embedding vector.
        * Dispenses with the linear layer after merging the heads.

        """

        def __init__(self, emb, heads=8, mask=False):
            """
            :param emb:
            :param heads:
            :param mask:
            """

            super().__init__()

            assert emb % heads == 0, f'Embedding dimension ({emb}) should be divisible by nr. of heads ({heads})'

            self.emb = emb
            self.heads = heads
            self.mask = mask

            s = emb // heads
            # - We will break the embedding into `heads` chunks and feed each to a different attention head

            self.tokeys    = nn.Linear(s, s, bias=False)
            self.toqueries = nn.Linear(s, s, bias=False)
            self.tovalues  = nn.Linear(s, s, bias=False)

        def forward(self, x):

            b, t, e = x.size()
            h = self.heads
            assert e == self.emb, f'Input embedding dim ({e}) should match layer embedding dim ({self.emb})'

            s = e // h
            x = x.view(b, t, h, s)

            keys    = self.tokeys(x)
            queries = self.toqueries(x)
            values  = self.tovalues(x)

            # -- We first compute the k/q/v's on the whole embedding vectors, and then split into the different heads.
            #    See the following video for an explanation: https://youtu.be/KmAISyVvE1Y

            # Compute scaled dot-product self-attention

            # - fold heads into the batch dimension
            keys = keys.transpose(1, 2).contiguous().view(b * h, t, s)
            queries = queries.transpose(1, 2).contiguous().view(b * h, t, s)
            values = values.transpose(1, 2).contiguous().view(b * h, t, s)

            queries = queries / (s ** (1/4))
            keys    = keys / (s ** (1/4))
            # - Instead of dividing the dot products by sqrt(e), we scale the keys and values.
            #   This should be more memory efficient

            # - get dot product of queries and keys, and scale
            dot = torch.bmm(queries, keys.transpose(1, 2))

            assert dot.size() == (b*h, t, t)

            if self.mask: # mask out the upper half of the dot matrix, excluding the diagonal
                mask_(dot, maskval=float('-inf'), mask_diagonal=False)

            dot = F.softmax(dot, dim=2)
            # - dot now has row-wise self-attention probabilities

            # apply the self attention to the values
            out = torch.bmm(dot, values).view(b, h, t, s)

            # swap h, t back, unify heads
            out = out.transpose(1, 2).contiguous().view(b, t, h * s)

            return out

    class Conv1D(nn.Module):
        """
        1D-convolutional layer as defined by Radford et al. for OpenAI GPT (and also used in GPT-2).

        Basically works like a linear layer but the weights are transposed.

        from:

        Args:
            nf (:obj:`int`): The number of output features.
            nx (:obj:`int`): The number of input features.

        NB: Note the illogical argument order.
        """

        def __init__(self, nf, nx, he=True):
            super().__init__()

            self.nf = nf

            w = torch.empty(nx, nf)
            b = torch.zeros(nf)

            if not he:
                nn.init.normal_(w, std=0.02) # default initialization, seems to be optimized for specific size
            else:
                # Default initialization for nn.Linear
                nn.init.kaiming_uniform_(w, a=math.sqrt(5))
                # -- This assumes a leaky relu activation which isn't what's used downstream, but it's what's used in the other
                #    SA implementations

                fan_in, _ = nn.init._calculate_fan_in_and_fan_out(w)
                bound = 1 / math.sqrt(fan_in)
                nn.init.uniform_(b, -bound, bound)

            self.weight = nn.Parameter(w)
            self.bias = nn.Parameter(b)

        def forward(self, x):

            size_out = x.size()[:-1] + (self.nf,) # dimensions of the output tensor

            x = x.view(-1, x.size(-1))
            # -- The weights are applied to the last dimension, all others are collapsed into a single match dimension

            x = torch.addmm(self.bias, x, self.weight)

            x = x.view(*size_out) # restore the original dimensions

            return x

    class SelfAttentionGPT2(nn.Module):
        """
        This is the self-attention operation as implemented in the Huggingface port of GPT2. The code has been
        simplified to remove several features not used here but otherwise it should do exactly the same as GPT2 when run with
        normal parameters.

        It is very similar to the default SelfAttention below, with the exception of the way it's initialized and some
        small speed improvements in the custom implementation of the linear layer (the Conv1D defined above).

        We include this primarily for comparison with our own canonical implementation to check for performance differences.
        """
        def __init__(self, emb, heads, mask=False):
            super().__init__()

            self.nheads = heads
            self.emb = emb
            self.mask = mask

            #self.c_attn = Conv1D(3 * emb, emb)
            # -- (out_channels, in_channels):
            #    This is a very slight modification of a linear layer

            self.c_attn = nn.Linear(emb, 3*emb)

            #self.c_proj = Conv1D(emb, emb)
            self.c_proj = nn.Linear(emb, emb)

        def _attn(self, q, k, v):

            dot = torch.matmul(q, k) # raw attention weights

            dot = dot / (float(v.size(-1)) ** 0.5) # scaled attention weights

            if self.mask: # Apply the attention mask
                mask_(dot, maskval=float('-inf'), mask_diagonal=False)
            # -- This is implemented differently in the Huggingface version, but the effect should be the same.

            dot = nn.Softmax(dim=-1)(dot) # normalized attention weights

            return torch.matmul(dot, v) # attention over values

        def merge_heads(self, x):

            x = x.permute(0, 2, 1, 3).contiguous()

            new_x_shape = x.size()[:-2] + (x.size(-2) * x.size(-1),)

            return x.view(*new_x_shape)

        def split_heads(self, x, is_key=False):

            new_x_shape = x.size()[:-1] + (self.nheads, x.size(-1) // self.nheads)

            x = x.view(*new_x_shape)

            if is_key:
                return x.permute(0, 2, 3, 1)  # (batch, head, head_features, seq_length)
            else:
                return x.permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)

        def forward(self, input_sequence):

            b, t, e = input_sequence.size()

            query, key, value = self.c_attn(input_sequence).split(e, dim=2)

            query = self.split_heads(query)
            key = self.split_heads(key, is_key=True)
            value = self.split_heads(value)

            a = self._attn(query, key, value)

            a = self.merge_heads(a)
            a = self.c_proj(a)

            return a

    class SelfAttentionWide(nn.Module):
        """
        A self-attention with a larger number of parameters than the standard one.

        Uses a full-size embedding vector for each head.
        """

        def __init__(self, emb, heads=8, mask=False):
            """

            :param emb:
            :param heads:
            :param mask:
            """

            super().__init__()

            self.emb = emb
            self.heads = heads
            self.mask = mask

            self.tokeys = nn.Linear(emb, emb * heads, bias=False)
            self.toqueries = nn.Linear(emb, emb * heads, bias=False)
            self.tovalues = nn.Linear(emb, emb * heads, bias=False)

            self.unifyheads = nn.Linear(heads * emb, emb)

        def forward(self, x):

            b, t, e = x.size()
            h = self.heads
            assert e == self.emb, f'Input embedding dim ({e}) should match layer embedding dim ({self.emb})'

            keys    = self.tokeys(x)   .view(b, t, h, e)
            queries = self.toqueries(x).view(b, t, h, e)
            values  = self.tovalues(x) .view(b, t, h, e)

            # compute scaled dot-product self-attention

            # - fold heads into the batch dimension
            keys = keys.transpose(1, 2).contiguous().view(b * h, t, e)
            queries = queries.transpose(1, 2).contiguous().view(b * h, t, e)
            values = values.transpose(1, 2).contiguous().view(b * h, t, e)

            queries = queries / (e ** (1/4))
            keys    = keys / (e ** (1/4))
            # - Instead of dividing the dot products by sqrt(e), we scale the keys and values.
            #   This should be more memory efficient

            # - get dot product of queries and keys, and scale
            dot = torch.bmm(queries, keys.transpose(1, 2))

            assert dot.size() == (b*h, t, t)

            if self.mask: # mask out the upper half of the dot matrix, excluding the diagonal
                mask_(dot, maskval=float('-inf'), mask_diagonal=False)

            dot = F.softmax(dot, dim=2)
            # - dot now has row-wise self-attention probabilities

            # apply the self attention to the values
            out = torch.bmm(dot, values).view(b, h, t, e)

            # swap h, t back, unify heads
            out = out.transpose(1, 2).contiguous().view(b, t, h * e)

            return self.unifyheads(out)


    class SelfAttentionRelative(nn.Module):
        """
        Implementation of self-attention with relative position embeddings.

        Inspired by the Transformer-XL relative positions. Not guaranteed to be exactly the same. See
          https://youtu.be/oUhGZMCTHtI
        for an explanation.

        """

        def __init__(self, emb, pos_embedding, heads=8, mask=False, ):
            """

            :param emb:
            :param heads:
            :param mask:
            """

            super().__init__()

            assert emb % heads == 0, f'Embedding dimension ({emb}) should be divisible by nr. of heads ({heads})'

            self.emb = emb
            self.heads = heads
            self.mask = mask

            self.pos = pos_embedding # embedding layer

            e, s, h = emb, emb // heads, heads
            # - We will break the embedding into `heads` chunks and feed each to a different attention head

            self.tokeys    = nn.Linear(emb, emb, bias=False)
            self.tokeys_pos    = nn.Linear(emb, emb, bias=False)
            self.toqueries = nn.Linear(emb, emb, bias=False)
            self.tovalues  = nn.Linear(emb, emb, bias=False)

            self.unifyheads = nn.Linear(emb, emb)

            self.parma, self.parmb = nn.Parameter(torch.randn(1, h, 1, s)), nn.Parameter(torch.randn(1, h, 1, s))

        def forward(self, x):


            b, t, e = x.size()
            h = self.heads
            assert e == self.emb, f'Input embedding dim ({e}) should match layer embedding dim ({self.emb})'

            s = e // h

            keys     = self.tokeys(x)
            queries  = self.toqueries(x)
            values   = self.tovalues(x)

            positions = self.pos(torch.arange(2*t-1, device=d(x)))[None, :].expand(b, 2*t-1, e)
            keys_pos = self.tokeys_pos(positions)

            assert keys_pos.size() == (b, 2*t-1, e)

            keys     = keys.view(b, t, h, s)
            keys_pos = keys_pos.view(b, 2*t-1, h, s)
            queries  = queries.view(b, t, h, s)
            values   = values.view(b, t, h, s)

            # -- We first compute the k/q/v's on the whole embedding vectors, and then split into the different heads.
            #    See the following video for an explanation: https://youtu.be/KmAISyVvE1Y

            # Compute scaled dot-product self-attention

            # - fold heads into the batch dimension
            keys = keys.transpose(1, 2).contiguous().view(b * h, t, s)
            keys_pos = keys_pos.transpose(1, 2).contiguous().view(b * h, 2*t-1, s)
            queries = queries.transpose(1, 2).contiguous().view(b * h, t, s)
            values = values.transpose(1, 2).contiguous().view(b * h, t, s)

            # expand a and b in batch dimension, and fold in heads
            parma = self.parma.expand(b, h, t, s).contiguous().view(b*h, t, s)
            parmb = self.parmb.expand(b, h, t, s).contiguous().view(b*h, t, s)

            # The matrix of raw attention weights (`dot`) is the sum of four different matrix products

            dot_tt = torch.einsum('bis, bjs -> bij',  queries, keys)     # -- basic self attention: token with token
            assert dot_tt.size()== (b*h, t, t), f'{dot_tt.size()}'

            dot_tp = torch.einsum('bis, bjs -> bij', queries, keys_pos) # -- token with position
            dot_tp = slice_diag(dot_tp, l=t)
            assert dot_tp.size() == (b*h, t, t), f'{dot_tp.size()}'

            dot_pt = torch.einsum('bis, bjs -> bij', parma, keys)  # -- position with token
            assert dot_pt.size() == (b*h, t, t), f'{dot_pt.size()}'

            dot_pp =  torch.einsum('bis, bjs -> bij', parmb, keys_pos)  # -- pos with pos
            dot_pp = slice_diag(dot_pp, l=t)
            assert dot_pp.size() == (b*h, t, t), f'{dot_pp.size()}'

            dot = dot_tt + dot_tp + dot_pt + dot_pp

            assert dot.size() == (b*h, t, t)

            if self.mask: # mask out the upper half of the dot matrix, excluding the diagonal
                mask_(dot, maskval=float('-inf'), mask_diagonal=False)

            dot = F.softmax(dot, dim=2)
            # - dot now has row-wise self-attention probabilities

            # apply the self attention to the values
            out = torch.bmm(dot, values).view(b, h, t, s)

            # swap h, t back, unify heads
            out = out.transpose(1, 2).contiguous().view(b, t, s * h)

            return self.unifyheads(out)

    class Attention(nn.Module):
        """
        Implementation of attention with the queries, keys and values separated.
        """

        def __init__(self, emb, heads=8, mask=False, kqnorm=False):
            """

            :param emb: Embedding dimension
            :param heads:
            :param mask:
            :param kqnorm:
            """

            super().__init__()

            assert emb % heads == 0, f'Embedding dimension ({emb}) should be divisible by nr. of heads ({heads})'

            self.emb = emb
            self.heads = heads
            self.mask = mask

            s = emb // heads
            # - We will break the embedding into `heads` chunks and feed each to a different attention head

            self.tokeys    = nn.Linear(emb, emb, bias=False)
            self.toqueries = nn.Linear(emb, emb, bias=False)
            self.tovalues  = nn.Linear(emb, emb, bias=False)

            self.unifyheads = nn.Linear(emb, emb)

            self.kqnorm = kqnorm
            if kqnorm:
                self.kln = nn.LayerNorm([s])
                self.qln = nn.LayerNorm([s])

        def forward(self, queries, keys, values):

            assert keys.size() == values.size()

            b, tk, e = keys.size()

            assert queries.size(0) == b and queries.size(2) == e

            tq = queries.size(1)

            h = self.heads
            assert e == self.emb, f'Input embedding dim ({e}) should match layer embedding dim ({self.emb})'

            s = e // h

            keys    = self.tokeys(keys)
            queries = self.toqueries(queries)
            values  = self.tovalues(values)

            queries = queries.view(b, tq, h, s)
            keys    = keys.view(b, tk, h, s)
            values  = values.view(b, tk, h, s)

            if self.kqnorm:
                keys = self.kln(keys)
                queries = self.qln(queries)

            # -- We first compute the k/q/v's on the whole embedding vectors, and then split into the different heads.
            #    See the following video for an explanation: https://youtu.be/KmAISyVvE1Y

            # Compute scaled dot-product self-attention

            # - fold heads into the batch dimension
            queries = queries.transpose(1, 2).contiguous().view(b * h, tq, s)
            keys = keys.transpose(1, 2).contiguous().view(b * h, tk, s)
            values = values.transpose(1, 2).contiguous().view(b * h, tk, s)

            queries = queries / (s ** (1/4))
            keys    = keys / (s ** (1/4))
            # - Instead of dividing the dot products by sqrt(e), we scale the keys and values.
            #   This should be more memory efficient

            # - get dot product of queries and keys, and scale
            dot = torch.bmm(queries, keys.transpose(1, 2))

            assert dot.size() == (b*h, tq, tk)

            if self.mask: # mask out the upper half of the dot matrix, excluding the diagonal
                mask_(dot, maskval=float('-inf'), mask_diagonal=False)

            dot = F.softmax(dot, dim=2)
            # - dot now has row-wise self-attention probabilities

            # apply the self attention to the values
            out = torch.bmm(dot, values).view(b, h, tq, s)

            # swap h, t back, unify heads
            out = out.transpose(1, 2).contiguous().view(b, tq, s * h)

            return self.unifyheads(out)

    class TransformerBlock(nn.Module):
        """
        A straightforward transformer block.
        """

        def __init__(self, emb, heads, mask, seq_length, ff_hidden_mult=4, dropout=0.0, attention_type='default',
                     pos_embedding=None, sa_kwargs={}):
            super().__init__()

            if attention_type == 'default':
                self.attention = SelfAttention(emb, heads=heads, mask=mask, **sa_kwargs)
            elif attention_type == 'alt':
                self.attention = SelfAttentionAlt(emb, heads=heads, mask=mask)
            elif attention_type == 'wide':
                self.attention = SelfAttentionWide(emb, heads=heads, mask=mask)
            elif attention_type == 'gpt2':
                self.attention = SelfAttentionGPT2(emb, heads=heads, mask=mask)
            elif attention_type == 'narrow':
                self.attention = SelfAttentionNarrow(emb, heads=heads, mask=mask)
            elif attention_type == 'relative':
                assert pos_embedding is not None
                self.attention = SelfAttentionRelative(emb, heads=heads, mask=mask, pos_embedding=pos_embedding)
            else:
                raise Exception(f'Self-attention type {type} not recognized.')

            self.mask = mask

            self.norm1 = nn.LayerNorm(emb)
            self.norm2 = nn.LayerNorm(emb)

            self.ff = nn.Sequential(

                nn.Linear(emb, ff_hidden_mult * emb),
                nn.ReLU(),
                nn.Linear(ff_hidden_mult * emb, emb)
            )

            self.do = nn.Dropout(dropout)

        def forward(self, x):

            attended = self.attention(x)

            x = self.norm1(attended + x)

            x = self.do(x)

            fedforward = self.ff(x)

            x = self.norm2(fedforward + x)

            x = self.do(x)

            return x

    class GTransformer(nn.Module):
        """
        Transformer for generating text (character by character).
        """

        def __init__(self, emb, heads, depth, seq_length, num_tokens, attention_type='default'):

            super().__init__()

            self.num_tokens = num_tokens
            self.token_embedding = nn.Embedding(embedding_dim=emb, num_embeddings=num_tokens)
            self.pos_embedding = nn.Embedding(embedding_dim=emb, num_embeddings=(seq_length * 2 - 1 if attention_type=='relative' else seq_length))


            tblocks = []
            for i in range(depth):
                tblocks.append(
                    TransformerBlock(emb=emb, heads=heads, seq_length=seq_length, mask=True, attention_type=attention_type, pos_embedding=self.pos_embedding))

            self.tblocks = nn.Sequential(*tblocks)

            self.toprobs = nn.Linear(emb, num_tokens)

        def forward(self, x):
            """
            :param x: A (batch, sequence length) integer tensor of token indices.
            :return: predicted log-probability vectors for each token based on the preceding tokens.
            """
            tokens = self.token_embedding(x)
            b, t, e = tokens.size()

            positions = self.pos_embedding(torch.arange(t, device=d()))[None, :, :].expand(b, t, e)
            x = tokens + positions

            x = self.tblocks(x)

            x = self.toprobs(x.view(b*t, e)).view(b, t, self.num_tokens)

            return F.log_softmax(x, dim=2)

    class CTransformer(nn.Module):
        """
        Transformer for classifying sequences
        """

        def __init__(self, emb, heads, depth, seq_length, num_tokens, num_classes, max_pool=True, dropout=0.0, wide=False):
            """
            :param emb: Embedding dimension
            :param heads: nr. of attention heads
            :param depth: Number of transformer blocks
            :param seq_length: Expected maximum sequence length
            :param num_tokens: Number of tokens (usually words) in the vocabulary
            :param num_classes: Number of classes.
            :param max_pool: If true, use global max pooling in the last layer. If false, use global
                             average pooling.
            """
            super().__init__()

            self.num_tokens, self.max_pool = num_tokens, max_pool

            self.token_embedding = nn.Embedding(embedding_dim=emb, num_embeddings=num_tokens)
            self.pos_embedding = nn.Embedding(embedding_dim=emb, num_embeddings=seq_length)

            tblocks = []
            for i in range(depth):
                tblocks.append(
                    TransformerBlock(emb=emb, heads=heads, seq_length=seq_length, mask=False, dropout=dropout))

            self.tblocks = nn.Sequential(*tblocks)

            self.toprobs = nn.Linear(emb, num_classes)

            self.do = nn.Dropout(dropout)

        def forward(self, x):
            """
            :param x: A batch by sequence length integer tensor of token indices.
            :return: predicted log-probability vectors for each token based on the preceding tokens.
            """
            tokens = self.token_embedding(x)
            b, t, e = tokens.size()

            positions = self.pos_embedding(torch.arange(t, device=d()))[None, :, :].expand(b, t, e)
            x = tokens + positions
            x = self.do(x)

            x = self.tblocks(x)

            x = x.max(dim=1)[0] if self.max_pool else x.mean(dim=1) # pool over the time dimension

            x = self.toprobs(x)

            return F.log_softmax(x, dim=1)


    return types.SimpleNamespace(**{k: v for k, v in locals().items() if not k.startswith("_")})


class _SeededInts(SeededTorch):
    """``SeededTorch`` with ``randint(size=, low=, high=)`` from the same stream (former's
    ``sample_batch``)."""

    def randint(self, low=0, high=None, size=None, **kw):
        return self._mod.tensor(self._rs.randint(low, high, size), dtype=self._mod.long)


FORMER_ARGS = dict(seed=1, final=False, embedding_size=8, num_heads=2, depth=2, context=6,
                   lr=3e-3, lr_warmup=6, batch_size=3, num_batches=5, gradient_clipping=1.0,
                   test_every=2, sample_length=3, test_subset=10, test_batchsize=4)


def _former_data(torch):
    # a stand-in for enwik8: the byte values of letters a..p (``NUM_TOKENS`` is 128, not 256)
    rs = np.random.RandomState(17)
    X = rs.randint(97, 113, 80).astype(np.uint8)
    trX, vaX, teX = np.split(X, [60, 70])
    return torch.from_numpy(trX), torch.from_numpy(vaX), torch.from_numpy(teX)


def _former_program(attention_type):
    def program(torch, log):
        with seeded(1):
            _former_go(torch, log, attention_type)
    return program


def _former_go(torch, log, attention_type):
    import argparse
    import random
    torch = _SeededInts(torch, 8)
    Fm = _former_modules(torch)
    nn = torch.nn
    F = torch.nn.functional
    NUM_TOKENS = 128
    arg = argparse.Namespace(attention_type=attention_type, **FORMER_ARGS)

    # ``experiments/generate.py``'s ``go`` at ad9cc70 (MIT): tqdm, tensorboard and the timing
    # left out; ``sample_sequence`` at temperature 0 (greedy: its categorical draws would
    # come from each library's own stream); the model's weights overwritten from numpy
    torch.manual_seed(arg.seed)
    data_train, data_val, data_test = _former_data(torch)
    data_train, data_test = (torch.cat([data_train, data_val], dim=0), data_test) \
                            if arg.final else (data_train, data_val)

    # create the model
    model = Fm.GTransformer(emb=arg.embedding_size, heads=arg.num_heads, depth=arg.depth, seq_length=arg.context, num_tokens=NUM_TOKENS, attention_type=arg.attention_type)
    init_params(torch, model, 31)
    if torch.cuda.is_available():
        model.cuda()

    opt = torch.optim.Adam(lr=arg.lr, params=model.parameters())

    # Linear learning rate warmup
    sch = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(i / (arg.lr_warmup / arg.batch_size), 1.0))

    instances_seen = 0
    for i in range(arg.num_batches):

        opt.zero_grad()

        source, target = Fm.sample_batch(data_train, length=arg.context, batch_size=arg.batch_size)
        instances_seen += source.size(0)

        output = model(source) # forward pass

        # Compute the loss
        loss = F.nll_loss(output.transpose(2, 1), target, reduction='mean')
        log("train-loss", float(loss.item()) * Fm.LOG2E)

        loss.backward() # backward pass

        # clip gradients
        # -- If the total gradient vector has a length > x, we clip it back down to x.
        if arg.gradient_clipping > 0.0:
            log("grad norm", nn.utils.clip_grad_norm_(model.parameters(), arg.gradient_clipping))

        opt.step() # stochastic gradient descent step
        sch.step() # update the learning rate
        log("lr", sch.get_last_lr())

        if i != 0 and (i % arg.test_every == 0 or i == arg.num_batches - 1):
            with torch.no_grad():

                ## Sample and print a random sequence

                # Slice a random seed from the test data, and sample a continuation from the model.
                seedfr = random.randint(0, data_test.size(0) - arg.context)
                seed = data_test[seedfr:seedfr + arg.context].to(torch.long)

                Fm.sample_sequence(model, seed=seed, max_context=arg.context, verbose=True, length=arg.sample_length, temperature=0.0)

                ## Compute validation bits per byte

                upto = data_test.size(0) if i == arg.num_batches - 1 else arg.test_subset
                data_sub = data_test[:upto]

                bits_per_byte = Fm.compute_compression(model, data_sub, context=arg.context, batch_size=arg.test_batchsize)

                print(f'epoch{i}: {bits_per_byte:.4} bits per byte')
                log("bits", bits_per_byte)
    for n, p in model.named_parameters():
        if n.endswith("c_attn.bias"):
            # GPT-2's key bias adds one constant to each row of logits: softmax cancels it,
            # its gradient is float32 noise (1e-9) that Adam scales up to steps of ``lr``
            e = arg.embedding_size
            p = torch.cat([p[:e], p[2 * e:]])
        log(n, p)
        if not n.endswith("c_attn.bias"):
            log(n + ".grad", p.grad)

    # ``util.sample``'s categorical distribution, and the ``mask_``/``slice_diag`` helpers
    lnprobs = model(data_test[:arg.context].to(torch.long)[None])[0, -1]
    p = F.softmax(lnprobs / 0.5, dim=0)
    cd = torch.distributions.Categorical(p)
    log("categorical", [cd.probs, cd.logits, cd.entropy(), cd.log_prob(torch.arange(4))])
    log("greedy", Fm.sample(lnprobs, temperature=0.0))
    m = torch.tensor(np_randn((2, 3, 5), 3))
    log("slice_diag", Fm.slice_diag(m, l=3))
    Fm.mask_(m, maskval=float('-inf'), mask_diagonal=True)
    log("mask_", m)
    if attention_type == 'default':
        # the classifier (``experiments/classify.py``'s model) with global max and mean pooling
        for max_pool in (True, False):
            ct = init_params(torch, Fm.CTransformer(emb=8, heads=2, depth=1, seq_length=6, num_tokens=NUM_TOKENS,
                                                    num_classes=3, max_pool=max_pool), 32)
            out = ct(data_test[:arg.context].to(torch.long).view(2, 3))
            F.nll_loss(out, torch.tensor([0, 2])).backward()
            log("ctransformer", [out] + [q.grad for q in ct.parameters()])
        # the cross attention with layer-normalised keys and queries, and GPT's Conv1D
        att = init_params(torch, Fm.Attention(8, heads=2, kqnorm=True), 33)
        q_in, kv_in = torch.tensor(np_randn((2, 3, 8), 4)), torch.tensor(np_randn((2, 5, 8), 5))
        conv = init_params(torch, Fm.Conv1D(6, 8), 34)
        out = conv(att(q_in, kv_in, kv_in))
        out.pow(2).sum().backward()
        log("attention", [out] + [q.grad for q in att.parameters()] + [q.grad for q in conv.parameters()])


@pytest.mark.parametrize("attention_type", ["default", "alt", "wide", "gpt2", "narrow", "relative"])
def test_former_program(attention_type):
    run_both(_former_program(attention_type), rtol=1e-4, atol=1e-5)


# ---- Harry24k/bayesian-neural-network-pytorch ---------------------------------------------------
def _bnn_modules(torch):
    # ``torchbnn/modules/linear.py``, ``conv.py``, ``batchnorm.py``, ``loss.py``,
    # ``torchbnn/functional.py`` and ``torchbnn/utils/freeze_model.py`` at 3555c30 (MIT), their
    # imports bound to the given module (``BF.bayesian_kl_loss`` is the function defined here)
    import math
    import warnings
    Module, Parameter = torch.nn.Module, torch.nn.Parameter
    init = torch.nn.init
    F = torch.nn.functional
    nn = torch.nn
    _single, _pair, _triple = (torch.nn.modules.utils._single, torch.nn.modules.utils._pair,
                               torch.nn.modules.utils._triple)
    _Reduction = torch.nn._reduction

    class BayesLinear(Module):
        r"""
        Applies Bayesian Linear

        Arguments:
            prior_mu (Float): mean of prior normal distribution.
            prior_sigma (Float): sigma of prior normal distribution.

        .. note:: other arguments are following linear of pytorch 1.2.0.
        https://github.com/pytorch/pytorch/blob/master/torch/nn/modules/linear.py

        """
        __constants__ = ['prior_mu', 'prior_sigma', 'bias', 'in_features', 'out_features']

        def __init__(self, prior_mu, prior_sigma, in_features, out_features, bias=True):
            super(BayesLinear, self).__init__()
            self.in_features = in_features
            self.out_features = out_features

            self.prior_mu = prior_mu
            self.prior_sigma = prior_sigma
            self.prior_log_sigma = math.log(prior_sigma)

            self.weight_mu = Parameter(torch.Tensor(out_features, in_features))
            self.weight_log_sigma = Parameter(torch.Tensor(out_features, in_features))
            self.register_buffer('weight_eps', None)

            if bias is None or bias is False :
                self.bias = False
            else :
                self.bias = True

            if self.bias:
                self.bias_mu = Parameter(torch.Tensor(out_features))
                self.bias_log_sigma = Parameter(torch.Tensor(out_features))
                self.register_buffer('bias_eps', None)
            else:
                self.register_parameter('bias_mu', None)
                self.register_parameter('bias_log_sigma', None)
                self.register_buffer('bias_eps', None)

            self.reset_parameters()

        def reset_parameters(self):
            # Initialization method of Adv-BNN
            stdv = 1. / math.sqrt(self.weight_mu.size(1))
            self.weight_mu.data.uniform_(-stdv, stdv)
            self.weight_log_sigma.data.fill_(self.prior_log_sigma)
            if self.bias :
                self.bias_mu.data.uniform_(-stdv, stdv)
                self.bias_log_sigma.data.fill_(self.prior_log_sigma)

            # Initialization method of the original torch nn.linear.
    #         init.kaiming_uniform_(self.weight_mu, a=math.sqrt(5))
    #         self.weight_log_sigma.data.fill_(self.prior_log_sigma)

    #         if self.bias :
    #             fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight_mu)
    #             bound = 1 / math.sqrt(fan_in)
    #             init.uniform_(self.bias_mu, -bound, bound)

    #             self.bias_log_sigma.data.fill_(self.prior_log_sigma)

        def freeze(self) :
            self.weight_eps = torch.randn_like(self.weight_log_sigma)
            if self.bias :
                self.bias_eps = torch.randn_like(self.bias_log_sigma)

        def unfreeze(self) :
            self.weight_eps = None
            if self.bias :
                self.bias_eps = None

        def forward(self, input):
            r"""
            Overriden.
            """
            if self.weight_eps is None :
                weight = self.weight_mu + torch.exp(self.weight_log_sigma) * torch.randn_like(self.weight_log_sigma)
            else :
                weight = self.weight_mu + torch.exp(self.weight_log_sigma) * self.weight_eps

            if self.bias:
                if self.bias_eps is None :
                    bias = self.bias_mu + torch.exp(self.bias_log_sigma) * torch.randn_like(self.bias_log_sigma)
                else :
                    bias = self.bias_mu + torch.exp(self.bias_log_sigma) * self.bias_eps
            else :
                bias = None

            return F.linear(input, weight, bias)

        def extra_repr(self):
            r"""
            Overriden.
            """
            return 'prior_mu={}, prior_sigma={}, in_features={}, out_features={}, bias={}'.format(self.prior_mu, self.prior_sigma, self.in_features, self.out_features, self.bias is not None)

    class _BayesConvNd(Module):
        r"""
        Applies Bayesian Convolution

        Arguments:
            prior_mu (Float): mean of prior normal distribution.
            prior_sigma (Float): sigma of prior normal distribution.

        .. note:: other arguments are following conv of pytorch 1.2.0.
        https://github.com/pytorch/pytorch/blob/master/torch/nn/modules/conv.py
        """
        __constants__ = ['prior_mu', 'prior_sigma', 'stride', 'padding', 'dilation',
                         'groups', 'bias', 'padding_mode', 'output_padding', 'in_channels',
                         'out_channels', 'kernel_size']

        def __init__(self, prior_mu, prior_sigma, in_channels, out_channels, kernel_size, stride,
                     padding, dilation, transposed, output_padding,
                     groups, bias, padding_mode):
            super(_BayesConvNd, self).__init__()
            if in_channels % groups != 0:
                raise ValueError('in_channels must be divisible by groups')
            if out_channels % groups != 0:
                raise ValueError('out_channels must be divisible by groups')
            self.in_channels = in_channels
            self.out_channels = out_channels
            self.kernel_size = kernel_size
            self.stride = stride
            self.padding = padding
            self.dilation = dilation
            self.transposed = transposed
            self.output_padding = output_padding
            self.groups = groups
            self.padding_mode = padding_mode

            self.prior_mu = prior_mu
            self.prior_sigma = prior_sigma
            self.prior_log_sigma = math.log(prior_sigma)

            if transposed:
                self.weight_mu = Parameter(torch.Tensor(
                    in_channels, out_channels // groups, *kernel_size))
                self.weight_log_sigma = Parameter(torch.Tensor(
                    in_channels, out_channels // groups, *kernel_size))
                self.register_buffer('weight_eps', None)
            else:
                self.weight_mu = Parameter(torch.Tensor(
                    out_channels, in_channels // groups, *kernel_size))
                self.weight_log_sigma = Parameter(torch.Tensor(
                    out_channels, in_channels // groups, *kernel_size))
                self.register_buffer('weight_eps', None)

            if bias is None or bias is False :
                self.bias = False
            else :
                self.bias = True

            if self.bias:
                self.bias_mu = Parameter(torch.Tensor(out_channels))
                self.bias_log_sigma = Parameter(torch.Tensor(out_channels))
                self.register_buffer('bias_eps', None)
            else:
                self.register_parameter('bias_mu', None)
                self.register_parameter('bias_log_sigma', None)
                self.register_buffer('bias_eps', None)

            self.reset_parameters()

        def reset_parameters(self):
            # Initialization method of Adv-BNN.
            n = self.in_channels
            n *= self.kernel_size[0] ** 2
            stdv = 1.0 / math.sqrt(n)
            self.weight_mu.data.uniform_(-stdv, stdv)
            self.weight_log_sigma.data.fill_(self.prior_log_sigma)

            if self.bias :
                self.bias_mu.data.uniform_(-stdv, stdv)
                self.bias_log_sigma.data.fill_(self.prior_log_sigma)

            # Initialization method of the original torch nn.conv.
    #         init.kaiming_uniform_(self.weight_mu, a=math.sqrt(5))
    #         self.weight_log_sigma.data.fill_(self.prior_log_sigma)

    #         if self.bias :
    #             fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight_mu)
    #             bound = 1 / math.sqrt(fan_in)
    #             init.uniform_(self.bias_mu, -bound, bound)

    #             self.bias_log_sigma.data.fill_(self.prior_log_sigma)

        def freeze(self) :
            self.weight_eps = torch.randn_like(self.weight_log_sigma)
            if self.bias :
                self.bias_eps = torch.randn_like(self.bias_log_sigma)

        def unfreeze(self) :
            self.weight_eps = None
            if self.bias :
                self.bias_eps = None

        def extra_repr(self):
            s = ('{prior_mu}, {prior_sigma}'
                 ', {in_channels}, {out_channels}, kernel_size={kernel_size}'
                 ', stride={stride}')
            if self.padding != (0,) * len(self.padding):
                s += ', padding={padding}'
            if self.dilation != (1,) * len(self.dilation):
                s += ', dilation={dilation}'
            if self.output_padding != (0,) * len(self.output_padding):
                s += ', output_padding={output_padding}'
            if self.groups != 1:
                s += ', groups={groups}'
            if self.bias is False:
                s += ', bias=False'
            return s.format(**self.__dict__)

        def __setstate__(self, state):
            super(_BayesConvNd, self).__setstate__(state)
            if not hasattr(self, 'padding_mode'):
                self.padding_mode = 'zeros'

    class BayesConv2d(_BayesConvNd):
        r"""
        Applies Bayesian Convolution for 2D inputs

        Arguments:
            prior_mu (Float): mean of prior normal distribution.
            prior_sigma (Float): sigma of prior normal distribution.

        .. note:: other arguments are following conv of pytorch 1.2.0.
        https://github.com/pytorch/pytorch/blob/master/torch/nn/modules/conv.py

        """
        def __init__(self, prior_mu, prior_sigma, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True, padding_mode='zeros'):
            kernel_size = _pair(kernel_size)
            stride = _pair(stride)
            padding = _pair(padding)
            dilation = _pair(dilation)
            super(BayesConv2d, self).__init__(
                prior_mu, prior_sigma, in_channels, out_channels, kernel_size, stride,
                padding, dilation, False, _pair(0), groups, bias, padding_mode)

        def conv2d_forward(self, input, weight):

            if self.bias:
                if self.bias_eps is None :
                    bias = self.bias_mu + torch.exp(self.bias_log_sigma) * torch.randn_like(self.bias_log_sigma)
                else :
                    bias = self.bias_mu + torch.exp(self.bias_log_sigma) * self.bias_eps
            else :
                bias = None

            if self.padding_mode == 'circular':
                expanded_padding = ((self.padding[1] + 1) // 2, self.padding[1] // 2,
                                    (self.padding[0] + 1) // 2, self.padding[0] // 2)
                return F.conv2d(F.pad(input, expanded_padding, mode='circular'),
                                weight, bias, self.stride,
                                _pair(0), self.dilation, self.groups)
            return F.conv2d(input, weight, bias, self.stride,
                            self.padding, self.dilation, self.groups)

        def forward(self, input):
            r"""
            Overriden.
            """
            if self.weight_eps is None :
                weight = self.weight_mu + torch.exp(self.weight_log_sigma) * torch.randn_like(self.weight_log_sigma)
            else :
                weight = self.weight_mu + torch.exp(self.weight_log_sigma) * self.weight_eps

            return self.conv2d_forward(input, weight)

    class _BayesBatchNorm(Module):
        r"""
        Applies Bayesian Batch Normalization over a 2D or 3D input

        Arguments:
            prior_mu (Float): mean of prior normal distribution.
            prior_sigma (Float): sigma of prior normal distribution.

        .. note:: other arguments are following batchnorm of pytorch 1.2.0.
        https://github.com/pytorch/pytorch/blob/master/torch/nn/modules/batchnorm.py

        """

        _version = 2
        __constants__ = ['prior_mu', 'prior_sigma', 'track_running_stats',
                         'momentum', 'eps', 'weight', 'bias',
                         'running_mean', 'running_var', 'num_batches_tracked',
                         'num_features', 'affine']

        def __init__(self, prior_mu, prior_sigma, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
            super(_BayesBatchNorm, self).__init__()
            self.num_features = num_features
            self.eps = eps
            self.momentum = momentum
            self.affine = affine
            self.track_running_stats = track_running_stats
            if self.affine:
                self.prior_mu = prior_mu
                self.prior_sigma = prior_sigma
                self.prior_log_sigma = math.log(prior_sigma)

                self.weight_mu = Parameter(torch.Tensor(num_features))
                self.weight_log_sigma = Parameter(torch.Tensor(num_features))
                self.register_buffer('weight_eps', None)

                self.bias_mu = Parameter(torch.Tensor(num_features))
                self.bias_log_sigma = Parameter(torch.Tensor(num_features))
                self.register_buffer('bias_eps', None)
            else:
                self.register_parameter('weight_mu', None)
                self.register_parameter('weight_log_sigma', None)
                self.register_buffer('weight_eps', None)
                self.register_parameter('bias_mu', None)
                self.register_parameter('bias_log_sigma', None)
                self.register_buffer('bias_eps', None)
            if self.track_running_stats:
                self.register_buffer('running_mean', torch.zeros(num_features))
                self.register_buffer('running_var', torch.ones(num_features))
                self.register_buffer('num_batches_tracked', torch.tensor(0, dtype=torch.long))
            else:
                self.register_parameter('running_mean', None)
                self.register_parameter('running_var', None)
                self.register_parameter('num_batches_tracked', None)
            self.reset_parameters()

        def reset_running_stats(self):
            if self.track_running_stats:
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

        def reset_parameters(self):
            self.reset_running_stats()
            if self.affine:
                # Initialization method of Adv-BNN.
                self.weight_mu.data.uniform_()
                self.weight_log_sigma.data.fill_(self.prior_log_sigma)
                self.bias_mu.data.zero_()
                self.bias_log_sigma.data.fill_(self.prior_log_sigma)

                # Initilization method of the original torch nn.batchnorm.
    #             init.ones_(self.weight_mu)
    #             self.weight_log_sigma.data.fill_(self.prior_log_sigma)
    #             init.zeros_(self.bias_mu)
    #             self.bias_log_sigma.data.fill_(self.prior_log_sigma)

        def freeze(self) :
            if self.affine :
                self.weight_eps = torch.randn_like(self.weight_log_sigma)
                self.bias_eps = torch.randn_like(self.bias_log_sigma)

        def unfreeze(self) :
            if self.affine :
                self.weight_eps = None
                self.bias_eps = None

        def _check_input_dim(self, input):
            raise NotImplementedError

        def forward(self, input):
            self._check_input_dim(input)

            if self.momentum is None:
                exponential_average_factor = 0.0
            else:
                exponential_average_factor = self.momentum

            if self.training and self.track_running_stats:
                if self.num_batches_tracked is not None:
                    self.num_batches_tracked += 1
                    if self.momentum is None:
                        exponential_average_factor = 1.0 / float(self.num_batches_tracked)
                    else:
                        exponential_average_factor = self.momentum

            if self.affine :
                if self.weight_eps is None :
                    weight = self.weight_mu + torch.exp(self.weight_log_sigma) * torch.randn_like(self.weight_log_sigma)
                    bias = self.bias_mu + torch.exp(self.bias_log_sigma) * torch.randn_like(self.bias_log_sigma)
                else :
                    weight = self.weight_mu + torch.exp(self.weight_log_sigma) * self.weight_eps
                    bias = self.bias_mu + torch.exp(self.bias_log_sigma) * self.bias_eps
            else :
                weight = None
                bias = None

            return F.batch_norm(
                input, self.running_mean, self.running_var, weight, bias,
                self.training or not self.track_running_stats,
                exponential_average_factor, self.eps)

        def extra_repr(self):
            return '{prior_mu}, {prior_sigma}, {num_features}, ' \
                    'eps={eps}, momentum={momentum}, affine={affine}, ' \
                    'track_running_stats={track_running_stats}'.format(**self.__dict__)

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs):
            version = local_metadata.get('version', None)

            if (version is None or version < 2) and self.track_running_stats:
                num_batches_tracked_key = prefix + 'num_batches_tracked'
                if num_batches_tracked_key not in state_dict:
                    state_dict[num_batches_tracked_key] = torch.tensor(0, dtype=torch.long)

            super(_BayesBatchNorm, self)._load_from_state_dict(
                state_dict, prefix, local_metadata, strict,
                missing_keys, unexpected_keys, error_msgs)

    class BayesBatchNorm2d(_BayesBatchNorm):
        r"""
        Applies Bayesian Batch Normalization over a 2D input

        Arguments:
            prior_mu (Float): mean of prior normal distribution.
            prior_sigma (Float): sigma of prior normal distribution.

        .. note:: other arguments are following batchnorm of pytorch 1.2.0.
        https://github.com/pytorch/pytorch/blob/master/torch/nn/modules/batchnorm.py

        """

        def _check_input_dim(self, input):
            if input.dim() != 4:
                raise ValueError('expected 4D input (got {}D input)'
                                 .format(input.dim()))

    def _kl_loss(mu_0, log_sigma_0, mu_1, log_sigma_1) :
        """
        An method for calculating KL divergence between two Normal distribtuion.

        Arguments:
            mu_0 (Float) : mean of normal distribution.
            log_sigma_0 (Float): log(standard deviation of normal distribution).
            mu_1 (Float): mean of normal distribution.
            log_sigma_1 (Float): log(standard deviation of normal distribution).

        """
        kl = log_sigma_1 - log_sigma_0 + \
        (torch.exp(log_sigma_0)**2 + (mu_0-mu_1)**2)/(2*math.exp(log_sigma_1)**2) - 0.5
        return kl.sum()

    def bayesian_kl_loss(model, reduction='mean', last_layer_only=False) :
        """
        An method for calculating KL divergence of whole layers in the model.


        Arguments:
            model (nn.Module): a model to be calculated for KL-divergence.
            reduction (string, optional): Specifies the reduction to apply to the output:
                ``'mean'``: the sum of the output will be divided by the number of
                elements of the output.
                ``'sum'``: the output will be summed.
            last_layer_only (Bool): True for return only the last layer's KL divergence.

        """
        device = torch.device("cuda" if next(model.parameters()).is_cuda else "cpu")
        kl = torch.Tensor([0]).to(device)
        kl_sum = torch.Tensor([0]).to(device)
        n = torch.Tensor([0]).to(device)

        for m in model.modules() :
            if isinstance(m, (BayesLinear, BayesConv2d)):
                kl = _kl_loss(m.weight_mu, m.weight_log_sigma, m.prior_mu, m.prior_log_sigma)
                kl_sum += kl
                n += len(m.weight_mu.view(-1))

                if m.bias :
                    kl = _kl_loss(m.bias_mu, m.bias_log_sigma, m.prior_mu, m.prior_log_sigma)
                    kl_sum += kl
                    n += len(m.bias_mu.view(-1))

            if isinstance(m, BayesBatchNorm2d):
                if m.affine :
                    kl = _kl_loss(m.weight_mu, m.weight_log_sigma, m.prior_mu, m.prior_log_sigma)
                    kl_sum += kl
                    n += len(m.weight_mu.view(-1))

                    kl = _kl_loss(m.bias_mu, m.bias_log_sigma, m.prior_mu, m.prior_log_sigma)
                    kl_sum += kl
                    n += len(m.bias_mu.view(-1))

        if last_layer_only or n == 0 :
            return kl

        if reduction == 'mean' :
            return kl_sum/n
        elif reduction == 'sum' :
            return kl_sum
        else :
            raise ValueError(reduction + " is not valid")

    class _Loss(Module):
        def __init__(self, reduction='mean'):
            super(_Loss, self).__init__()
            self.reduction = reduction

    class BKLLoss(_Loss):
        """
        Loss for calculating KL divergence of baysian neural network model.

        Arguments:
            reduction (string, optional): Specifies the reduction to apply to the output:
                ``'mean'``: the sum of the output will be divided by the number of
                elements of the output.
                ``'sum'``: the output will be summed.
            last_layer_only (Bool): True for return only the last layer's KL divergence.
        """
        __constants__ = ['reduction']

        def __init__(self, reduction='mean', last_layer_only=False):
            super(BKLLoss, self).__init__(reduction)
            self.last_layer_only = last_layer_only

        def forward(self, model):
            """
            Arguments:
                model (nn.Module): a model to be calculated for KL-divergence.
            """
            return bayesian_kl_loss(model, reduction=self.reduction, last_layer_only=self.last_layer_only)

    bayes_layer = (BayesLinear, BayesConv2d, BayesBatchNorm2d)

    def freeze(module):
        """
        Methods for freezing bayesian-model.

        Arguments:
            model (nn.Module): a model to be freezed.

        """

        if isinstance(module, bayes_layer) :
            module.freeze()
        for submodule in module.children() :
            freeze(submodule)


    def unfreeze(module):
        """
        Methods for unfreezing bayesian-model.

        Arguments:
            model (nn.Module): a model to be unfreezed.

        """
        if isinstance(module, bayes_layer) :
            module.unfreeze()
        for submodule in module.children() :
            unfreeze(submodule)

    return types.SimpleNamespace(**{k: v for k, v in locals().items() if not k.startswith("__")})


def _iris_like():
    # a stand-in for sklearn's iris data: 3 classes of 10 four-feature rows around three centres
    rs = np.random.RandomState(23)
    centres = np.array([[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.6, 2.0]])
    X = np.concatenate([c + 0.3 * rs.randn(10, 4) for c in centres])
    Y = np.repeat(np.arange(3), 10)
    return X, Y


def _bnn_program(torch, log):
    torch = SeededTorch(torch, 24)
    bnn = _bnn_modules(torch)
    nn = torch.nn
    optim = torch.optim
    # the "Bayesian Neural Network Classification" demo (``demos/*.ipynb`` at 5f501ef): 8 hidden
    # units instead of 100, 20 steps instead of 3000, the plots left out
    X, Y = _iris_like()
    x, y = torch.from_numpy(X).float(), torch.from_numpy(Y).long()
    log("shapes", [x.shape, y.shape])
    model = nn.Sequential(
        bnn.BayesLinear(prior_mu=0, prior_sigma=0.1, in_features=4, out_features=8),
        nn.ReLU(),
        bnn.BayesLinear(prior_mu=0, prior_sigma=0.1, in_features=8, out_features=3),
    )
    print(model)
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            if i % 2 == 0:   # the means from numpy; the log-sigmas keep their log(0.1) fill
                p.copy_(torch.tensor(np_randn(tuple(p.shape), 60 + i, 0.3)))
    ce_loss = nn.CrossEntropyLoss()
    kl_loss = bnn.BKLLoss(reduction='mean', last_layer_only=False)
    kl_weight = 0.01

    optimizer = optim.Adam(model.parameters(), lr=0.01)
    kl_weight = 0.1
    for step in range(20):
        pre = model(x)
        ce = ce_loss(pre, y)
        kl = kl_loss(model)
        cost = ce + kl_weight*kl

        optimizer.zero_grad()
        cost.backward()
        optimizer.step()
        log("cost", [ce, kl, cost])

    _, predicted = torch.max(pre.data, 1)
    total = y.size(0)
    correct = (predicted == y).sum()
    print('- Accuracy: %f %%' % (100 * float(correct) / total))
    print('- CE : %2.2f, KL : %2.2f' % (ce.item(), kl.item()))
    for n, p in model.named_parameters():
        log(n, p)
        log(n + ".grad", p.grad)
    log("kl last layer", bnn.bayesian_kl_loss(model, last_layer_only=True))
    log("kl sum", bnn.BKLLoss(reduction='sum')(model))
    try:
        bnn.BKLLoss(reduction='none')(model)
    except ValueError as e:
        log("reduction none", ["ValueError", str(e)])

    # the "Freeze Bayesian Neural Network" demo: two calls differ, frozen calls repeat
    model = nn.Sequential(
        bnn.BayesLinear(prior_mu=0, prior_sigma=0.05, in_features=2, out_features=2),
        nn.ReLU(),
        bnn.BayesLinear(prior_mu=0, prior_sigma=0.05, in_features=2, out_features=1),
    )
    init_params(torch, model, 25)
    outs = [model(torch.ones(1, 2)), model(torch.ones(1, 2))]
    bnn.freeze(model)
    outs += [model(torch.ones(1, 2)), model(torch.ones(1, 2))]
    log("eps buffers", [n for n, _ in model.named_buffers()])
    bnn.freeze(model)
    outs += [model(torch.ones(1, 2)), model(torch.ones(1, 2))]
    bnn.unfreeze(model)
    outs += [model(torch.ones(1, 2)), model(torch.ones(1, 2))]
    log("freeze", outs)
    log("buffers after unfreeze", [n for n, _ in model.named_buffers()])

    # a small Bayesian CNN of the three layer kinds (``BayesConv2d`` with circular padding,
    # ``BayesBatchNorm2d``), trained with the summed KL, then frozen in eval mode
    class BayesCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = bnn.BayesConv2d(0, 0.1, 1, 3, 3, padding=1, padding_mode='circular')
            self.bn = bnn.BayesBatchNorm2d(0, 0.1, 3)
            self.conv2 = bnn.BayesConv2d(0, 0.1, 3, 4, 3, stride=2, bias=False)
            self.fc = bnn.BayesLinear(0, 0.1, 4 * 2 * 2, 3)

        def forward(self, x):
            x = torch.relu(self.bn(self.conv1(x)))
            x = torch.relu(self.conv2(x))
            return self.fc(x.view(x.size(0), -1))

    cnn = BayesCNN()
    print(cnn)
    init_params(torch, cnn, 26, scale=0.2)
    opt = optim.SGD(cnn.parameters(), lr=0.05, momentum=0.9)
    imgs = torch.tensor(np_randn((6, 1, 6, 6), 27))
    labels = torch.tensor([0, 1, 2, 0, 1, 2])
    kl_sum = bnn.BKLLoss(reduction='sum')
    for step in range(3):
        out = cnn(imgs)
        cost = ce_loss(out, labels) + 1e-3 * kl_sum(cnn)
        opt.zero_grad()
        cost.backward()
        opt.step()
        log("cnn cost", cost)
    for n, p in cnn.named_parameters():
        log(n, p)
        log(n + ".grad", p.grad)
    log("bn running", [cnn.bn.running_mean, cnn.bn.running_var, cnn.bn.num_batches_tracked])
    cnn.eval()
    bnn.freeze(cnn)
    with torch.no_grad():
        log("frozen eval", [cnn(imgs), cnn(imgs)])
    try:
        cnn.bn(imgs[0])
    except ValueError as e:
        log("3D input", str(e))


def test_bnn_program():
    run_both(_bnn_program, rtol=1e-4, atol=1e-5)


# ---- chrischute/real-nvp ------------------------------------------------------------------------
def _rnvp_modules(torch):
    # ``util/array_util.py``, ``norm_util.py``, ``optim_util.py``, ``shell_util.py``,
    # ``models/resnet/*.py`` and ``models/real_nvp/*.py`` at df51ad5 (MIT), their imports bound to
    # the given module (``import torch.nn.utils as utils``)
    import functools
    from enum import IntEnum
    nn = torch.nn
    F = torch.nn.functional
    utils = torch.nn.utils

    def squeeze_2x2(x, reverse=False, alt_order=False):
        """For each spatial position, a sub-volume of shape `1x1x(N^2 * C)`,
        reshape into a sub-volume of shape `NxNxC`, where `N = block_size`.

        Adapted from:
            https://github.com/tensorflow/models/blob/master/research/real_nvp/real_nvp_utils.py

        See Also:
            - TensorFlow nn.depth_to_space: https://www.tensorflow.org/api_docs/python/tf/nn/depth_to_space
            - Figure 3 of RealNVP paper: https://arxiv.org/abs/1605.08803

        Args:
            x (torch.Tensor): Input tensor of shape (B, C, H, W).
            reverse (bool): Whether to do a reverse squeeze (unsqueeze).
            alt_order (bool): Whether to use alternate ordering.
        """
        block_size = 2
        if alt_order:
            n, c, h, w = x.size()

            if reverse:
                if c % 4 != 0:
                    raise ValueError('Number of channels must be divisible by 4, got {}.'.format(c))
                c //= 4
            else:
                if h % 2 != 0:
                    raise ValueError('Height must be divisible by 2, got {}.'.format(h))
                if w % 2 != 0:
                    raise ValueError('Width must be divisible by 4, got {}.'.format(w))
            # Defines permutation of input channels (shape is (4, 1, 2, 2)).
            squeeze_matrix = torch.tensor([[[[1., 0.], [0., 0.]]],
                                           [[[0., 0.], [0., 1.]]],
                                           [[[0., 1.], [0., 0.]]],
                                           [[[0., 0.], [1., 0.]]]],
                                          dtype=x.dtype,
                                          device=x.device)
            perm_weight = torch.zeros((4 * c, c, 2, 2), dtype=x.dtype, device=x.device)
            for c_idx in range(c):
                slice_0 = slice(c_idx * 4, (c_idx + 1) * 4)
                slice_1 = slice(c_idx, c_idx + 1)
                perm_weight[slice_0, slice_1, :, :] = squeeze_matrix
            shuffle_channels = torch.tensor([c_idx * 4 for c_idx in range(c)]
                                            + [c_idx * 4 + 1 for c_idx in range(c)]
                                            + [c_idx * 4 + 2 for c_idx in range(c)]
                                            + [c_idx * 4 + 3 for c_idx in range(c)])
            perm_weight = perm_weight[shuffle_channels, :, :, :]

            if reverse:
                x = F.conv_transpose2d(x, perm_weight, stride=2)
            else:
                x = F.conv2d(x, perm_weight, stride=2)
        else:
            b, c, h, w = x.size()
            x = x.permute(0, 2, 3, 1)

            if reverse:
                if c % 4 != 0:
                    raise ValueError('Number of channels {} is not divisible by 4'.format(c))
                x = x.view(b, h, w, c // 4, 2, 2)
                x = x.permute(0, 1, 4, 2, 5, 3)
                x = x.contiguous().view(b, 2 * h, 2 * w, c // 4)
            else:
                if h % 2 != 0 or w % 2 != 0:
                    raise ValueError('Expected even spatial dims HxW, got {}x{}'.format(h, w))
                x = x.view(b, h // 2, 2, w // 2, 2, c)
                x = x.permute(0, 1, 3, 5, 2, 4)
                x = x.contiguous().view(b, h // 2, w // 2, c * 4)

            x = x.permute(0, 3, 1, 2)

        return x


    def checkerboard_mask(height, width, reverse=False, dtype=torch.float32,
                          device=None, requires_grad=False):
        """Get a checkerboard mask, such that no two entries adjacent entries
        have the same value. In non-reversed mask, top-left entry is 0.

        Args:
            height (int): Number of rows in the mask.
            width (int): Number of columns in the mask.
            reverse (bool): If True, reverse the mask (i.e., make top-left entry 1).
                Useful for alternating masks in RealNVP.
            dtype (torch.dtype): Data type of the tensor.
            device (torch.device): Device on which to construct the tensor.
            requires_grad (bool): Whether the tensor requires gradient.


        Returns:
            mask (torch.tensor): Checkerboard mask of shape (1, 1, height, width).
        """
        checkerboard = [[((i % 2) + j) % 2 for j in range(width)] for i in range(height)]
        mask = torch.tensor(checkerboard, dtype=dtype, device=device, requires_grad=requires_grad)

        if reverse:
            mask = 1 - mask

        # Reshape to (1, 1, height, width) for broadcasting with tensors of shape (B, C, H, W)
        mask = mask.view(1, 1, height, width)

        return mask

    def get_norm_layer(norm_type='instance'):
        if norm_type == 'batch':
            return functools.partial(nn.BatchNorm2d, affine=True)
        elif norm_type == 'instance':
            return functools.partial(nn.InstanceNorm2d, affine=False)
        else:
            raise NotImplementedError('Invalid normalization type: {}'.format(norm_type))


    def get_param_groups(net, weight_decay, norm_suffix='weight_g', verbose=False):
        """Get two parameter groups from `net`: One named "normalized" which will
        override the optimizer with `weight_decay`, and one named "unnormalized"
        which will inherit all hyperparameters from the optimizer.

        Args:
            net (torch.nn.Module): Network to get parameters from
            weight_decay (float): Weight decay to apply to normalized weights.
            norm_suffix (str): Suffix to select weights that should be normalized.
                For WeightNorm, using 'weight_g' normalizes the scale variables.
            verbose (bool): Print out number of normalized and unnormalized parameters.
        """
        norm_params = []
        unnorm_params = []
        for n, p in net.named_parameters():
            if n.endswith(norm_suffix):
                norm_params.append(p)
            else:
                unnorm_params.append(p)

        param_groups = [{'name': 'normalized', 'params': norm_params, 'weight_decay': weight_decay},
                        {'name': 'unnormalized', 'params': unnorm_params}]

        if verbose:
            print('{} normalized parameters'.format(len(norm_params)))
            print('{} unnormalized parameters'.format(len(unnorm_params)))

        return param_groups


    class WNConv2d(nn.Module):
        """Weight-normalized 2d convolution.

        Args:
            in_channels (int): Number of channels in the input.
            out_channels (int): Number of channels in the output.
            kernel_size (int): Side length of each convolutional kernel.
            padding (int): Padding to add on edges of input.
            bias (bool): Use bias in the convolution operation.
        """
        def __init__(self, in_channels, out_channels, kernel_size, padding, bias=True):
            super(WNConv2d, self).__init__()
            self.conv = nn.utils.weight_norm(
                nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding, bias=bias))

        def forward(self, x):
            x = self.conv(x)

            return x


    class BatchNormStats2d(nn.Module):
        """Compute BatchNorm2d normalization statistics: `mean` and `var`.
        Useful for keeping track of sum of log-determinant of Jacobians in flow models.
        Args:
            num_features (int): Number of features in the input (i.e., `C` in `(N, C, H, W)`).
            eps (float): Added to the denominator for numerical stability.
            decay (float): The value used for the running_mean and running_var computation.
                Different from conventional momentum, see `nn.BatchNorm2d` for more.
        """
        def __init__(self, num_features, eps=1e-5, decay=0.1):
            super(BatchNormStats2d, self).__init__()
            self.eps = eps

            self.register_buffer('running_mean', torch.zeros(num_features))
            self.register_buffer('running_var', torch.ones(num_features))
            self.decay = decay

        def forward(self, x, training):
            # Get mean and variance per channel
            if training:
                channels = x.transpose(0, 1).contiguous().view(x.size(1), -1)
                used_mean, used_var = channels.mean(-1), channels.var(-1)
                curr_mean, curr_var = used_mean, used_var

                # Update variables
                self.running_mean = self.running_mean - self.decay * (self.running_mean - curr_mean)
                self.running_var = self.running_var - self.decay * (self.running_var - curr_var)
            else:
                used_mean = self.running_mean
                used_var = self.running_var

            used_var += self.eps

            # Reshape to (N, C, H, W)
            used_mean = used_mean.view(1, x.size(1), 1, 1).expand_as(x)
            used_var = used_var.view(1, x.size(1), 1, 1).expand_as(x)

            return used_mean, used_var

    def bits_per_dim(x, nll):
        """Get the bits per dimension implied by using model with `loss`
        for compressing `x`, assuming each entry can take on `k` discrete values.

        Args:
            x (torch.Tensor): Input to the model. Just used for dimensions.
            nll (torch.Tensor): Scalar negative log-likelihood loss tensor.

        Returns:
            bpd (torch.Tensor): Bits per dimension implied if compressing `x`.
        """
        dim = np.prod(x.size()[1:])
        bpd = nll / (np.log(2) * dim)

        return bpd


    def clip_grad_norm(optimizer, max_norm, norm_type=2):
        """Clip the norm of the gradients for all parameters under `optimizer`.

        Args:
            optimizer (torch.optim.Optimizer):
            max_norm (float): The maximum allowable norm of gradients.
            norm_type (int): The type of norm to use in computing gradient norms.
        """
        for group in optimizer.param_groups:
            utils.clip_grad_norm_(group['params'], max_norm, norm_type)

    class AverageMeter(object):
        """Computes and stores the average and current value.

        Adapted from: https://github.com/pytorch/examples/blob/master/imagenet/train.py
        """
        def __init__(self):
            self.val = 0.
            self.avg = 0.
            self.sum = 0.
            self.count = 0.

        def reset(self):
            self.val = 0.
            self.avg = 0.
            self.sum = 0.
            self.count = 0.

        def update(self, val, n=1):
            self.val = val
            self.sum += val * n
            self.count += n
            self.avg = self.sum / self.count

    class ResidualBlock(nn.Module):
        """ResNet basic block with weight norm."""
        def __init__(self, in_channels, out_channels):
            super(ResidualBlock, self).__init__()

            self.in_norm = nn.BatchNorm2d(in_channels)
            self.in_conv = WNConv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False)

            self.out_norm = nn.BatchNorm2d(out_channels)
            self.out_conv = WNConv2d(out_channels, out_channels, kernel_size=3, padding=1, bias=True)

        def forward(self, x):
            skip = x

            x = self.in_norm(x)
            x = F.relu(x)
            x = self.in_conv(x)

            x = self.out_norm(x)
            x = F.relu(x)
            x = self.out_conv(x)

            x = x + skip

            return x

    class ResNet(nn.Module):
        """ResNet for scale and translate factors in Real NVP.

        Args:
            in_channels (int): Number of channels in the input.
            mid_channels (int): Number of channels in the intermediate layers.
            out_channels (int): Number of channels in the output.
            num_blocks (int): Number of residual blocks in the network.
            kernel_size (int): Side length of each filter in convolutional layers.
            padding (int): Padding for convolutional layers.
            double_after_norm (bool): Double input after input BatchNorm.
        """
        def __init__(self, in_channels, mid_channels, out_channels,
                     num_blocks, kernel_size, padding, double_after_norm):
            super(ResNet, self).__init__()
            self.in_norm = nn.BatchNorm2d(in_channels)
            self.double_after_norm = double_after_norm
            self.in_conv = WNConv2d(2 * in_channels, mid_channels, kernel_size, padding, bias=True)
            self.in_skip = WNConv2d(mid_channels, mid_channels, kernel_size=1, padding=0, bias=True)

            self.blocks = nn.ModuleList([ResidualBlock(mid_channels, mid_channels)
                                         for _ in range(num_blocks)])
            self.skips = nn.ModuleList([WNConv2d(mid_channels, mid_channels, kernel_size=1, padding=0, bias=True)
                                        for _ in range(num_blocks)])

            self.out_norm = nn.BatchNorm2d(mid_channels)
            self.out_conv = WNConv2d(mid_channels, out_channels, kernel_size=1, padding=0, bias=True)

        def forward(self, x):
            x = self.in_norm(x)
            if self.double_after_norm:
                x *= 2.
            x = torch.cat((x, -x), dim=1)
            x = F.relu(x)
            x = self.in_conv(x)
            x_skip = self.in_skip(x)

            for block, skip in zip(self.blocks, self.skips):
                x = block(x)
                x_skip += skip(x)

            x = self.out_norm(x_skip)
            x = F.relu(x)
            x = self.out_conv(x)

            return x

    class MaskType(IntEnum):
        CHECKERBOARD = 0
        CHANNEL_WISE = 1


    class CouplingLayer(nn.Module):
        """Coupling layer in RealNVP.

        Args:
            in_channels (int): Number of channels in the input.
            mid_channels (int): Number of channels in the `s` and `t` network.
            num_blocks (int): Number of residual blocks in the `s` and `t` network.
            mask_type (MaskType): One of `MaskType.CHECKERBOARD` or `MaskType.CHANNEL_WISE`.
            reverse_mask (bool): Whether to reverse the mask. Useful for alternating masks.
        """
        def __init__(self, in_channels, mid_channels, num_blocks, mask_type, reverse_mask):
            super(CouplingLayer, self).__init__()

            # Save mask info
            self.mask_type = mask_type
            self.reverse_mask = reverse_mask

            # Build scale and translate network
            if self.mask_type == MaskType.CHANNEL_WISE:
                in_channels //= 2
            self.st_net = ResNet(in_channels, mid_channels, 2 * in_channels,
                                 num_blocks=num_blocks, kernel_size=3, padding=1,
                                 double_after_norm=(self.mask_type == MaskType.CHECKERBOARD))

            # Learnable scale for s
            self.rescale = nn.utils.weight_norm(Rescale(in_channels))

        def forward(self, x, sldj=None, reverse=True):
            if self.mask_type == MaskType.CHECKERBOARD:
                # Checkerboard mask
                b = checkerboard_mask(x.size(2), x.size(3), self.reverse_mask, device=x.device)
                x_b = x * b
                st = self.st_net(x_b)
                s, t = st.chunk(2, dim=1)
                s = self.rescale(torch.tanh(s))
                s = s * (1 - b)
                t = t * (1 - b)

                # Scale and translate
                if reverse:
                    inv_exp_s = s.mul(-1).exp()
                    if torch.isnan(inv_exp_s).any():
                        raise RuntimeError('Scale factor has NaN entries')
                    x = x * inv_exp_s - t
                else:
                    exp_s = s.exp()
                    if torch.isnan(exp_s).any():
                        raise RuntimeError('Scale factor has NaN entries')
                    x = (x + t) * exp_s

                    # Add log-determinant of the Jacobian
                    sldj += s.view(s.size(0), -1).sum(-1)
            else:
                # Channel-wise mask
                if self.reverse_mask:
                    x_id, x_change = x.chunk(2, dim=1)
                else:
                    x_change, x_id = x.chunk(2, dim=1)

                st = self.st_net(x_id)
                s, t = st.chunk(2, dim=1)
                s = self.rescale(torch.tanh(s))

                # Scale and translate
                if reverse:
                    inv_exp_s = s.mul(-1).exp()
                    if torch.isnan(inv_exp_s).any():
                        raise RuntimeError('Scale factor has NaN entries')
                    x_change = x_change * inv_exp_s - t
                else:
                    exp_s = s.exp()
                    if torch.isnan(exp_s).any():
                        raise RuntimeError('Scale factor has NaN entries')
                    x_change = (x_change + t) * exp_s

                    # Add log-determinant of the Jacobian
                    sldj += s.view(s.size(0), -1).sum(-1)

                if self.reverse_mask:
                    x = torch.cat((x_id, x_change), dim=1)
                else:
                    x = torch.cat((x_change, x_id), dim=1)

            return x, sldj


    class Rescale(nn.Module):
        """Per-channel rescaling. Need a proper `nn.Module` so we can wrap it
        with `torch.nn.utils.weight_norm`.

        Args:
            num_channels (int): Number of channels in the input.
        """
        def __init__(self, num_channels):
            super(Rescale, self).__init__()
            self.weight = nn.Parameter(torch.ones(num_channels, 1, 1))

        def forward(self, x):
            x = self.weight * x
            return x

    class RealNVP(nn.Module):
        """RealNVP Model

        Based on the paper:
        "Density estimation using Real NVP"
        by Laurent Dinh, Jascha Sohl-Dickstein, and Samy Bengio
        (https://arxiv.org/abs/1605.08803).

        Args:
            num_scales (int): Number of scales in the RealNVP model.
            in_channels (int): Number of channels in the input.
            mid_channels (int): Number of channels in the intermediate layers.
            num_blocks (int): Number of residual blocks in the s and t network of
            `Coupling` layers.
        """
        def __init__(self, num_scales=2, in_channels=3, mid_channels=64, num_blocks=8):
            super(RealNVP, self).__init__()
            # Register data_constraint to pre-process images, not learnable
            self.register_buffer('data_constraint', torch.tensor([0.9], dtype=torch.float32))

            self.flows = _RealNVP(0, num_scales, in_channels, mid_channels, num_blocks)

        def forward(self, x, reverse=False):
            sldj = None
            if not reverse:
                # Expect inputs in [0, 1]
                if x.min() < 0 or x.max() > 1:
                    raise ValueError('Expected x in [0, 1], got x with min/max {}/{}'
                                     .format(x.min(), x.max()))

                # De-quantize and convert to logits
                x, sldj = self._pre_process(x)

            x, sldj = self.flows(x, sldj, reverse)

            return x, sldj

        def _pre_process(self, x):
            """Dequantize the input image `x` and convert to logits.

            Args:
                x (torch.Tensor): Input image.

            Returns:
                y (torch.Tensor): Dequantized logits of `x`.

            See Also:
                - Dequantization: https://arxiv.org/abs/1511.01844, Section 3.1
                - Modeling logits: https://arxiv.org/abs/1605.08803, Section 4.1
            """
            y = (x * 255. + torch.rand_like(x)) / 256.
            y = (2 * y - 1) * self.data_constraint
            y = (y + 1) / 2
            y = y.log() - (1. - y).log()

            # Save log-determinant of Jacobian of initial transform
            ldj = F.softplus(y) + F.softplus(-y) \
                - F.softplus((1. - self.data_constraint).log() - self.data_constraint.log())
            sldj = ldj.view(ldj.size(0), -1).sum(-1)

            return y, sldj


    class _RealNVP(nn.Module):
        """Recursive builder for a `RealNVP` model.

        Each `_RealNVPBuilder` corresponds to a single scale in `RealNVP`,
        and the constructor is recursively called to build a full `RealNVP` model.

        Args:
            scale_idx (int): Index of current scale.
            num_scales (int): Number of scales in the RealNVP model.
            in_channels (int): Number of channels in the input.
            mid_channels (int): Number of channels in the intermediate layers.
            num_blocks (int): Number of residual blocks in the s and t network of
                `Coupling` layers.
        """
        def __init__(self, scale_idx, num_scales, in_channels, mid_channels, num_blocks):
            super(_RealNVP, self).__init__()

            self.is_last_block = scale_idx == num_scales - 1

            self.in_couplings = nn.ModuleList([
                CouplingLayer(in_channels, mid_channels, num_blocks, MaskType.CHECKERBOARD, reverse_mask=False),
                CouplingLayer(in_channels, mid_channels, num_blocks, MaskType.CHECKERBOARD, reverse_mask=True),
                CouplingLayer(in_channels, mid_channels, num_blocks, MaskType.CHECKERBOARD, reverse_mask=False)
            ])

            if self.is_last_block:
                self.in_couplings.append(
                    CouplingLayer(in_channels, mid_channels, num_blocks, MaskType.CHECKERBOARD, reverse_mask=True))
            else:
                self.out_couplings = nn.ModuleList([
                    CouplingLayer(4 * in_channels, 2 * mid_channels, num_blocks, MaskType.CHANNEL_WISE, reverse_mask=False),
                    CouplingLayer(4 * in_channels, 2 * mid_channels, num_blocks, MaskType.CHANNEL_WISE, reverse_mask=True),
                    CouplingLayer(4 * in_channels, 2 * mid_channels, num_blocks, MaskType.CHANNEL_WISE, reverse_mask=False)
                ])
                self.next_block = _RealNVP(scale_idx + 1, num_scales, 2 * in_channels, 2 * mid_channels, num_blocks)

        def forward(self, x, sldj, reverse=False):
            if reverse:
                if not self.is_last_block:
                    # Re-squeeze -> split -> next block
                    x = squeeze_2x2(x, reverse=False, alt_order=True)
                    x, x_split = x.chunk(2, dim=1)
                    x, sldj = self.next_block(x, sldj, reverse)
                    x = torch.cat((x, x_split), dim=1)
                    x = squeeze_2x2(x, reverse=True, alt_order=True)

                    # Squeeze -> 3x coupling (channel-wise)
                    x = squeeze_2x2(x, reverse=False)
                    for coupling in reversed(self.out_couplings):
                        x, sldj = coupling(x, sldj, reverse)
                    x = squeeze_2x2(x, reverse=True)

                for coupling in reversed(self.in_couplings):
                    x, sldj = coupling(x, sldj, reverse)
            else:
                for coupling in self.in_couplings:
                    x, sldj = coupling(x, sldj, reverse)

                if not self.is_last_block:
                    # Squeeze -> 3x coupling (channel-wise)
                    x = squeeze_2x2(x, reverse=False)
                    for coupling in self.out_couplings:
                        x, sldj = coupling(x, sldj, reverse)
                    x = squeeze_2x2(x, reverse=True)

                    # Re-squeeze -> split -> next block
                    x = squeeze_2x2(x, reverse=False, alt_order=True)
                    x, x_split = x.chunk(2, dim=1)
                    x, sldj = self.next_block(x, sldj, reverse)
                    x = torch.cat((x, x_split), dim=1)
                    x = squeeze_2x2(x, reverse=True, alt_order=True)

            return x, sldj

    class RealNVPLoss(nn.Module):
        """Get the NLL loss for a RealNVP model.

        Args:
            k (int or float): Number of discrete values in each input dimension.
                E.g., `k` is 256 for natural images.

        See Also:
            Equation (3) in the RealNVP paper: https://arxiv.org/abs/1605.08803
        """
        def __init__(self, k=256):
            super(RealNVPLoss, self).__init__()
            self.k = k

        def forward(self, z, sldj):
            prior_ll = -0.5 * (z ** 2 + np.log(2 * np.pi))
            prior_ll = prior_ll.view(z.size(0), -1).sum(-1) \
                - np.log(self.k) * np.prod(z.size()[1:])
            ll = prior_ll + sldj
            nll = -ll.mean()

            return nll

    return types.SimpleNamespace(**{k: v for k, v in locals().items() if not k.startswith("__")})


def _rnvp_images(n, seed):
    # quantised images in [0, 1] (CIFAR-10's ``ToTensor`` of uint8 pixels), 3 x 8 x 8
    rs = np.random.RandomState(seed)
    return (rs.randint(0, 256, (n, 3, 8, 8)) / 255.).astype(np.float32)


def _rnvp_program(torch, log):
    torch = _SeededSizes(torch, 41)
    R = _rnvp_modules(torch)
    optim = torch.optim
    import argparse
    args = argparse.Namespace(batch_size=4, lr=1e-3, max_grad_norm=1., num_epochs=2, num_samples=2,
                              weight_decay=5e-5)

    # ``train.py``'s ``main``/``train``/``sample``/``test`` at df51ad5 (MIT): CIFAR-10 (3 x 32 x 32)
    # is 8 random 3 x 8 x 8 images for training and 4 for testing, unshuffled, without the random
    # flip; 4/1 instead of 64/8 channels/blocks and one scale instead of two (see the end);
    # tqdm, DataParallel and the image grid left out; ``best_loss`` a local instead of a global
    device = 'cpu'
    start_epoch = 0
    trainloader = [(torch.tensor(_rnvp_images(4, s)), None) for s in (1, 2)]
    testloader = [(torch.tensor(_rnvp_images(4, 3)), None)]
    best_loss = 0

    print('Building model..')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = R.RealNVP(num_scales=1, in_channels=3, mid_channels=4, num_blocks=1)
    # ``torch.nn.utils.weight_norm`` is deprecated in favour of the parametrization
    log("weight_norm warnings", sorted({(w.category.__name__, "weight_norm" in str(w.message))
                                        for w in caught}))
    net = net.to(device)
    init_params(torch, net, 42, scale=0.2)

    loss_fn = R.RealNVPLoss()
    param_groups = R.get_param_groups(net, args.weight_decay, norm_suffix='weight_g', verbose=True)
    # Adam's ``eps`` is 1e-3 instead of 1e-8: the biases of convolutions that feed a batch norm,
    # and ``Rescale``'s weight norm over single entries (``g * v / |v|``), have gradients that
    # are float32 noise (1e-9 to 1e-6), which the default eps turns into steps of ``lr``,
    # different on each side; with 1e-3 they stay noise-sized
    optimizer = optim.Adam(param_groups, lr=args.lr, eps=1e-3)

    def train(epoch, net, trainloader, device, optimizer, loss_fn, max_grad_norm):
        print('\nEpoch: %d' % epoch)
        net.train()
        loss_meter = R.AverageMeter()
        for x, _ in trainloader:
            x = x.to(device)
            optimizer.zero_grad()
            z, sldj = net(x, reverse=False)
            loss = loss_fn(z, sldj)
            loss_meter.update(loss.item(), x.size(0))
            loss.backward()
            R.clip_grad_norm(optimizer, max_grad_norm)
            optimizer.step()
            log("train", [loss_meter.avg, R.bits_per_dim(x, loss_meter.avg), z, sldj])

    def sample(net, batch_size, device):
        z = torch.randn((batch_size, 3, 8, 8), dtype=torch.float32, device=device)
        x, _ = net(z, reverse=True)
        x = torch.sigmoid(x)

        return x

    def test(epoch, net, testloader, device, loss_fn, num_samples):
        nonlocal best_loss
        net.eval()
        loss_meter = R.AverageMeter()
        with torch.no_grad():
            for x, _ in testloader:
                x = x.to(device)
                z, sldj = net(x, reverse=False)
                loss = loss_fn(z, sldj)
                loss_meter.update(loss.item(), x.size(0))
                log("test", [loss_meter.avg, R.bits_per_dim(x, loss_meter.avg)])

        # Save checkpoint
        if loss_meter.avg < best_loss:
            print('Saving...')
            best_loss = loss_meter.avg

        # Save samples and data
        images = sample(net, num_samples, device)
        log("samples", images)

    for epoch in range(start_epoch, start_epoch + args.num_epochs):
        train(epoch, net, trainloader, device, optimizer, loss_fn, args.max_grad_norm)
        test(epoch, net, testloader, device, loss_fn, args.num_samples)
    for n, p in net.named_parameters():
        log(n, p)
        log(n + ".grad", p.grad)
    for n, b in net.named_buffers():
        log(n, b)
    log("groups", [(g['name'], len(g['params']), g['weight_decay']) for g in optimizer.param_groups])
    # the hook's recomputed weights: torch's fused ``_weight_norm`` node for dim 0
    conv = net.flows.in_couplings[0].st_net.in_conv.conv
    log("weight grad_fn", [grad_fn_name(conv.weight), grad_fn_name(net.flows.in_couplings[0].rescale.weight)])

    # the flow inverts: reverse(forward(x)) gives back the logits of x
    with torch.no_grad():
        x = testloader[0][0]
        z, _ = net(x)
        y, _ = net(z, reverse=True)
        log("inverse", y)
    # the squeezes invert, and the pixel range is checked
    t = torch.tensor(np_randn((2, 4, 4, 4), 43))
    for alt in (False, True):
        s = R.squeeze_2x2(t, alt_order=alt)
        log("squeeze", [s, R.squeeze_2x2(s, reverse=True, alt_order=alt)])
    log("mask", R.checkerboard_mask(3, 4, reverse=True))
    # with two scales, ``squeeze_2x2``'s ``permute`` gives a channels-last batch; convolution,
    # batch norm, ``cat``, ``tanh`` and the rescale keep that layout, so the channel-wise
    # coupling's ``s.view(s.size(0), -1)`` of a ``chunk`` of it fails on torch 2.x's CPU (the
    # repository ran on older CUDA builds): the same RuntimeError on both sides
    net2 = init_params(torch, R.RealNVP(num_scales=2, in_channels=3, mid_channels=4, num_blocks=1), 44)
    try:
        net2(x)
    except RuntimeError as e:
        log("two scales", ["RuntimeError", "view size is not compatible" in str(e)])
    try:
        net(x - 1)
    except ValueError as e:
        log("range", str(e).split(',')[0])
    print(R.get_norm_layer('instance')(3), R.get_norm_layer('batch')(3))
    stats = R.BatchNormStats2d(3)
    m, v = stats(t[:, :3], training=True)
    log("bn stats", [m, v, stats.running_mean, stats.running_var])


def test_real_nvp_program():
    run_both(_rnvp_program, rtol=1e-4, atol=1e-5)


def _weight_norm_program(torch, log):
    # real-nvp's weight norms, node by node: before, tracegrad's weight was the composite
    # ``v * (g / ||v||)`` (MulBackward0) where torch's ``_weight_norm`` runs its fused node
    # (WeightNormInterfaceBackward0) for dim 0 or the last dim, and torch._weight_norm /
    # torch._weight_norm_interface did not exist
    nn = torch.nn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dim in (0, 1, 3, -1, None):
            for make in (nn.utils.weight_norm, nn.utils.parametrizations.weight_norm):
                m = init_params(torch, nn.Conv2d(2, 3, 2), 50)
                m = make(m, dim=dim)
                out = m(torch.tensor(np_randn((1, 2, 3, 3), 51)))
                out.pow(2).sum().backward()
                kind = "hook" if make is nn.utils.weight_norm else "parametrization"
                log(f"{kind} dim={dim}", [grad_fn_name(m.weight), m.weight, out]
                    + [p.grad for p in m.parameters()])
    v = torch.tensor(np_randn((3, 4), 52), dtype=torch.float64, requires_grad=True)
    g = torch.tensor(np_randn((3, 1), 53), dtype=torch.float64, requires_grad=True)
    w, norms = torch._weight_norm_interface(v, g, 0)
    log("interface", [w, norms, grad_fn_name(w), norms.requires_grad, grad_fn_name(norms)])
    gw = torch.tensor(np_randn((3, 4), 54), dtype=torch.float64)
    gv, gg = torch.autograd.grad(w, (v, g), gw)
    log("first order", [gv, gg])
    for dt in ("float16", "bfloat16"):
        vh, gh = v.detach().to(getattr(torch, dt)), g.detach().to(getattr(torch, dt))
        wh = torch._weight_norm(vh.requires_grad_(), gh.requires_grad_(), 0)
        log(dt, [grad_fn_name(wh), wh.dtype, torch._weight_norm_interface(vh, gh, 0)[1].dtype])
    log("last dim", grad_fn_name(torch._weight_norm(v, torch.ones(1, 4, dtype=torch.float64), 1)))
    log("whole", grad_fn_name(torch._weight_norm(v, torch.tensor(2., dtype=torch.float64), -1)))
    try:
        torch._weight_norm_interface(v.view(3, 2, 2), g.view(3, 1, 1), 1)
    except RuntimeError:
        log("middle dim", "RuntimeError")


def test_weight_norm_fused_node():
    run_both(_weight_norm_program)


def test_weight_norm_fused_double_backward():
    # NOTE [fused weight norm]: tracegrad's second derivative through the fused node is the
    # composite's; torch 2.13's own (``_weight_norm_differentiable_backward``) is not: its
    # double backward is checked against the composite here, on tracegrad only
    T = tracegrad
    v = T.tensor(np_randn((3, 4), 55), dtype=T.float64, requires_grad=True)
    g = T.tensor(np_randn((3, 1), 56), dtype=T.float64, requires_grad=True)
    gw = T.tensor(np_randn((3, 4), 57), dtype=T.float64)

    def hv(f):
        gv, gg = T.autograd.grad(f(v, g), (v, g), gw, create_graph=True)
        return T.autograd.grad((gv ** 2).sum() + (gg ** 3).sum(), (v, g))

    fused = hv(lambda a, b: T._weight_norm(a, b, 0))
    composite = hv(lambda a, b: a * (b / T.norm_except_dim(a, 2, 0)))
    for x, y in zip(fused, composite):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-10, atol=1e-12)
    assert T.autograd.gradgradcheck(lambda a, b: T._weight_norm(a, b, 0), (v, g))


# ---- the training steps under tracegrad.compile -------------------------------------------------
def _state_of(model):
    params = {n: _np(p)[0] for n, p in model.named_parameters()}
    params.update({"buffer " + n: _np(b)[0] for n, b in model.named_buffers() if b is not None})
    grads = {n: _np(p.grad)[0] for n, p in model.named_parameters() if p.grad is not None}
    return params, grads


def _three(runner):
    torch = get_torch()
    return runner(torch, False), runner(tracegrad, False), runner(tracegrad, True)


def _complex_step_runs(T, compiled):
    C = _complex_modules(T)
    F = T.nn.functional
    model = init_params(T, _complex_net(T, C)(), 7)
    optimizer = T.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(data, target):
        # the README's ``train`` loop body
        data = data.type(T.complex64)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        return loss, output

    if compiled:
        step = T.compile(step)
    out = [_np(*step(d, t)) for d, t in _complex_batches(T, 4)]
    return (out,) + _state_of(model) + (step,)


def test_complex_train_step_compiled():
    ref, eager, comp = _three(_complex_step_runs)
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    st = comp[3].stats
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def _svae_step_runs(T, compiled):
    T = _SeededSizes(T, 6)
    S = _svae_modules(T)
    model = S.SentenceVAE(vocab_size=12, embedding_size=5, rnn_type='gru', hidden_size=6,
                          word_dropout=0.3, embedding_dropout=0.0, latent_size=3, sos_idx=2,
                          eos_idx=3, pad_idx=0, unk_idx=1, max_sequence_length=7)
    init_params(T, model, 21)
    optimizer = T.optim.Adam(model.parameters(), lr=0.01)
    NLL = T.nn.NLLLoss(ignore_index=0, reduction='sum')

    def step(inp, target, length, kl_weight):
        # ``train.py``'s loop body: forward through the packed GRUs, the annealed ELBO, Adam
        batch_size = inp.size(0)
        logp, mean, logv, z = model(inp, length)
        target = target[:, :T.max(length).item()].contiguous().view(-1)
        NLL_loss = NLL(logp.view(-1, logp.size(2)), target)
        KL_loss = -0.5 * T.sum(1 + logv - mean.pow(2) - logv.exp())
        loss = (NLL_loss + kl_weight * KL_loss) / batch_size
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss, logp

    if compiled:
        step = T.compile(step)
    data = _TinyPTB(12, 1)
    out = []
    for i in range(3):
        items = [data[4 * i + j] for j in range(4)]
        inp = T.tensor(np.stack([it['input'] for it in items]))
        tgt = T.tensor(np.stack([it['target'] for it in items]))
        length = T.tensor([it['length'] for it in items])
        out.append(_np(*step(inp, tgt, length, 0.5)))
    return (out,) + _state_of(model) + (step,)


def test_sentence_vae_train_step_compiled():
    ref, eager, comp = _three(_svae_step_runs)
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    st = comp[3].stats
    # ``pack_padded_sequence`` takes the sorted lengths as a Python list (``.data.tolist()``): the
    # step runs eagerly (torch.compile splits the graph there too), with eager's values
    assert [b[0].startswith("tolist()") for b in st["graph_breaks"]] == [True], st
    assert st["traces"] == 0, st


def _former_step_runs(T, compiled, attention_type="relative"):
    Fm = _former_modules(T)
    F = T.nn.functional
    model = init_params(T, Fm.GTransformer(emb=8, heads=2, depth=2, seq_length=6, num_tokens=128,
                                           attention_type=attention_type), 31)
    opt = T.optim.Adam(lr=3e-3, params=model.parameters())
    sch = T.optim.lr_scheduler.LambdaLR(opt, lambda i: min(i / 2, 1.0))

    def step(source, target):
        # ``generate.py``'s loop body: nll of the log-probabilities, clipping, Adam, warmup
        opt.zero_grad()
        output = model(source)
        loss = F.nll_loss(output.transpose(2, 1), target, reduction='mean')
        loss.backward()
        norm = T.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sch.step()
        return loss, norm, output

    if compiled:
        step = T.compile(step)
    train, _, _ = _former_data(T)
    out = []
    for i in range(4):
        starts = [3 * i, 3 * i + 7, 3 * i + 20]
        source = T.cat([train[s:s + 6][None, :] for s in starts], dim=0).to(T.long)
        target = T.cat([train[s + 1:s + 7][None, :] for s in starts], dim=0).to(T.long)
        out.append(_np(*step(source, target)))
    out.append((np.array(sch.get_last_lr()),))
    params, grads = _state_of(model)
    # GPT-2's key bias: see ``_former_go``
    return (out, {n: p for n, p in params.items() if not n.endswith("c_attn.bias")}, grads, step)


@pytest.mark.parametrize("attention_type", ["relative", "gpt2", "alt"])
def test_former_train_step_compiled(attention_type):
    torch = get_torch()
    ref, eager, comp = (_former_step_runs(torch, False, attention_type),
                        _former_step_runs(tracegrad, False, attention_type),
                        _former_step_runs(tracegrad, True, attention_type))
    for r in (ref, eager, comp):
        r[2].pop([n for n in r[2] if n.endswith("c_attn.bias")][0], None) if attention_type == "gpt2" else None
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    st = comp[3].stats
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def _bnn_step_runs(T, compiled, frozen):
    T = SeededTorch(T, 24)
    bnn = _bnn_modules(T)
    nn = T.nn
    model = nn.Sequential(
        bnn.BayesLinear(prior_mu=0, prior_sigma=0.1, in_features=4, out_features=8),
        nn.ReLU(),
        bnn.BayesLinear(prior_mu=0, prior_sigma=0.1, in_features=8, out_features=3),
    )
    init_params(T, model, 28)
    if frozen:
        bnn.freeze(model)
    ce_loss = nn.CrossEntropyLoss()
    kl_loss = bnn.BKLLoss(reduction='mean', last_layer_only=False)
    optimizer = T.optim.Adam(model.parameters(), lr=0.01)
    X, Y = _iris_like()
    x, y = T.from_numpy(X).float(), T.from_numpy(Y).long()

    def step(x, y):
        # the classification demo's loop body
        pre = model(x)
        ce = ce_loss(pre, y)
        kl = kl_loss(model)
        cost = ce + 0.1*kl
        optimizer.zero_grad()
        cost.backward()
        optimizer.step()
        return ce, kl, pre

    if compiled:
        step = T.compile(step)
    out = [_np(*step(x, y)) for _ in range(4)]
    return (out,) + _state_of(model) + (step,)


@pytest.mark.parametrize("frozen", [True, False])
def test_bnn_train_step_compiled(frozen):
    torch = get_torch()
    ref, eager, comp = (_bnn_step_runs(torch, False, frozen), _bnn_step_runs(tracegrad, False, frozen),
                        _bnn_step_runs(tracegrad, True, frozen))
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    st = comp[3].stats
    # ``bayesian_kl_loss``'s ``if last_layer_only or n == 0`` reads its tensor count ``n`` in
    # Python: the step runs eagerly, with eager's values (the numpy draws behind ``randn_like``
    # would have broken it too: they change Python state)
    assert [b[0].startswith("bool()") for b in st["graph_breaks"]] == [True], st


def _bnn_own_rng_runs(compiled):
    # the demo's step without the KL term (its ``n == 0`` is a graph break), the noise drawn by
    # tracegrad's own ``randn_like``: a compiled step draws what eager draws, step after step
    T = tracegrad
    T.manual_seed(3)
    bnn = _bnn_modules(T)
    nn = T.nn
    model = init_params(T, nn.Sequential(bnn.BayesLinear(0, 0.1, 4, 8), nn.ReLU(),
                                         bnn.BayesLinear(0, 0.1, 8, 3)), 28)
    optimizer = T.optim.Adam(model.parameters(), lr=0.01)
    X, Y = _iris_like()
    x, y = T.from_numpy(X).float(), T.from_numpy(Y).long()

    def step(x, y):
        pre = model(x)
        cost = nn.functional.cross_entropy(pre, y)
        optimizer.zero_grad()
        cost.backward()
        optimizer.step()
        return cost, pre

    if compiled:
        step = T.compile(step)
    out = [_np(*step(x, y)) for _ in range(4)]
    return (out,) + _state_of(model) + (step, T.rand(3).numpy())


def test_bnn_own_rng_train_step_compiled():
    eager, comp = _bnn_own_rng_runs(False), _bnn_own_rng_runs(True)
    _same_runs(eager, comp, 1e-5, 1e-6)
    np.testing.assert_array_equal(eager[4], comp[4])   # the generator left in the same state
    st = comp[3].stats
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def _rnvp_step_runs(T, compiled):
    T = _SeededSizes(T, 41)
    R = _rnvp_modules(T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = R.RealNVP(num_scales=1, in_channels=3, mid_channels=4, num_blocks=1)
    init_params(T, net, 42, scale=0.2)
    loss_fn = R.RealNVPLoss()
    optimizer = T.optim.Adam(R.get_param_groups(net, 5e-5, norm_suffix='weight_g'), lr=1e-3, eps=1e-3)

    def step(x):
        # ``train.py``'s ``train`` loop body
        optimizer.zero_grad()
        z, sldj = net(x, reverse=False)
        loss = loss_fn(z, sldj)
        loss.backward()
        R.clip_grad_norm(optimizer, 1.)
        optimizer.step()
        return loss, z, sldj

    if compiled:
        step = T.compile(step)
    out = [_np(*step(T.tensor(_rnvp_images(4, s)))) for s in range(4)]
    return (out,) + _state_of(net) + (step,)


def test_real_nvp_train_step_compiled():
    ref, eager, comp = _three(_rnvp_step_runs)
    _same_runs(ref, eager, 1e-4, 1e-4)
    _same_runs(eager, comp, 1e-5, 1e-6)
    st = comp[3].stats
    # ``RealNVP.forward`` checks ``x.min() < 0 or x.max() > 1`` (and each coupling
    # ``torch.isnan(...).any()``) in Python: the step runs eagerly, with eager's values
    assert [b[0].startswith("bool()") for b in st["graph_breaks"]] == [True], st


def _rnvp_st_net_runs(T, compiled):
    # a coupling's scale-and-translate ResNet alone (weight-normalised convolutions, batch norms,
    # ``x *= 2.`` on a batch norm's output, ``x_skip += skip(x)``), trained on a masked batch
    R = _rnvp_modules(T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = R.ResNet(3, 4, 6, num_blocks=2, kernel_size=3, padding=1, double_after_norm=True)
        rescale = T.nn.utils.weight_norm(R.Rescale(3))
    init_params(T, net, 45, scale=0.3)
    params = list(net.parameters()) + list(rescale.parameters())
    optimizer = T.optim.Adam(params, lr=1e-3, eps=1e-3)
    b = R.checkerboard_mask(8, 8, False)

    def step(x):
        st = net(x * b)
        s, t = st.chunk(2, dim=1)
        s = rescale(T.tanh(s)) * (1 - b)
        t = t * (1 - b)
        y = (x + t) * s.exp()
        loss = (y ** 2).mean() - s.view(s.size(0), -1).sum(-1).mean()
        optimizer.zero_grad()
        loss.backward()
        R.clip_grad_norm(optimizer, 1.)
        optimizer.step()
        return loss, y

    if compiled:
        step = T.compile(step)
    out = [_np(*step(T.tensor(_rnvp_images(4, s)))) for s in range(4)]
    state = _state_of(net)
    return (out, dict(state[0], **{"rescale " + n: _np(p)[0] for n, p in rescale.named_parameters()}),
            state[1], step)


def test_real_nvp_st_net_train_step_compiled():
    ref, eager, comp = _three(_rnvp_st_net_runs)
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    st = comp[3].stats
    assert st["graph_breaks"] == [] and st["traces"] == 1, st
