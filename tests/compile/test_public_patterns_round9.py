"""Round-9 public programs (``tests/api/test_public_programs_round9.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- microsoft/LoRA loralib/layers.py: a frozen Linear with trainable ``lora_A``/``lora_B`` (the
  ``result += x @ A.T @ B.T * scaling`` update), mark_only_lora_as_trainable, AdamW;
- sthalles/SimCLR simclr.py: info_nce_loss (boolean-mask selections of the similarity matrix,
  ``[~mask].view``: data-dependent shapes, a graph break), CrossEntropyLoss, Adam with weight
  decay, CosineAnnealingLR between calls;
- locuslab/TCN tcn.py: weight_norm'd dilated Conv1d blocks with Chomp1d, Adam, clip_grad_norm_;
- ndrplz/ConvLSTM_pytorch convlstm.py: a ConvLSTM unrolled over time (split gates, stack);
- Jongchan/attention-module cbam.py: CBAM's avg/max/lp/lse channel gate and spatial gate with
  BatchNorm(momentum=0.01), SGD with momentum.
"""
import math

import pytest

import tracegrad

from ._harness import check_compiled, data, labels, np_init


def _no_breaks(run):
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] >= 1, run.step.stats


# ---- microsoft/LoRA loralib/layers.py Linear --------------------------------------------------
def lora_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional

    class Linear(nn.Linear):
        def __init__(self, in_features, out_features, r=0, lora_alpha=1, **kwargs):
            nn.Linear.__init__(self, in_features, out_features, **kwargs)
            self.r, self.lora_alpha, self.merged = r, lora_alpha, False
            self.lora_dropout = lambda x: x
            if r > 0:
                self.lora_A = nn.Parameter(self.weight.new_zeros((r, in_features)))
                self.lora_B = nn.Parameter(self.weight.new_zeros((out_features, r)))
                self.scaling = self.lora_alpha / self.r
                self.weight.requires_grad = False

        def forward(self, x):
            if self.r > 0 and not self.merged:
                result = F.linear(x, self.weight, bias=self.bias)
                result += (self.lora_dropout(x) @ self.lora_A.transpose(0, 1) @ self.lora_B.transpose(0, 1)) * self.scaling
                return result
            return F.linear(x, self.weight, bias=self.bias)

    model = np_init(nn.Sequential(Linear(5, 6, r=2, lora_alpha=4), nn.ReLU(), Linear(6, 3, r=2, lora_alpha=4)), mod)
    for n, p in model.named_parameters():
        if 'lora_' not in n:
            p.requires_grad = False
    opt = mod.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.05)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 4, 5), labels(mod, i, 4, 3))


def test_lora_linear_adamw():
    _no_breaks(check_compiled(lora_program, calls=2, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- sthalles/SimCLR simclr.py info_nce_loss ---------------------------------------------------
def simclr_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional
    batch_size, n_views, temperature = 3, 2, 0.5
    model = np_init(nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 5)), mod)
    opt = mod.optim.Adam(model.parameters(), 0.01, weight_decay=1e-4)
    sched = mod.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0)
    criterion = nn.CrossEntropyLoss()

    def info_nce_loss(features):
        labels = mod.cat([mod.arange(batch_size) for i in range(n_views)], dim=0)
        labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
        features = F.normalize(features, dim=1)
        similarity_matrix = mod.matmul(features, features.T)
        mask = mod.eye(labels.shape[0], dtype=mod.bool)
        labels = labels[~mask].view(labels.shape[0], -1)
        similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
        positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
        negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
        logits = mod.cat([positives, negatives], dim=1)
        labels = mod.zeros(logits.shape[0], dtype=mod.long)
        logits = logits / temperature
        return logits, labels

    def step(view1, view2):
        images = mod.cat([view1, view2], dim=0)
        features = model(images)
        logits, labels = info_nce_loss(features)
        loss = criterion(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss, logits
    return wrap(step), {"model": model, "opt": opt, "sched": sched}, \
        lambda i: (data(mod, i, 3, 4), data(mod, i, 3, 4, seed=300))


def test_simclr_info_nce_adam_cosine():
    # the boolean-mask selections have data-dependent shapes: a graph break (as torch.compile
    # without capture_dynamic_output_shape_ops), after which the step still matches eager/torch
    run = check_compiled(simclr_program, calls=2, between=lambda s, i: s["sched"].step(),
                         torch_too=True, rtol=1e-4, atol=1e-5)
    assert [b for b in run.step.stats["graph_breaks"] if "nonzero()" in b[0]], run.step.stats


# ---- locuslab/TCN tcn.py -------------------------------------------------------------------------
def tcn_program(mod, wrap):
    import warnings
    nn, F = mod.nn, mod.nn.functional

    class Chomp1d(nn.Module):
        def __init__(self, chomp_size):
            super().__init__()
            self.chomp_size = chomp_size

        def forward(self, x):
            return x[:, :, :-self.chomp_size].contiguous()

    class TemporalBlock(nn.Module):
        def __init__(self, n_inputs, n_outputs, kernel_size, dilation, padding):
            super().__init__()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.conv1 = mod.nn.utils.weight_norm(nn.Conv1d(n_inputs, n_outputs, kernel_size, padding=padding,
                                                                dilation=dilation))
            self.net = nn.Sequential(self.conv1, Chomp1d(padding), nn.ReLU())
            self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
            self.relu = nn.ReLU()

        def forward(self, x):
            out = self.net(x)
            res = x if self.downsample is None else self.downsample(x)
            return self.relu(out + res)

    class TCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.tcn = nn.Sequential(*[TemporalBlock(2 if i == 0 else 3, 3, 2, 2 ** i, 2 ** i) for i in range(2)])
            self.linear = nn.Linear(3, 1)

        def forward(self, x):
            return self.linear(self.tcn(x)[:, :, -1])

    model = np_init(TCN(), mod)
    opt = mod.optim.Adam(model.parameters(), lr=4e-3)

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        norm = mod.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        return loss, norm
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 3, 2, 8), data(mod, i, 3, 1, seed=300))


