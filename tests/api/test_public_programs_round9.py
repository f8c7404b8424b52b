"""A ninth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round8.py``: parameter-efficient layers (LoRA), sparse mixtures of
experts, contrastive losses, autoregressive masked convolutions, diffusion schedules, spectral
normalisation by hand, convolutional recurrences, dilated causal convolutions, U-Nets, attention
modules, capsules and the annotated Transformer. Each keeps its program's code at tiny sizes
(fewer channels, steps and samples), with numpy-seeded data and parameters (``init_params``/
``randn``) in place of downloads and random streams (sampling, ``randint``, ``randn_like``,
dropout masks); where a program's own code had to change, the comment above its test says how
and why. Where a program's old idiom now raises in torch, the test checks that tracegrad raises
the same class.
"""
import math

import numpy as np
import pytest

from parity import init_params, randn, run_both

torch = pytest.importorskip("torch")


# microsoft/LoRA loralib/layers.py (LoRALayer; Linear, MergedLinear, Embedding and Conv2d
# subclasses whose train(mode) merges ``B @ A * scaling`` into ``weight.data`` and unmerges it;
# MergedLinear's boolean ``lora_ind[enable_lora, :] = True`` and zero_pad through a grouped
# conv1d) and loralib/utils.py (mark_only_lora_as_trainable, lora_state_dict); the
# kaiming_uniform_/normal_ draws replaced by numpy-seeded parameters after construction
def test_microsoft_lora_layers():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        from typing import List

        class LoRALayer():
            def __init__(self, r: int, lora_alpha: int, lora_dropout: float, merge_weights: bool):
                self.r = r
                self.lora_alpha = lora_alpha
                if lora_dropout > 0.:
                    self.lora_dropout = nn.Dropout(p=lora_dropout)
                else:
                    self.lora_dropout = lambda x: x
                self.merged = False
                self.merge_weights = merge_weights

        class Embedding(nn.Embedding, LoRALayer):
            def __init__(self, num_embeddings: int, embedding_dim: int, r: int = 0, lora_alpha: int = 1,
                         merge_weights: bool = True, **kwargs):
                nn.Embedding.__init__(self, num_embeddings, embedding_dim, **kwargs)
                LoRALayer.__init__(self, r=r, lora_alpha=lora_alpha, lora_dropout=0,
                                   merge_weights=merge_weights)
                if r > 0:
                    self.lora_A = nn.Parameter(self.weight.new_zeros((r, num_embeddings)))
                    self.lora_B = nn.Parameter(self.weight.new_zeros((embedding_dim, r)))
                    self.scaling = self.lora_alpha / self.r
                    self.weight.requires_grad = False
                self.reset_parameters()

            def reset_parameters(self):
                nn.Embedding.reset_parameters(self)
                if hasattr(self, 'lora_A'):
                    nn.init.zeros_(self.lora_A)
                    nn.init.normal_(self.lora_B)

            def train(self, mode: bool = True):
                nn.Embedding.train(self, mode)
                if mode:
                    if self.merge_weights and self.merged:
                        if self.r > 0:
                            self.weight.data -= (self.lora_B @ self.lora_A).transpose(0, 1) * self.scaling
                        self.merged = False
                else:
                    if self.merge_weights and not self.merged:
                        if self.r > 0:
                            self.weight.data += (self.lora_B @ self.lora_A) * self.scaling
                        self.merged = True

            def forward(self, x):
                if self.r > 0 and not self.merged:
                    result = nn.Embedding.forward(self, x)
                    if self.r > 0:
                        after_A = F.embedding(
                            x, self.lora_A.transpose(0, 1), self.padding_idx, self.max_norm,
                            self.norm_type, self.scale_grad_by_freq, self.sparse
                        )
                        result += (after_A @ self.lora_B.transpose(0, 1)) * self.scaling
                    return result
                else:
                    return nn.Embedding.forward(self, x)

        class Linear(nn.Linear, LoRALayer):
            def __init__(self, in_features: int, out_features: int, r: int = 0, lora_alpha: int = 1,
                         lora_dropout: float = 0., fan_in_fan_out: bool = False, merge_weights: bool = True,
                         **kwargs):
                nn.Linear.__init__(self, in_features, out_features, **kwargs)
                LoRALayer.__init__(self, r=r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                                   merge_weights=merge_weights)
                self.fan_in_fan_out = fan_in_fan_out
                if r > 0:
                    self.lora_A = nn.Parameter(self.weight.new_zeros((r, in_features)))
                    self.lora_B = nn.Parameter(self.weight.new_zeros((out_features, r)))
                    self.scaling = self.lora_alpha / self.r
                    self.weight.requires_grad = False
                self.reset_parameters()
                if fan_in_fan_out:
                    self.weight.data = self.weight.data.transpose(0, 1)

            def reset_parameters(self):
                nn.Linear.reset_parameters(self)
                if hasattr(self, 'lora_A'):
                    nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
                    nn.init.zeros_(self.lora_B)

            def train(self, mode: bool = True):
                def T(w):
                    return w.transpose(0, 1) if self.fan_in_fan_out else w
                nn.Linear.train(self, mode)
                if mode:
                    if self.merge_weights and self.merged:
                        if self.r > 0:
                            self.weight.data -= T(self.lora_B @ self.lora_A) * self.scaling
                        self.merged = False
                else:
                    if self.merge_weights and not self.merged:
                        if self.r > 0:
                            self.weight.data += T(self.lora_B @ self.lora_A) * self.scaling
                        self.merged = True

            def forward(self, x):
                def T(w):
                    return w.transpose(0, 1) if self.fan_in_fan_out else w
                if self.r > 0 and not self.merged:
                    result = F.linear(x, T(self.weight), bias=self.bias)
                    if self.r > 0:
                        result += (self.lora_dropout(x) @ self.lora_A.transpose(0, 1)
                                   @ self.lora_B.transpose(0, 1)) * self.scaling
                    return result
                else:
                    return F.linear(x, T(self.weight), bias=self.bias)

        class MergedLinear(nn.Linear, LoRALayer):
            def __init__(self, in_features: int, out_features: int, r: int = 0, lora_alpha: int = 1,
                         lora_dropout: float = 0., enable_lora: List[bool] = [False],
                         fan_in_fan_out: bool = False, merge_weights: bool = True, **kwargs):
                nn.Linear.__init__(self, in_features, out_features, **kwargs)
                LoRALayer.__init__(self, r=r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                                   merge_weights=merge_weights)
                assert out_features % len(enable_lora) == 0, \
                    'The length of enable_lora must divide out_features'
                self.enable_lora = enable_lora
                self.fan_in_fan_out = fan_in_fan_out
                if r > 0 and any(enable_lora):
                    self.lora_A = nn.Parameter(
                        self.weight.new_zeros((r * sum(enable_lora), in_features)))
                    self.lora_B = nn.Parameter(
                        self.weight.new_zeros((out_features // len(enable_lora) * sum(enable_lora), r))
                    )
                    self.scaling = self.lora_alpha / self.r
                    self.weight.requires_grad = False
                    self.lora_ind = self.weight.new_zeros(
                        (out_features, ), dtype=torch.bool
                    ).view(len(enable_lora), -1)
                    self.lora_ind[enable_lora, :] = True
                    self.lora_ind = self.lora_ind.view(-1)
                self.reset_parameters()
                if fan_in_fan_out:
                    self.weight.data = self.weight.data.transpose(0, 1)

            def reset_parameters(self):
                nn.Linear.reset_parameters(self)
                if hasattr(self, 'lora_A'):
                    nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
                    nn.init.zeros_(self.lora_B)

            def zero_pad(self, x):
                result = x.new_zeros((*x.shape[:-1], self.out_features))
                result = result.view(-1, self.out_features)
                result[:, self.lora_ind] = x.reshape(
                    -1, self.out_features // len(self.enable_lora) * sum(self.enable_lora)
                )
                return result.view((*x.shape[:-1], self.out_features))

            def train(self, mode: bool = True):
                def T(w):
                    return w.transpose(0, 1) if self.fan_in_fan_out else w
                nn.Linear.train(self, mode)
                if mode:
                    if self.merge_weights and self.merged:
                        if self.r > 0 and any(self.enable_lora):
                            delta_w = F.conv1d(
                                self.lora_A.data.unsqueeze(0),
                                self.lora_B.data.unsqueeze(-1),
                                groups=sum(self.enable_lora)
                            ).squeeze(0)
                            self.weight.data -= self.zero_pad(T(delta_w * self.scaling))
                        self.merged = False
                else:
                    if self.merge_weights and not self.merged:
                        if self.r > 0 and any(self.enable_lora):
                            delta_w = F.conv1d(
                                self.lora_A.data.unsqueeze(0),
                                self.lora_B.data.unsqueeze(-1),
                                groups=sum(self.enable_lora)
                            ).squeeze(0)
                            self.weight.data += self.zero_pad(T(delta_w * self.scaling))
                        self.merged = True

            def forward(self, x):
                def T(w):
                    return w.transpose(0, 1) if self.fan_in_fan_out else w
                if self.merged:
                    return F.linear(x, T(self.weight), bias=self.bias)
                else:
                    result = F.linear(x, T(self.weight), bias=self.bias)
                    if self.r > 0:
                        after_A = F.linear(self.lora_dropout(x), self.lora_A)
                        after_B = F.conv1d(
                            after_A.transpose(-2, -1),
                            self.lora_B.unsqueeze(-1),
                            groups=sum(self.enable_lora)
                        ).transpose(-2, -1)
                        result += self.zero_pad(after_B) * self.scaling
                    return result

        class Conv2d(nn.Conv2d, LoRALayer):
            def __init__(self, in_channels: int, out_channels: int, kernel_size: int, r: int = 0,
                         lora_alpha: int = 1, lora_dropout: float = 0., merge_weights: bool = True, **kwargs):
                nn.Conv2d.__init__(self, in_channels, out_channels, kernel_size, **kwargs)
                LoRALayer.__init__(self, r=r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                                   merge_weights=merge_weights)
                assert type(kernel_size) is int
                if r > 0:
                    self.lora_A = nn.Parameter(
                        self.weight.new_zeros((r * kernel_size, in_channels * kernel_size))
                    )
                    self.lora_B = nn.Parameter(
                        self.weight.new_zeros((out_channels * kernel_size, r * kernel_size))
                    )
                    self.scaling = self.lora_alpha / self.r
                    self.weight.requires_grad = False
                self.reset_parameters()

            def reset_parameters(self):
                nn.Conv2d.reset_parameters(self)
                if hasattr(self, 'lora_A'):
                    nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
                    nn.init.zeros_(self.lora_B)

            def train(self, mode: bool = True):
                nn.Conv2d.train(self, mode)
                if mode:
                    if self.merge_weights and self.merged:
                        self.weight.data -= (self.lora_B @ self.lora_A).view(self.weight.shape) * self.scaling
                        self.merged = False
                else:
                    if self.merge_weights and not self.merged:
                        self.weight.data += (self.lora_B @ self.lora_A).view(self.weight.shape) * self.scaling
                        self.merged = True

            def forward(self, x):
                if self.r > 0 and not self.merged:
                    return F.conv2d(
                        x,
                        self.weight + (self.lora_B @ self.lora_A).view(self.weight.shape) * self.scaling,
                        self.bias, self.stride, self.padding, self.dilation, self.groups
                    )
                return nn.Conv2d.forward(self, x)

        def mark_only_lora_as_trainable(model, bias='none'):
            for n, p in model.named_parameters():
                if 'lora_' not in n:
                    p.requires_grad = False
            if bias == 'none':
                return
            elif bias == 'all':
                for n, p in model.named_parameters():
                    if 'bias' in n:
                        p.requires_grad = True
            else:
                raise NotImplementedError

        def lora_state_dict(model, bias='none'):
            my_state_dict = model.state_dict()
            if bias == 'none':
                return {k: my_state_dict[k] for k in my_state_dict if 'lora_' in k}
            elif bias == 'all':
                return {k: my_state_dict[k] for k in my_state_dict if 'lora_' in k or 'bias' in k}

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = Embedding(7, 7, r=2, lora_alpha=4)          # square: train(False) adds B @ A
                self.conv = Conv2d(1, 2, 3, r=2, lora_alpha=2, padding=1)
                self.qkv = MergedLinear(7, 6, r=2, lora_alpha=4, enable_lora=[True, False, True],
                                        fan_in_fan_out=True)
                self.head = Linear(6 + 2 * 9, 3, r=2, lora_alpha=8)

            def forward(self, tokens, image):
                h = self.qkv(self.emb(tokens)).mean(1)
                c = self.conv(image).flatten(1)
                return self.head(torch.cat([h, c], 1))

        model = init_params(torch, Net(), 0)
        mark_only_lora_as_trainable(model, bias='all')
        log("trainable", [n for n, p in model.named_parameters() if p.requires_grad])
        log("lora_ind", model.qkv.lora_ind)
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.05)
        tokens = torch.tensor(np.random.RandomState(1).randint(0, 7, (4, 5)))
        image = randn(torch, (4, 1, 3, 3), 2)
        target = torch.tensor([0, 2, 1, 2])
        for step in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(model(tokens, image), target)
            loss.backward()
            log(f"loss{step}", loss)
            log(f"grads{step}", [p.grad for p in model.parameters() if p.requires_grad])
            opt.step()
        before = model(tokens, image).detach()
        frozen = model.head.weight.detach().clone()
        model.eval()
        log("merged", [m.merged for m in (model.emb, model.conv, model.qkv, model.head)])
        log("merged out", model(tokens, image))
        log("merged equal", torch.allclose(before, model(tokens, image), atol=1e-5))
        log("head weight moved", (model.head.weight - frozen).abs().sum())
        model.train()
        log("unmerged head weight", model.head.weight)
        log("state keys", sorted(lora_state_dict(model, bias='all')))
        try:
            Embedding(5, 3, r=2).eval()         # (3, 5) update onto a (5, 3) weight
        except Exception as e:
            log("non-square embedding merge", type(e).__mro__[1] if type(e).__module__ != "builtins" else type(e))
    run_both(program)
