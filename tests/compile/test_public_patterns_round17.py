"""Round-16 public programs (``tests/api/test_public_programs_round16.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- Blealtan/efficient-kan src/efficient_kan/kan.py: B-spline bases by the Cox-de Boor recursion
  on boolean interval masks against a registered grid buffer, the ``scaled_spline_weight``
  property and the entropy regulariser, inside a compiled Adam step;
- Diego999/pyGAT layers.py + models.py: dense graph attention over ``repeat``/``view`` node
  pairs, ``torch.where`` adjacency masking, heads registered with ``add_module``, the implicit-dim
  ``log_softmax`` and ``nll_loss`` on indexed training nodes, Adam with weight decay;

and compiled the way training scripts compile their models, with an eager loop around them:

- pytorch/examples super_resolution/model.py (``model = torch.compile(model)``): four convolutions
  and ``nn.PixelShuffle``, MSE against the upscaled target, Adam;
- jadore801120/attention-is-all-you-need-pytorch transformer/SubLayers.py (``model.compile()``,
  in place): per-head ``bmm`` attention with ``attn.data.masked_fill_`` of a padding mask, the
  ``Bottle`` softmax mixin, a hand-written LayerNormalization with ``torch.std``, a Conv1d
  position-wise feed-forward;
- pytorch/vision torchvision/models/squeezenet.py (``torch.compile(model)``): Fire modules with
  in-place ReLUs, ``MaxPool2d(ceil_mode=True)``, ``AdaptiveAvgPool2d`` and ``flatten``, SGD.
"""
import math

import numpy as np

import tracegrad

from ._harness import check_compiled, data, labels, np_init


def _no_breaks(run):
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] >= 1, run.step.stats


def _model_traced(run):
    """The compiled module ran as one traced program: no graph-break warning on any call."""
    assert not [w for w in run.warnings if "tracegrad.compile" in w], run.warnings


def _step_program(build, loss_fn, make_batch, opt="sgd", lr=0.05, scale=0.4, wd=0.0):
    """``make(mod, wrap)`` for a compiled training step: ``wrap`` is applied to the whole step
    (forward, loss, ``zero_grad``, ``backward``, ``step``)."""
    def make(mod, wrap):
        model = np_init(build(mod), mod, scale=scale)
        if opt == "adam":
            optim = mod.optim.Adam(model.parameters(), lr=lr, weight_decay=wd)
        else:
            optim = mod.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=wd)

        def step(*batch):
            loss = loss_fn(mod, model, *batch)
            optim.zero_grad()
            loss.backward()
            optim.step()
            return loss
        return wrap(step), {"model": model, "opt": optim}, lambda i: make_batch(mod, i)
    return make


def _compiled_model_program(build, loss_fn, make_batch, lr=0.05, scale=0.4, opt="sgd", in_place=False):
    """``make(mod, wrap)`` for a training script that compiles its model: ``wrap`` is applied to
    the module (``model = torch.compile(model)``, or ``model.compile()`` in place when
    ``in_place``) and the loop around it stays eager."""
    def make(mod, wrap):
        model = np_init(build(mod), mod, scale=scale)
        if in_place:
            probe = (lambda: None)
            cmodel = model
            if wrap(probe) is not probe:      # the compiled run: Module.compile() in place
                model.compile()
        else:
            cmodel = wrap(model)
        if opt == "adam":
            optim = mod.optim.Adam(model.parameters(), lr=lr)
        else:
            optim = mod.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

        def step(*batch):
            out = cmodel(*batch[:-1])
            loss = loss_fn(mod, out, batch[-1])
            optim.zero_grad()
            loss.backward()
            optim.step()
            return loss, out
        return step, {"model": model, "opt": optim}, lambda i: make_batch(mod, i)
    return make