def test_tcn_weight_norm_dilated_conv1d():
    _no_breaks(check_compiled(tcn_program, calls=2, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- ndrplz/ConvLSTM_pytorch convlstm.py -----------------------------------------------------------
def convlstm_program(mod, wrap):
    nn = mod.nn

    class ConvLSTMCell(nn.Module):
        def __init__(self, input_dim, hidden_dim, kernel_size):
            super().__init__()
            self.hidden_dim = hidden_dim
            self.conv = nn.Conv2d(input_dim + hidden_dim, 4 * hidden_dim, kernel_size,
                                  padding=(kernel_size[0] // 2, kernel_size[1] // 2))

        def forward(self, input_tensor, cur_state):
            h_cur, c_cur = cur_state
            combined_conv = self.conv(mod.cat([input_tensor, h_cur], dim=1))
            cc_i, cc_f, cc_o, cc_g = mod.split(combined_conv, self.hidden_dim, dim=1)
            c_next = mod.sigmoid(cc_f) * c_cur + mod.sigmoid(cc_i) * mod.tanh(cc_g)
            return mod.sigmoid(cc_o) * mod.tanh(c_next), c_next

    cell = np_init(ConvLSTMCell(2, 3, (3, 3)), mod)
    opt = mod.optim.SGD(cell.parameters(), lr=0.1)

    def step(x, target):
        b, t, _, hh, ww = x.size()
        h = mod.zeros(b, 3, hh, ww, device=cell.conv.weight.device)
        c = mod.zeros(b, 3, hh, ww, device=cell.conv.weight.device)
        outs = []
        for s in range(t):
            h, c = cell(x[:, s, :, :, :], [h, c])
            outs.append(h)
        out = mod.stack(outs, dim=1)
        loss = nn.functional.mse_loss(out, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"cell": cell, "opt": opt}, \
        lambda i: (data(mod, i, 2, 3, 2, 4, 4), data(mod, i, 2, 3, 3, 4, 4, seed=300))


def test_convlstm_unrolled_sgd():
    _no_breaks(check_compiled(convlstm_program, calls=2, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- Jongchan/attention-module cbam.py ---------------------------------------------------------------
def cbam_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional

    class ChannelGate(nn.Module):
        def __init__(self, c, r, pool_types):
            super().__init__()
            self.mlp = nn.Sequential(nn.Flatten(), nn.Linear(c, c // r), nn.ReLU(), nn.Linear(c // r, c))
            self.pool_types = pool_types

        def forward(self, x):
            channel_att_sum = None
            for pool_type in self.pool_types:
                k = (x.size(2), x.size(3))
                if pool_type == 'avg':
                    raw = self.mlp(F.avg_pool2d(x, k, stride=k))
                elif pool_type == 'max':
                    raw = self.mlp(F.max_pool2d(x, k, stride=k))
                elif pool_type == 'lp':
                    raw = self.mlp(F.lp_pool2d(x, 2, k, stride=k))
                else:
                    flat = x.view(x.size(0), x.size(1), -1)
                    s, _ = mod.max(flat, dim=2, keepdim=True)
                    raw = self.mlp(s + (flat - s).exp().sum(dim=2, keepdim=True).log())
                channel_att_sum = raw if channel_att_sum is None else channel_att_sum + raw
            return x * F.sigmoid(channel_att_sum).unsqueeze(2).unsqueeze(3).expand_as(x)

    class SpatialGate(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 1, 7, padding=3, bias=False)
            self.bn = nn.BatchNorm2d(1, eps=1e-5, momentum=0.01)

        def forward(self, x):
            compress = mod.cat((mod.max(x, 1)[0].unsqueeze(1), mod.mean(x, 1).unsqueeze(1)), dim=1)
            return x * F.sigmoid(self.bn(self.conv(compress)))

    net = np_init(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), ChannelGate(8, 2, ['avg', 'max', 'lp', 'lse']),
                                SpatialGate(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3)), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"net": net, "opt": opt}, lambda i: (data(mod, i, 2, 3, 5, 6), labels(mod, i, 2, 3))


def test_cbam_gates_batchnorm_sgd():
    _no_breaks(check_compiled(cbam_program, calls=2, torch_too=True, rtol=1e-4, atol=1e-5))