# ---- Blealtan/efficient-kan src/efficient_kan/kan.py ------------------------------------------
def _kan(mod):
    F = mod.nn.functional

    class KANLinear(mod.nn.Module):   # reset_parameters' random draws left to np_init
        def __init__(self, in_features, out_features, grid_size=5, spline_order=3,
                     enable_standalone_scale_spline=True, base_activation=mod.nn.SiLU,
                     grid_range=[-1, 1]):
            super(KANLinear, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.grid_size = grid_size
            self.spline_order = spline_order

            h = (grid_range[1] - grid_range[0]) / grid_size
            grid = (
                (
                    mod.arange(-spline_order, grid_size + spline_order + 1) * h
                    + grid_range[0]
                )
                .expand(in_features, -1)
                .contiguous()
            )
            self.register_buffer("grid", grid)

            self.base_weight = mod.nn.Parameter(mod.Tensor(out_features, in_features))
            self.spline_weight = mod.nn.Parameter(
                mod.Tensor(out_features, in_features, grid_size + spline_order)
            )
            if enable_standalone_scale_spline:
                self.spline_scaler = mod.nn.Parameter(
                    mod.Tensor(out_features, in_features)
                )
            self.enable_standalone_scale_spline = enable_standalone_scale_spline
            self.base_activation = base_activation()

        def b_splines(self, x):
            assert x.dim() == 2 and x.size(1) == self.in_features

            grid = self.grid  # (in_features, grid_size + 2 * spline_order + 1)
            x = x.unsqueeze(-1)  # rearrange(x, 'b f -> b f 1')
            bases = (x >= grid[:, :-1]) & (x < grid[:, 1:])
            bases = bases.to(x.dtype)
            for k in range(1, self.spline_order + 1):
                left = (x - grid[:, :-(k + 1)]) / (grid[:, k:-1] - grid[:, :-(k + 1)])
                right = (grid[:, k + 1:] - x) / (grid[:, k + 1:] - grid[:, 1:(-k)])
                bases = left * bases[:, :, :-1] + right * bases[:, :, 1:]

            assert bases.size() == (
                x.size(0),
                self.in_features,
                self.grid_size + self.spline_order,
            )
            return bases.contiguous()

        @property
        def scaled_spline_weight(self):
            return self.spline_weight * (
                self.spline_scaler.unsqueeze(-1)
                if self.enable_standalone_scale_spline
                else 1.0
            )

        def forward(self, x):
            assert x.size(-1) == self.in_features
            original_shape = x.shape
            x = x.view(-1, self.in_features)

            base_output = F.linear(self.base_activation(x), self.base_weight)
            spline_output = F.linear(
                self.b_splines(x).view(x.size(0), -1),
                self.scaled_spline_weight.view(self.out_features, -1),
            )
            output = base_output + spline_output

            output = output.view(*original_shape[:-1], self.out_features)
            return output

        def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
            l1_fake = self.spline_weight.abs().mean(-1)
            regularization_loss_activation = l1_fake.sum()
            p = l1_fake / regularization_loss_activation
            regularization_loss_entropy = -mod.sum(p * p.log())
            return (
                regularize_activation * regularization_loss_activation
                + regularize_entropy * regularization_loss_entropy
            )

    class KAN(mod.nn.Module):
        def __init__(self, layers_hidden):
            super(KAN, self).__init__()
            self.layers = mod.nn.ModuleList()
            for in_features, out_features in zip(layers_hidden, layers_hidden[1:]):
                self.layers.append(KANLinear(in_features, out_features))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

        def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
            return sum(
                layer.regularization_loss(regularize_activation, regularize_entropy)
                for layer in self.layers
            )

    return KAN([3, 2])


def test_efficient_kan_step():
    make = _step_program(
        _kan, lambda mod, model, x, y: (mod.nn.functional.mse_loss(model(x), y)
                                        + 1e-3 * model.regularization_loss()),
        lambda mod, i: (data(mod, i, 8, 3) * 0.6, data(mod, i, 8, 2, seed=50)), opt="adam", lr=0.01, scale=0.5)
    _no_breaks(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- Diego999/pyGAT layers.py + models.py ----------------------------------------------------
def _gat(mod):
    nn, F = mod.nn, mod.nn.functional

    class GraphAttentionLayer(nn.Module):   # the xavier draws left to np_init
        def __init__(self, in_features, out_features, dropout, alpha, concat=True):
            super(GraphAttentionLayer, self).__init__()
            self.dropout = dropout
            self.in_features = in_features
            self.out_features = out_features
            self.alpha = alpha
            self.concat = concat

            self.W = nn.Parameter(mod.Tensor(in_features, out_features).type(mod.FloatTensor), requires_grad=True)
            self.a = nn.Parameter(mod.Tensor(2*out_features, 1).type(mod.FloatTensor), requires_grad=True)

            self.leakyrelu = nn.LeakyReLU(self.alpha)

        def forward(self, input, adj):
            h = mod.mm(input, self.W)
            N = h.size()[0]

            a_input = mod.cat([h.repeat(1, N).view(N * N, -1), h.repeat(N, 1)], dim=1).view(N, -1, 2 * self.out_features)
            e = self.leakyrelu(mod.matmul(a_input, self.a).squeeze(2))

            zero_vec = -9e15*mod.ones_like(e)
            attention = mod.where(adj > 0, e, zero_vec)
            attention = F.softmax(attention, dim=1)
            attention = F.dropout(attention, self.dropout, training=self.training)
            h_prime = mod.matmul(attention, h)

            if self.concat:
                return F.elu(h_prime)
            else:
                return h_prime

    class GAT(nn.Module):
        def __init__(self, nfeat, nhid, nclass, dropout, alpha, nheads):
            super(GAT, self).__init__()
            self.dropout = dropout

            self.attentions = [GraphAttentionLayer(nfeat, nhid, dropout=dropout, alpha=alpha, concat=True) for _ in range(nheads)]
            for i, attention in enumerate(self.attentions):
                self.add_module('attention_{}'.format(i), attention)

            self.out_att = GraphAttentionLayer(nhid * nheads, nclass, dropout=dropout, alpha=alpha, concat=False)

        def forward(self, x, adj):
            x = F.dropout(x, self.dropout, training=self.training)
            x = mod.cat([att(x, adj) for att in self.attentions], dim=1)
            x = F.dropout(x, self.dropout, training=self.training)
            x = F.elu(self.out_att(x, adj))
            return F.log_softmax(x)

    return GAT(nfeat=5, nhid=3, nclass=3, dropout=0.0, alpha=0.2, nheads=2)


def _gat_batch(mod, i):
    rs = np.random.RandomState(10 + i)
    adj = (rs.rand(6, 6) > 0.5).astype(np.float32)
    adj = np.maximum(adj, adj.T) + np.eye(6, dtype=np.float32)
    return data(mod, i, 6, 5), mod.tensor(adj), labels(mod, i, 6, 3)


def test_pygat_step():
    idx_train = list(range(4))
    make = _step_program(
        _gat, lambda mod, model, x, adj, y: mod.nn.functional.nll_loss(
            model(x, adj)[mod.LongTensor(idx_train)], y[mod.LongTensor(idx_train)]),
        _gat_batch, opt="adam", lr=0.005, wd=5e-4, scale=0.5)
    run = check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    # ``F.log_softmax(x)`` without dim warns on every call; under the harness's 'always' filter
    # every run of the one program gives it again (NOTE [warnings in a trace])
    assert not run.step.stats["graph_breaks"] and run.step.stats["traces"] == 1, run.step.stats
    assert sum("log_softmax" in w for w in run.warnings) == 3, run.warnings


# ---- pytorch/examples super_resolution/model.py (model = torch.compile(model)) ----------------
def _super_resolution(mod):
    nn = mod.nn

    class Net(nn.Module):   # _initialize_weights' orthogonal draws left to np_init
        def __init__(self, upscale_factor):
            super(Net, self).__init__()

            self.relu = nn.ReLU()
            self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
            self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
            self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
            self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
            self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        def forward(self, x):
            x = self.relu(self.conv1(x))
            x = self.relu(self.conv2(x))
            x = self.relu(self.conv3(x))
            x = self.pixel_shuffle(self.conv4(x))
            return x

    return Net(upscale_factor=2)


def test_super_resolution_compiled_model():
    make = _compiled_model_program(
        _super_resolution, lambda mod, out, y: mod.nn.MSELoss()(out, y),
        lambda mod, i: (data(mod, i, 2, 1, 6, 6), data(mod, i, 2, 1, 12, 12, seed=60).abs()),
        scale=0.1, opt="adam", lr=0.01)
    # rtol 3e-4: torch's CPU convolutions round by CPU (2.4e-4 apart on a CPU without AVX-512)
    _model_traced(check_compiled(make, calls=3, torch_too=True, rtol=3e-4, atol=1e-5))


# ---- jadore801120/attention-is-all-you-need-pytorch transformer/{Modules,SubLayers,Layers}.py,
# the early version (model.compile(), in place) ------------------------------------------------
def _aiayn_encoder_layer(mod):
    nn, init = mod.nn, mod.nn.init

    class Linear(nn.Module):
        ''' Simple Linear layer with xavier init '''
        def __init__(self, d_in, d_out, bias=True):
            super(Linear, self).__init__()
            self.linear = nn.Linear(d_in, d_out, bias=bias)
            init.xavier_normal(self.linear.weight)

        def forward(self, x):
            return self.linear(x)

    class Bottle(nn.Module):
        ''' Perform the reshape routine before and after an operation '''

        def forward(self, input):
            if len(input.size()) <= 2:
                return super(Bottle, self).forward(input)
            size = input.size()[:2]
            out = super(Bottle, self).forward(input.view(size[0]*size[1], -1))
            return out.view(size[0], size[1], -1)

    class BottleSoftmax(Bottle, nn.Softmax):
        ''' Perform the reshape routine before and after a softmax operation'''
        pass

    class LayerNormalization(nn.Module):
        ''' Layer normalization module '''

        def __init__(self, d_hid, eps=1e-3):
            super(LayerNormalization, self).__init__()

            self.eps = eps
            self.a_2 = nn.Parameter(mod.ones(d_hid), requires_grad=True)
            self.b_2 = nn.Parameter(mod.zeros(d_hid), requires_grad=True)

        def forward(self, z):
            if z.size(1) == 1:
                return z

            mu = mod.mean(z, dim=1)
            sigma = mod.std(z, dim=1)
            ln_out = (z - mu.expand_as(z)) / (sigma.expand_as(z) + self.eps)
            ln_out = ln_out * self.a_2.expand_as(ln_out) + self.b_2.expand_as(ln_out)

            return ln_out

    class ScaledDotProductAttention(nn.Module):
        ''' Scaled Dot-Product Attention '''

        def __init__(self, d_model, attn_dropout=0.1):
            super(ScaledDotProductAttention, self).__init__()
            self.temper = np.power(d_model, 0.5)
            self.dropout = nn.Dropout(attn_dropout)
            self.softmax = BottleSoftmax(dim=-1)   # the early version's BottleSoftmax() warns (implicit dim)

        def forward(self, q, k, v, attn_mask=None):

            attn = mod.bmm(q, k.transpose(1, 2)) / self.temper

            if attn_mask is not None:

                assert attn_mask.size() == attn.size(), \
                        'Attention mask shape {} mismatch ' \
                        'with Attention logit tensor shape ' \
                        '{}.'.format(attn_mask.size(), attn.size())

                attn.data.masked_fill_(attn_mask, -float('inf'))

            attn = self.softmax(attn)
            attn = self.dropout(attn)
            output = mod.bmm(attn, v)

            return output, attn

    class MultiHeadAttention(nn.Module):
        ''' Multi-Head Attention module '''

        def __init__(self, n_head, d_model, d_k, d_v, dropout=0.1):
            super(MultiHeadAttention, self).__init__()

            self.n_head = n_head
            self.d_k = d_k
            self.d_v = d_v

            self.w_qs = nn.Parameter(mod.FloatTensor(n_head, d_model, d_k))
            self.w_ks = nn.Parameter(mod.FloatTensor(n_head, d_model, d_k))
            self.w_vs = nn.Parameter(mod.FloatTensor(n_head, d_model, d_v))

            self.attention = ScaledDotProductAttention(d_model, attn_dropout=dropout)
            self.layer_norm = LayerNormalization(d_model)
            self.proj = Linear(n_head*d_v, d_model)

            self.dropout = nn.Dropout(dropout)

            init.xavier_normal(self.w_qs)
            init.xavier_normal(self.w_ks)
            init.xavier_normal(self.w_vs)

        def forward(self, q, k, v, attn_mask=None):

            d_k, d_v = self.d_k, self.d_v
            n_head = self.n_head

            residual = q

            mb_size, len_q, d_model = q.size()
            mb_size, len_k, d_model = k.size()
            mb_size, len_v, d_model = v.size()

            q_s = q.repeat(n_head, 1, 1).view(n_head, -1, d_model)
            k_s = k.repeat(n_head, 1, 1).view(n_head, -1, d_model)
            v_s = v.repeat(n_head, 1, 1).view(n_head, -1, d_model)

            q_s = mod.bmm(q_s, self.w_qs).view(-1, len_q, d_k)
            k_s = mod.bmm(k_s, self.w_ks).view(-1, len_k, d_k)
            v_s = mod.bmm(v_s, self.w_vs).view(-1, len_v, d_v)

            outputs, attns = self.attention(q_s, k_s, v_s, attn_mask=attn_mask.repeat(n_head, 1, 1))

            outputs = outputs.view(mb_size, len_q, -1)

            outputs = self.proj(outputs.view(-1, outputs.size(2))).view_as(residual)
            outputs = self.dropout(outputs)

            return self.layer_norm(outputs + residual), attns

    class PositionwiseFeedForward(nn.Module):
        ''' A two-feed-forward-layer module '''

        def __init__(self, d_hid, d_inner_hid, dropout=0.1):
            super(PositionwiseFeedForward, self).__init__()
            self.w_1 = nn.Conv1d(d_hid, d_inner_hid, 1)
            self.w_2 = nn.Conv1d(d_inner_hid, d_hid, 1)
            self.layer_norm = LayerNormalization(d_hid)
            self.dropout = nn.Dropout(dropout)
            self.relu = nn.ReLU()

        def forward(self, x):
            residual = x
            output = self.relu(self.w_1(x.transpose(1, 2)))
            output = self.w_2(output).transpose(2, 1)
            output = self.dropout(output)
            return self.layer_norm(output + residual)

    class EncoderLayer(nn.Module):
        ''' Compose with two layers '''

        def __init__(self, d_model, d_inner_hid, n_head, d_k, d_v, dropout=0.1):
            super(EncoderLayer, self).__init__()
            self.slf_attn = MultiHeadAttention(
                n_head, d_model, d_k, d_v, dropout=dropout)
            self.pos_ffn = PositionwiseFeedForward(d_model, d_inner_hid, dropout=dropout)

        def forward(self, enc_input, slf_attn_mask=None):
            enc_output, enc_slf_attn = self.slf_attn(
                enc_input, enc_input, enc_input, attn_mask=slf_attn_mask)
            enc_output = self.pos_ffn(enc_output)
            return enc_output, enc_slf_attn

    return EncoderLayer(8, 16, 2, 4, 4, dropout=0.0)


def _aiayn_batch(mod, i):
    seq = mod.LongTensor([[3, 5, 0], [2, 0, 0], [1, 4, 6]])
    mask = seq.data.eq(0).unsqueeze(1).expand(3, 3, 3)
    return data(mod, i, 3, 3, 8), mask, data(mod, i, 3, 3, 8, seed=70)


def test_aiayn_encoder_layer_module_compile():
    make = _compiled_model_program(
        _aiayn_encoder_layer, lambda mod, out, y: ((out[0] - y) ** 2).mean() + out[1].pow(2).mean(),
        _aiayn_batch, scale=0.5, lr=0.02, in_place=True)   # SGD: Adam's first step flips near-zero grads' rounding
    # the hand-written LayerNormalization divides by a 3-position std: gradients of ~4 carry
    # float32 rounding of a few 1e-5 into the momentum buffers, whose entries reach 8 (1.6e-4 on
    # a small entry where AVX-512 kernels round unlike AVX2's)
    _model_traced(check_compiled(make, calls=3, torch_too=True, rtol=1e-3, atol=5e-4))


# ---- karpathy/nn-zero-to-hero lectures/makemore/makemore_part5_cnn1.ipynb ----------------------
# Hand-written layers on plain tensors (no nn.Module): the compiled step reads and rebinds
# BatchNorm1d's ``running_mean``/``running_var`` Python attributes under ``torch.no_grad()``,
# stores ``self.out`` on every layer, clears ``p.grad = None`` and updates ``p.data += -lr *
# p.grad`` by hand.
def _makemore_wavenet(mod):
    class Linear:

        def __init__(self, fan_in, fan_out, bias=True):
            self.weight = mod.tensor(np.random.RandomState(fan_in * 7 + fan_out).randn(fan_in, fan_out).astype("float32")) / fan_in**0.5
            self.bias = mod.zeros(fan_out) if bias else None

        def __call__(self, x):
            self.out = x @ self.weight
            if self.bias is not None:
                self.out += self.bias
            return self.out

        def parameters(self):
            return [self.weight] + ([] if self.bias is None else [self.bias])

    class BatchNorm1d:

        def __init__(self, dim, eps=1e-5, momentum=0.1):
            self.eps = eps
            self.momentum = momentum
            self.training = True
            self.gamma = mod.ones(dim)
            self.beta = mod.zeros(dim)
            self.running_mean = mod.zeros(dim)
            self.running_var = mod.ones(dim)

        def __call__(self, x):
            if self.training:
                if x.ndim == 2:
                    dim = 0
                elif x.ndim == 3:
                    dim = (0, 1)
                xmean = x.mean(dim, keepdim=True)  # batch mean
                xvar = x.var(dim, keepdim=True)  # batch variance
            else:
                xmean = self.running_mean
                xvar = self.running_var
            xhat = (x - xmean) / mod.sqrt(xvar + self.eps)  # normalize to unit variance
            self.out = self.gamma * xhat + self.beta
            if self.training:
                with mod.no_grad():
                    self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
                    self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
            return self.out

        def parameters(self):
            return [self.gamma, self.beta]

    class Tanh:
        def __call__(self, x):
            self.out = mod.tanh(x)
            return self.out

        def parameters(self):
            return []

    class Embedding:

        def __init__(self, num_embeddings, embedding_dim):
            self.weight = mod.tensor(np.random.RandomState(5).randn(num_embeddings, embedding_dim).astype("float32"))

        def __call__(self, IX):
            self.out = self.weight[IX]
            return self.out

        def parameters(self):
            return [self.weight]

    class FlattenConsecutive:

        def __init__(self, n):
            self.n = n

        def __call__(self, x):
            B, T, C = x.shape
            x = x.view(B, T//self.n, C*self.n)
            if x.shape[1] == 1:
                x = x.squeeze(1)
            self.out = x
            return self.out

        def parameters(self):
            return []

    class Sequential:

        def __init__(self, layers):
            self.layers = layers

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            self.out = x
            return self.out

        def parameters(self):
            return [p for layer in self.layers for p in layer.parameters()]

    n_embd, n_hidden, vocab_size = 4, 8, 11
    return Sequential([
        Embedding(vocab_size, n_embd),
        FlattenConsecutive(2), Linear(n_embd * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
        FlattenConsecutive(2), Linear(n_hidden*2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
        Linear(n_hidden, vocab_size),
    ])


def test_makemore_wavenet_hand_sgd_step():
    def make(mod, wrap):
        model = _makemore_wavenet(mod)
        with mod.no_grad():
            model.layers[-1].weight *= 0.1  # last layer make less confident
        parameters = model.parameters()
        for p in parameters:
            p.requires_grad = True
        lossi = []

        def step(Xb, Yb):
            logits = model(Xb)
            loss = mod.nn.functional.cross_entropy(logits, Yb)
            for p in parameters:
                p.grad = None
            loss.backward()
            lr = 0.1
            for p in parameters:
                p.data += -lr * p.grad
            lossi.append(loss.log10().item())
            return loss
        bns = [layer for layer in model.layers if hasattr(layer, "running_mean")]
        state = {"params": parameters, "running": lambda: None, "lossi": lossi, "bns": bns}
        return wrap(step), state, lambda i: (labels(mod, i, 6, 11).view(6, 1).repeat(1, 4) % 11, labels(mod, i, 6, 11, seed=80))

    def running(state, i):   # the rebound running statistics, observed after every call
        state["running"] = [(bn.running_mean.clone(), bn.running_var.clone()) for bn in state["bns"]]
    run = check_compiled(make, calls=3, between=running, torch_too=True, rtol=1e-4, atol=1e-5)
    # ``lossi.append(loss.log10().item())`` is no break (NOTE [Python appends]); the layers'
    # ``self.out`` (a view bound to an attribute) is: the abandoned trace must put back the
    # layers' rebound attributes (NOTE [nested objects] in pystate.py) before the eager rerun
    whys = [why for why, _ in run.step.stats["graph_breaks"]]
    assert whys and all("'out'" in why and "'lossi'" not in why for why in whys), run.step.stats
