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


# davidmrau/mixture-of-experts moe.py (SparseDispatcher: nonzero(gates).sort(0), split of the
# sorted pairs, gather of the nonzero gates, dispatch by torch.split on part sizes (an expert may
# get no rows), combine by index_add of exp'd outputs, ``combined[combined == 0] = eps``, log;
# MoE with topk gating, zeros_like(requires_grad=True).scatter, cv_squared load balancing) and
# its example.py training step; noisy_gating=False for training (randn_like draws differ), and
# _prob_in_top_k (Normal(mean, std).cdf of buffers) called with numpy-made noisy logits
def test_davidmrau_mixture_of_experts():
    def program(torch, log):
        nn = torch.nn
        Normal = torch.distributions.normal.Normal     # from torch.distributions.normal import Normal

        class SparseDispatcher(object):
            def __init__(self, num_experts, gates):
                self._gates = gates
                self._num_experts = num_experts
                sorted_experts, index_sorted_experts = torch.nonzero(gates).sort(0)
                _, self._expert_index = sorted_experts.split(1, dim=1)
                self._batch_index = torch.nonzero(gates)[index_sorted_experts[:, 1], 0]
                self._part_sizes = (gates > 0).sum(0).tolist()
                gates_exp = gates[self._batch_index.flatten()]
                self._nonzero_gates = torch.gather(gates_exp, 1, self._expert_index)

            def dispatch(self, inp):
                inp_exp = inp[self._batch_index].squeeze(1)
                return torch.split(inp_exp, self._part_sizes, dim=0)

            def combine(self, expert_out, multiply_by_gates=True):
                stitched = torch.cat(expert_out, 0).exp()
                if multiply_by_gates:
                    stitched = stitched.mul(self._nonzero_gates)
                zeros = torch.zeros(self._gates.size(0), expert_out[-1].size(1), requires_grad=True,
                                    device=stitched.device)
                combined = zeros.index_add(0, self._batch_index, stitched.float())
                combined[combined == 0] = np.finfo(float).eps
                return combined.log()

            def expert_to_gates(self):
                return torch.split(self._nonzero_gates, self._part_sizes, dim=0)

        class MLP(nn.Module):
            def __init__(self, input_size, output_size, hidden_size):
                super(MLP, self).__init__()
                self.fc1 = nn.Linear(input_size, hidden_size)
                self.fc2 = nn.Linear(hidden_size, output_size)
                self.relu = nn.ReLU()
                self.soft = nn.Softmax(1)

            def forward(self, x):
                out = self.fc1(x)
                out = self.relu(out)
                out = self.fc2(out)
                out = self.soft(out)
                return out

        class MoE(nn.Module):
            def __init__(self, input_size, output_size, num_experts, hidden_size, noisy_gating=True, k=4):
                super(MoE, self).__init__()
                self.noisy_gating = noisy_gating
                self.num_experts = num_experts
                self.output_size = output_size
                self.input_size = input_size
                self.hidden_size = hidden_size
                self.k = k
                self.experts = nn.ModuleList([MLP(self.input_size, self.output_size, self.hidden_size)
                                              for i in range(self.num_experts)])
                self.w_gate = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True)
                self.w_noise = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True)
                self.softplus = nn.Softplus()
                self.softmax = nn.Softmax(1)
                self.register_buffer("mean", torch.tensor([0.0]))
                self.register_buffer("std", torch.tensor([1.0]))
                assert(self.k <= self.num_experts)

            def cv_squared(self, x):
                eps = 1e-10
                if x.shape[0] == 1:
                    return torch.tensor([0], device=x.device, dtype=x.dtype)
                return x.float().var() / (x.float().mean()**2 + eps)

            def _gates_to_load(self, gates):
                return (gates > 0).sum(0)

            def _prob_in_top_k(self, clean_values, noisy_values, noise_stddev, noisy_top_values):
                batch = clean_values.size(0)
                m = noisy_top_values.size(1)
                top_values_flat = noisy_top_values.flatten()
                threshold_positions_if_in = torch.arange(batch, device=clean_values.device) * m + self.k
                threshold_if_in = torch.unsqueeze(torch.gather(top_values_flat, 0, threshold_positions_if_in), 1)
                is_in = torch.gt(noisy_values, threshold_if_in)
                threshold_positions_if_out = threshold_positions_if_in - 1
                threshold_if_out = torch.unsqueeze(torch.gather(top_values_flat, 0, threshold_positions_if_out), 1)
                normal = Normal(self.mean, self.std)
                prob_if_in = normal.cdf((clean_values - threshold_if_in)/noise_stddev)
                prob_if_out = normal.cdf((clean_values - threshold_if_out)/noise_stddev)
                prob = torch.where(is_in, prob_if_in, prob_if_out)
                return prob

            def noisy_top_k_gating(self, x, train, noise_epsilon=1e-2):
                clean_logits = x @ self.w_gate
                if self.noisy_gating and train:
                    raw_noise_stddev = x @ self.w_noise
                    noise_stddev = ((self.softplus(raw_noise_stddev) + noise_epsilon))
                    noisy_logits = clean_logits + (torch.randn_like(clean_logits) * noise_stddev)
                    logits = noisy_logits
                else:
                    logits = clean_logits
                top_logits, top_indices = logits.topk(min(self.k + 1, self.num_experts), dim=1)
                top_k_logits = top_logits[:, :self.k]
                top_k_indices = top_indices[:, :self.k]
                top_k_gates = self.softmax(top_k_logits)
                zeros = torch.zeros_like(logits, requires_grad=True)
                gates = zeros.scatter(1, top_k_indices, top_k_gates)
                if self.noisy_gating and self.k < self.num_experts and train:
                    load = (self._prob_in_top_k(clean_logits, noisy_logits, noise_stddev, top_logits)).sum(0)
                else:
                    load = self._gates_to_load(gates)
                return gates, load

            def forward(self, x, loss_coef=1e-2):
                gates, load = self.noisy_top_k_gating(x, self.training)
                importance = gates.sum(0)
                loss = self.cv_squared(importance) + self.cv_squared(load)
                loss *= loss_coef
                dispatcher = SparseDispatcher(self.num_experts, gates)
                expert_inputs = dispatcher.dispatch(x)
                gates = dispatcher.expert_to_gates()
                expert_outputs = [self.experts[i](expert_inputs[i]) for i in range(self.num_experts)]
                y = dispatcher.combine(expert_outputs)
                return y, loss

        # example.py: MoE(input_size, num_classes, num_experts, hidden_size, k=4, noisy_gating=True)
        net = init_params(torch, MoE(5, 3, 5, 6, noisy_gating=False, k=2), 0, scale=0.6)
        optim = torch.optim.Adam(net.parameters())
        loss_fn = nn.NLLLoss()
        x = randn(torch, (6, 5), 1)
        y = torch.tensor([0, 1, 2, 1, 0, 2])
        for step in range(3):
            net.train()
            optim.zero_grad()
            y_hat, aux_loss = net(x)
            loss = loss_fn(y_hat, y)
            total_loss = loss + aux_loss
            total_loss.backward()
            optim.step()
            log(f"step{step}", (y_hat, aux_loss, loss))
            log(f"grads{step}", [p.grad for p in net.parameters()])
        gates, load = net.noisy_top_k_gating(x, False)
        d = SparseDispatcher(5, gates)
        log("dispatch", (d._batch_index, d._expert_index, d._part_sizes, d._nonzero_gates, load))
        log("expert inputs", [t.shape for t in d.dispatch(x)])
        net.eval()
        with torch.no_grad():
            log("eval", net(x))
        # the noisy path's load estimate, with the noise the program would draw given as numbers
        clean = x @ net.w_gate
        noise_stddev = nn.Softplus()(x @ net.w_noise) + 1e-2
        noisy = clean + randn(torch, (6, 5), 2) * noise_stddev
        top_logits, _ = noisy.topk(3, dim=1)
        log("prob in top k", net._prob_in_top_k(clean, noisy, noise_stddev, top_logits))
        log("cv_squared of one", net.cv_squared(torch.tensor([3.0])))
    run_both(program)


# sthalles/SimCLR simclr.py (info_nce_loss: labels from cat of aranges compared by broadcasting,
# F.normalize, features @ features.T, the diagonal dropped with ``[~mask].view``, positives and
# negatives selected by boolean masks, logits / temperature, zero labels) and its train loop
# (torch.cuda.amp GradScaler(enabled=False) and autocast(enabled=False), CrossEntropyLoss,
# scheduler.get_lr()) and utils.py's accuracy(topk=(1, 5)); the ResNet backbone -> a small MLP
# with its projection head, the augmented views -> two numpy-noised copies of a batch
def test_sthalles_simclr_info_nce():
    def program(torch, log):
        import warnings
        from types import SimpleNamespace
        F, nn = torch.nn.functional, torch.nn
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            GradScaler, autocast = torch.cuda.amp.GradScaler, torch.cuda.amp.autocast

        def accuracy(output, target, topk=(1,)):
            with torch.no_grad():
                maxk = max(topk)
                batch_size = target.size(0)
                _, pred = output.topk(maxk, 1, True, True)
                pred = pred.t()
                correct = pred.eq(target.view(1, -1).expand_as(pred))
                res = []
                for k in topk:
                    correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
                    res.append(correct_k.mul_(100.0 / batch_size))
                return res

        class SimCLR(object):
            def __init__(self, *args, **kwargs):
                self.args = kwargs['args']
                self.model = kwargs['model'].to(self.args.device)
                self.optimizer = kwargs['optimizer']
                self.scheduler = kwargs['scheduler']
                self.criterion = torch.nn.CrossEntropyLoss().to(self.args.device)

            def info_nce_loss(self, features):
                labels = torch.cat([torch.arange(self.args.batch_size) for i in range(self.args.n_views)], dim=0)
                labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
                labels = labels.to(self.args.device)
                features = F.normalize(features, dim=1)
                similarity_matrix = torch.matmul(features, features.T)
                mask = torch.eye(labels.shape[0], dtype=torch.bool).to(self.args.device)
                labels = labels[~mask].view(labels.shape[0], -1)
                similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
                positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
                negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
                logits = torch.cat([positives, negatives], dim=1)
                labels = torch.zeros(logits.shape[0], dtype=torch.long).to(self.args.device)
                logits = logits / self.args.temperature
                return logits, labels

            def train(self, train_loader):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    scaler = GradScaler(enabled=self.args.fp16_precision)
                n_iter = 0
                for epoch_counter in range(self.args.epochs):
                    for images, _ in train_loader:
                        images = torch.cat(images, dim=0)
                        images = images.to(self.args.device)
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            with autocast(enabled=self.args.fp16_precision):
                                features = self.model(images)
                                logits, labels = self.info_nce_loss(features)
                                loss = self.criterion(logits, labels)
                        self.optimizer.zero_grad()
                        scaler.scale(loss).backward()
                        scaler.step(self.optimizer)
                        scaler.update()
                        if n_iter % self.args.log_every_n_steps == 0:
                            top1, top5 = accuracy(logits, labels, topk=(1, 5))
                            log(f"iter{n_iter}", (loss, top1[0], top5[0], logits))
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore")
                                log(f"lr{n_iter}", self.scheduler.get_lr()[0])
                        n_iter += 1
                    if epoch_counter >= 1:
                        self.scheduler.step()
                    log("epoch", f"Epoch: {epoch_counter}\tTop1 accuracy: {top1[0]}")   # logging.debug
                    log("epoch loss", float(f"{loss}"))

        args = SimpleNamespace(device=torch.device('cpu'), batch_size=4, n_views=2, temperature=0.07,
                               fp16_precision=False, epochs=3, log_every_n_steps=1)
        model = init_params(torch, nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(),
                                                 nn.Linear(8, 5)), 0)
        optimizer = torch.optim.Adam(model.parameters(), 0.0003, weight_decay=1e-4)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4, eta_min=0, last_epoch=-1)
        base = randn(torch, (4, 6), 1)
        loader = [([base + randn(torch, (4, 6), 10 + 2 * i, scale=0.3), base + randn(torch, (4, 6), 11 + 2 * i, scale=0.3)],
                   torch.zeros(4)) for i in range(2)]
        SimCLR(args=args, model=model, optimizer=optimizer, scheduler=scheduler).train(loader)
        log("params", list(model.parameters()))
    run_both(program)


# jzbontar/pixelcnn-pytorch main.py (MaskedConv2d: a 'mask' buffer cloned from weight.data,
# fill_(1) and two slice writes with ``kW // 2 + (mask_type == 'B')``, ``self.weight.data *=
# self.mask`` in forward; the Sequential of masked convs with ReLU(True); target
# ``(input.data[:,0] * 255).long()``; SGD with nesterov momentum; the sampling loop writing
# ``sample[:, :, i, j]`` under Variable(volatile=True)); fm 32 -> 4, 6 layers -> 3, 28x28 MNIST
# -> 6x6 numpy images; ``err.append(loss.data[0])`` raises IndexError now (checked, then
# ``loss.item()``); multinomial sampling -> argmax, over the first 2 rows only
def test_jzbontar_pixelcnn_masked_conv():
    def program(torch, log):
        import warnings
        F, nn, optim = torch.nn.functional, torch.nn, torch.optim
        Variable = torch.autograd.Variable

        class MaskedConv2d(nn.Conv2d):
            def __init__(self, mask_type, *args, **kwargs):
                super(MaskedConv2d, self).__init__(*args, **kwargs)
                assert mask_type in {'A', 'B'}
                self.register_buffer('mask', self.weight.data.clone())
                _, _, kH, kW = self.weight.size()
                self.mask.fill_(1)
                self.mask[:, :, kH // 2, kW // 2 + (mask_type == 'B'):] = 0
                self.mask[:, :, kH // 2 + 1:] = 0

            def forward(self, x):
                self.weight.data *= self.mask
                return super(MaskedConv2d, self).forward(x)

        fm = 4
        net = nn.Sequential(
            MaskedConv2d('A', 1,   fm, 7, 1, 3), nn.ReLU(True),
            MaskedConv2d('B', fm,  fm, 7, 1, 3), nn.ReLU(True),
            MaskedConv2d('B', fm, 256, 7, 1, 3))
        init_params(torch, net, 0, scale=0.2)
        log("masks", [net[0].mask[0, 0], net[2].mask[0, 0]])
        rs = np.random.RandomState(3)
        tr = [(torch.tensor(rs.randint(0, 256, (2, 1, 6, 6)) / 255.0).float(), None) for _ in range(2)]
        sample = torch.Tensor(3, 1, 6, 6)
        optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9, nesterov=True)
        for epoch in range(2):
            err = []
            for input, _ in tr:
                input = Variable(input)
                target = Variable((input.data[:, 0] * 255).long())
                loss = F.cross_entropy(net(input), target)
                try:
                    err.append(loss.data[0])
                except IndexError as e:
                    log("loss.data[0]", type(e))
                    err.append(loss.item())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            sample.fill_(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for i in range(2):
                    for j in range(6):
                        out = net(Variable(sample, volatile=True))
                        probs = F.softmax(out[:, :, i, j]).data
                        sample[:, :, i, j] = probs.argmax(1, keepdim=True).float() / 255.
            log(f"sample{epoch}", sample)
            log("epoch err", (epoch, np.mean(err)))     # print epoch, np.mean(err)
        log("weights", [net[0].weight, net[4].weight])
    run_both(program)


# cloneofsimo/minDiffusion superminddpm.py (ddpm_schedules: arange / T, cumsum of log().exp(),
# the schedule dict registered as buffers; DummyEpsModel's Conv/BatchNorm stack; DDPM.forward's
# ``self.sqrtab[_ts, None, None, None] * x`` and ``_ts / self.n_T``; sample's reverse loop under
# no_grad in eval mode; the train loop's loss_ema and ``f"loss: {loss_ema:.4f}"``); widths
# 128/64/16 -> 8/8/4, n_T 1000 -> 8, 28x28 MNIST -> 1x6x6 numpy images; the _ts/eps (and the
# sampler's noise) that torch.randint/randn_like/randn would draw are numpy-made and handed in
# (Adam's lr 1e-4 -> 1e-6: the conv biases before BatchNorm have rounding-level gradients, which
# Adam turns into lr-sized steps that the eval-mode sampler then sees)
def test_cloneofsimo_superminddpm():
    def program(torch, log):
        from typing import Dict, Tuple
        nn = torch.nn

        def ddpm_schedules(beta1: float, beta2: float, T: int) -> Dict[str, torch.Tensor]:
            assert beta1 < beta2 < 1.0, "beta1 and beta2 must be in (0, 1)"
            beta_t = (beta2 - beta1) * torch.arange(0, T + 1, dtype=torch.float32) / T + beta1
            sqrt_beta_t = torch.sqrt(beta_t)
            alpha_t = 1 - beta_t
            log_alpha_t = torch.log(alpha_t)
            alphabar_t = torch.cumsum(log_alpha_t, dim=0).exp()
            sqrtab = torch.sqrt(alphabar_t)
            oneover_sqrta = 1 / torch.sqrt(alpha_t)
            sqrtmab = torch.sqrt(1 - alphabar_t)
            mab_over_sqrtmab_inv = (1 - alpha_t) / sqrtmab
            return {
                "alpha_t": alpha_t,
                "oneover_sqrta": oneover_sqrta,
                "sqrt_beta_t": sqrt_beta_t,
                "alphabar_t": alphabar_t,
                "sqrtab": sqrtab,
                "sqrtmab": sqrtmab,
                "mab_over_sqrtmab": mab_over_sqrtmab_inv,
            }

        class DummyEpsModel(nn.Module):
            def __init__(self, n_channel: int) -> None:
                super(DummyEpsModel, self).__init__()
                self.conv = nn.Sequential(
                    nn.Conv2d(n_channel, 8, 7, padding=3),
                    nn.BatchNorm2d(8),
                    nn.ReLU(),
                    nn.Conv2d(8, 8, 7, padding=3),
                    nn.BatchNorm2d(8),
                    nn.ReLU(),
                    nn.Conv2d(8, 4, 7, padding=3),
                    nn.BatchNorm2d(4),
                    nn.ReLU(),
                    nn.Conv2d(4, n_channel, 3, padding=1),
                )

            def forward(self, x, t) -> torch.Tensor:
                return self.conv(x)

        draws = {}

        class DDPM(nn.Module):
            def __init__(self, eps_model: nn.Module, betas: Tuple[float, float], n_T: int,
                         criterion: nn.Module = nn.MSELoss()) -> None:
                super(DDPM, self).__init__()
                self.eps_model = eps_model
                self.vars = ddpm_schedules(betas[0], betas[1], n_T)
                for k, v in self.vars.items():
                    self.register_buffer(k, v)
                self.n_T = n_T
                self.criterion = criterion

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                _ts = draws["ts"].to(x.device)       # torch.randint(0, self.n_T - 1, (x.shape[0],))
                eps = draws["eps"]                    # torch.randn_like(x)
                x_t = (
                    self.sqrtab[_ts, None, None, None] * x
                    + self.sqrtmab[_ts, None, None, None] * eps
                )
                return self.criterion(eps, self.eps_model(x_t, _ts / self.n_T))

            def sample(self, n_sample: int, size, device) -> torch.Tensor:
                x_t = randn(torch, (n_sample, *size), 50).to(device)
                for i in range(self.n_T - 1, 0, -1):
                    z = randn(torch, (n_sample, *size), 50 + i).to(device)
                    eps = self.eps_model(x_t, i / self.n_T)
                    x_t = (
                        self.oneover_sqrta[i] * (x_t - eps * self.mab_over_sqrtmab[i])
                        + self.sqrt_beta_t[i] * z
                    )
                return x_t

        device = "cpu"
        ddpm = DDPM(eps_model=DummyEpsModel(1), betas=(1e-4, 0.02), n_T=8)
        init_params(torch, ddpm, 0, scale=0.2)
        ddpm.to(device)
        log("buffers", dict(ddpm.named_buffers()))
        rs = np.random.RandomState(4)
        dataloader = [(torch.tensor(rs.rand(3, 1, 6, 6).astype(np.float32)) - 0.5, None) for _ in range(2)]
        optim = torch.optim.Adam(ddpm.parameters(), lr=1e-6)
        for i in range(2):
            ddpm.train()
            loss_ema = None
            for n, (x, _) in enumerate(dataloader):
                draws["ts"] = torch.tensor(rs.randint(0, ddpm.n_T - 1, (x.shape[0],)))
                draws["eps"] = torch.tensor(rs.randn(*x.shape).astype(np.float32))
                optim.zero_grad()
                x = x.to(device)
                loss = ddpm(x)
                loss.backward()
                if loss_ema is None:
                    loss_ema = loss.item()
                else:
                    loss_ema = 0.9 * loss_ema + 0.1 * loss.item()
                log(f"loss {i}.{n}", loss)
                optim.step()
            print(f"loss: {loss_ema:.4f}")
            ddpm.eval()
            with torch.no_grad():
                x = ddpm.sample(2, (1, 6, 6), device)
            log(f"samples{i}", x)
        log("running stats", [m.running_var for m in ddpm.modules() if isinstance(m, nn.BatchNorm2d)])
    run_both(program)


# christiancosgrove/pytorch-spectral-normalization-gan spectral_normalization.py (SpectralNorm
# wrapping a module: the weight moved out of ``module._parameters`` by ``del`` and re-registered
# as weight_u / weight_v (requires_grad=False) / weight_bar, power iteration through ``v.data =
# l2normalize(torch.mv(torch.t(w.view(height,-1).data), u.data))``, ``setattr(module, name, w /
# sigma.expand_as(w))`` every forward), model.py (the DCGAN-like Generator and the
# Discriminator of SpectralNorm convs with ``nn.LeakyReLU(leak)(...)``) and main.py's hinge-loss
# train step (Adam over ``filter(lambda p: p.requires_grad, ...)`` with betas (0.0, 0.9),
# ExponentialLR); widths 64..512 -> 4..8, z_dim 128 -> 4, batch 2, one disc iteration; the
# ``w.data.new(height).normal_(0, 1)`` u/v draws and randn z replaced by numpy values (u and v
# are parameters: init_params sets them); ``if not self._made_params()`` as the widely used
# version of the file has it. Generator biases before BatchNorm have rounding-level gradients
# (Adam makes them lr-sized steps) so the generator is observed through its outputs only
def test_spectral_normalization_gan():
    def program(torch, log):
        nn, optim = torch.nn, torch.optim
        Parameter = torch.nn.Parameter
        Variable = torch.autograd.Variable

        def l2normalize(v, eps=1e-12):
            return v / (v.norm() + eps)

        class SpectralNorm(nn.Module):
            def __init__(self, module, name='weight', power_iterations=1):
                super(SpectralNorm, self).__init__()
                self.module = module
                self.name = name
                self.power_iterations = power_iterations
                if not self._made_params():
                    self._make_params()

            def _update_u_v(self):
                u = getattr(self.module, self.name + "_u")
                v = getattr(self.module, self.name + "_v")
                w = getattr(self.module, self.name + "_bar")
                height = w.data.shape[0]
                for _ in range(self.power_iterations):
                    v.data = l2normalize(torch.mv(torch.t(w.view(height, -1).data), u.data))
                    u.data = l2normalize(torch.mv(w.view(height, -1).data, v.data))
                sigma = u.dot(w.view(height, -1).mv(v))
                setattr(self.module, self.name, w / sigma.expand_as(w))

            def _made_params(self):
                try:
                    u = getattr(self.module, self.name + "_u")
                    v = getattr(self.module, self.name + "_v")
                    w = getattr(self.module, self.name + "_bar")
                    return True
                except AttributeError:
                    return False

            def _make_params(self):
                w = getattr(self.module, self.name)
                height = w.data.shape[0]
                width = w.view(height, -1).data.shape[1]
                u = Parameter(w.data.new(height).normal_(0, 1), requires_grad=False)
                v = Parameter(w.data.new(width).normal_(0, 1), requires_grad=False)
                u.data = l2normalize(u.data)
                v.data = l2normalize(v.data)
                w_bar = Parameter(w.data)
                del self.module._parameters[self.name]
                self.module.register_parameter(self.name + "_u", u)
                self.module.register_parameter(self.name + "_v", v)
                self.module.register_parameter(self.name + "_bar", w_bar)

            def forward(self, *args):
                self._update_u_v()
                return self.module.forward(*args)

        channels = 3
        leak = 0.1
        w_g = 4

        class Generator(nn.Module):
            def __init__(self, z_dim):
                super(Generator, self).__init__()
                self.z_dim = z_dim
                self.model = nn.Sequential(
                    nn.ConvTranspose2d(z_dim, 8, 4, stride=1),
                    nn.BatchNorm2d(8),
                    nn.ReLU(),
                    nn.ConvTranspose2d(8, 8, 4, stride=2, padding=(1, 1)),
                    nn.BatchNorm2d(8),
                    nn.ReLU(),
                    nn.ConvTranspose2d(8, 4, 4, stride=2, padding=(1, 1)),
                    nn.BatchNorm2d(4),
                    nn.ReLU(),
                    nn.ConvTranspose2d(4, 4, 4, stride=2, padding=(1, 1)),
                    nn.BatchNorm2d(4),
                    nn.ReLU(),
                    nn.ConvTranspose2d(4, channels, 3, stride=1, padding=(1, 1)),
                    nn.Tanh())

            def forward(self, z):
                return self.model(z.view(-1, self.z_dim, 1, 1))

        class Discriminator(nn.Module):
            def __init__(self):
                super(Discriminator, self).__init__()
                self.conv1 = SpectralNorm(nn.Conv2d(channels, 4, 3, stride=1, padding=(1, 1)))
                self.conv2 = SpectralNorm(nn.Conv2d(4, 4, 4, stride=2, padding=(1, 1)))
                self.conv3 = SpectralNorm(nn.Conv2d(4, 8, 3, stride=1, padding=(1, 1)))
                self.conv4 = SpectralNorm(nn.Conv2d(8, 8, 4, stride=2, padding=(1, 1)))
                self.conv5 = SpectralNorm(nn.Conv2d(8, 8, 3, stride=1, padding=(1, 1)))
                self.conv6 = SpectralNorm(nn.Conv2d(8, 8, 4, stride=2, padding=(1, 1)))
                self.conv7 = SpectralNorm(nn.Conv2d(8, 8, 3, stride=1, padding=(1, 1)))
                self.fc = SpectralNorm(nn.Linear(w_g * w_g * 8, 1))

            def forward(self, x):
                m = x
                m = nn.LeakyReLU(leak)(self.conv1(m))
                m = nn.LeakyReLU(leak)(self.conv2(m))
                m = nn.LeakyReLU(leak)(self.conv3(m))
                m = nn.LeakyReLU(leak)(self.conv4(m))
                m = nn.LeakyReLU(leak)(self.conv5(m))
                m = nn.LeakyReLU(leak)(self.conv6(m))
                m = nn.LeakyReLU(leak)(self.conv7(m))
                return self.fc(m.view(-1, w_g * w_g * 8))

        Z_dim = 4
        discriminator = init_params(torch, Discriminator(), 0, scale=0.3)
        generator = init_params(torch, Generator(Z_dim), 1, scale=0.3)
        log("disc params", [(n, p.requires_grad) for n, p in discriminator.named_parameters()])
        log("conv1 has weight param", 'weight' in discriminator.conv1.module._parameters)
        optim_disc = optim.Adam(filter(lambda p: p.requires_grad, discriminator.parameters()), lr=2e-4, betas=(0.0, 0.9))
        optim_gen = optim.Adam(generator.parameters(), lr=2e-4, betas=(0.0, 0.9))
        scheduler_d = optim.lr_scheduler.ExponentialLR(optim_disc, gamma=0.99)
        scheduler_g = optim.lr_scheduler.ExponentialLR(optim_gen, gamma=0.99)
        loader = [(randn(torch, (2, 3, 32, 32), 5 + i).tanh(), torch.zeros(2)) for i in range(2)]
        disc_iters = 1
        batch_size = 2
        for epoch in range(2):
            for batch_idx, (data, target) in enumerate(loader):
                data, target = Variable(data), Variable(target)
                for _ in range(disc_iters):
                    z = Variable(randn(torch, (batch_size, Z_dim), 20 + 4 * epoch + 2 * batch_idx))
                    optim_disc.zero_grad()
                    optim_gen.zero_grad()
                    disc_loss = nn.ReLU()(1.0 - discriminator(data)).mean() + nn.ReLU()(1.0 + discriminator(generator(z))).mean()
                    disc_loss.backward()
                    optim_disc.step()
                z = Variable(randn(torch, (batch_size, Z_dim), 21 + 4 * epoch + 2 * batch_idx))
                optim_disc.zero_grad()
                optim_gen.zero_grad()
                gen_loss = -discriminator(generator(z)).mean()
                gen_loss.backward()
                optim_gen.step()
                log(f"losses {epoch}.{batch_idx}", (disc_loss, gen_loss))
                log(f"u/v {epoch}.{batch_idx}", (discriminator.conv3.module.weight_u, discriminator.fc.module.weight_v))
                log(f"sigma-normalised {epoch}.{batch_idx}", discriminator.conv7.module.weight)
            scheduler_d.step()
            scheduler_g.step()
        log("lrs", (optim_disc.param_groups[0]["lr"], optim_gen.param_groups[0]["lr"]))
        log("disc weight_bar", [discriminator.conv1.module.weight_bar, discriminator.fc.module.weight_bar])
        log("disc grads", [p.grad for p in discriminator.parameters() if p.requires_grad])
        log("u grad", discriminator.conv1.module.weight_u.grad)
    # rtol 1e-4: a GAN's losses after a few adversarial steps: torch's CPU convolutions round by CPU (5.6e-5 apart
    # on a CPU without AVX-512; its discriminator's gradients of ~3e-3, 6e-5 apart)
    run_both(program, rtol=1e-4, atol=1e-4)


# ndrplz/ConvLSTM_pytorch convlstm.py (ConvLSTMCell: cat of input and hidden on channels, one
# conv split into four gates by torch.split; ConvLSTM stacking cells over time with torch.stack
# (dim=1), permute for batch_first=False, _init_hidden's zeros on the weight's device,
# return_all_layers, the kernel-size checks' ValueError) with its docstring's example use at
# tiny sizes: hidden dims [4, 3], 3 time steps of 2x5x5 frames; an MSE against numpy targets
def test_ndrplz_convlstm():
    def program(torch, log):
        nn = torch.nn

        class ConvLSTMCell(nn.Module):
            def __init__(self, input_dim, hidden_dim, kernel_size, bias):
                super(ConvLSTMCell, self).__init__()
                self.input_dim = input_dim
                self.hidden_dim = hidden_dim
                self.kernel_size = kernel_size
                self.padding = kernel_size[0] // 2, kernel_size[1] // 2
                self.bias = bias
                self.conv = nn.Conv2d(in_channels=self.input_dim + self.hidden_dim,
                                      out_channels=4 * self.hidden_dim,
                                      kernel_size=self.kernel_size,
                                      padding=self.padding,
                                      bias=self.bias)

            def forward(self, input_tensor, cur_state):
                h_cur, c_cur = cur_state
                combined = torch.cat([input_tensor, h_cur], dim=1)
                combined_conv = self.conv(combined)
                cc_i, cc_f, cc_o, cc_g = torch.split(combined_conv, self.hidden_dim, dim=1)
                i = torch.sigmoid(cc_i)
                f = torch.sigmoid(cc_f)
                o = torch.sigmoid(cc_o)
                g = torch.tanh(cc_g)
                c_next = f * c_cur + i * g
                h_next = o * torch.tanh(c_next)
                return h_next, c_next

            def init_hidden(self, batch_size, image_size):
                height, width = image_size
                return (torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device),
                        torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device))

        class ConvLSTM(nn.Module):
            def __init__(self, input_dim, hidden_dim, kernel_size, num_layers,
                         batch_first=False, bias=True, return_all_layers=False):
                super(ConvLSTM, self).__init__()
                self._check_kernel_size_consistency(kernel_size)
                kernel_size = self._extend_for_multilayer(kernel_size, num_layers)
                hidden_dim = self._extend_for_multilayer(hidden_dim, num_layers)
                if not len(kernel_size) == len(hidden_dim) == num_layers:
                    raise ValueError('Inconsistent list length.')
                self.input_dim = input_dim
                self.hidden_dim = hidden_dim
                self.kernel_size = kernel_size
                self.num_layers = num_layers
                self.batch_first = batch_first
                self.bias = bias
                self.return_all_layers = return_all_layers
                cell_list = []
                for i in range(0, self.num_layers):
                    cur_input_dim = self.input_dim if i == 0 else self.hidden_dim[i - 1]
                    cell_list.append(ConvLSTMCell(input_dim=cur_input_dim,
                                                  hidden_dim=self.hidden_dim[i],
                                                  kernel_size=self.kernel_size[i],
                                                  bias=self.bias))
                self.cell_list = nn.ModuleList(cell_list)

            def forward(self, input_tensor, hidden_state=None):
                if not self.batch_first:
                    input_tensor = input_tensor.permute(1, 0, 2, 3, 4)
                b, _, _, h, w = input_tensor.size()
                if hidden_state is None:
                    hidden_state = self._init_hidden(batch_size=b,
                                                     image_size=(h, w))
                elif len(hidden_state) != num_layers:  # noqa: F821 (the program's own bug)
                    raise NotImplementedError()
                layer_output_list = []
                last_state_list = []
                seq_len = input_tensor.size(1)
                cur_layer_input = input_tensor
                for layer_idx in range(self.num_layers):
                    h, c = hidden_state[layer_idx]
                    output_inner = []
                    for t in range(seq_len):
                        h, c = self.cell_list[layer_idx](input_tensor=cur_layer_input[:, t, :, :, :],
                                                         cur_state=[h, c])
                        output_inner.append(h)
                    layer_output = torch.stack(output_inner, dim=1)
                    cur_layer_input = layer_output
                    layer_output_list.append(layer_output)
                    last_state_list.append([h, c])
                if not self.return_all_layers:
                    layer_output_list = layer_output_list[-1:]
                    last_state_list = last_state_list[-1:]
                return layer_output_list, last_state_list

            def _init_hidden(self, batch_size, image_size):
                init_states = []
                for i in range(self.num_layers):
                    init_states.append(self.cell_list[i].init_hidden(batch_size, image_size))
                return init_states

            @staticmethod
            def _check_kernel_size_consistency(kernel_size):
                if not (isinstance(kernel_size, tuple) or
                        (isinstance(kernel_size, list) and all([isinstance(elem, tuple) for elem in kernel_size]))):
                    raise ValueError('`kernel_size` must be tuple or list of tuples')

            @staticmethod
            def _extend_for_multilayer(param, num_layers):
                if not isinstance(param, list):
                    param = [param] * num_layers
                return param

        x = randn(torch, (3, 2, 2, 5, 5), 1)          # (t, b, c, h, w)
        convlstm = init_params(torch, ConvLSTM(2, [4, 3], [(3, 3), (1, 1)], 2, False, True, True), 0)
        layer_outputs, last_states = convlstm(x)
        h = last_states[1][0]
        log("shapes", ([o.shape for o in layer_outputs], [[s.shape for s in st] for st in last_states]))
        log("h", h)
        loss = torch.nn.functional.mse_loss(layer_outputs[-1], randn(torch, (2, 3, 3, 5, 5), 2))
        loss.backward()
        log("loss", loss)
        log("grads", [p.grad for p in convlstm.parameters()])
        log("grad_fn", type(layer_outputs[0].grad_fn).__name__)
        try:
            ConvLSTM(2, 4, 3, 1)
        except ValueError as e:
            log("bad kernel", str(e))
        last_only = ConvLSTM(2, 4, (3, 3), 1, batch_first=True)
        outs, states = last_only(x.transpose(0, 1))
        log("last layer only", (len(outs), outs[0].shape))
    run_both(program)


# locuslab/TCN TCN/tcn.py (Chomp1d's ``x[:, :, :-self.chomp_size].contiguous()``, TemporalBlock
# with weight_norm(nn.Conv1d(..., dilation=...)) and a 1x1 downsample, init_weights'
# ``conv.weight.data.normal_(0, 0.01)`` on weight_norm's recomputed weight, TemporalConvNet's
# 2 ** i dilations), adding_problem/model.py (TCN: the last step through a Linear), utils.py's
# data_generator (np.random.choice positions; torch.rand -> numpy) and add_test.py's train and
# evaluate (Adam, mse_loss, clip_grad_norm_, the '{:2d} [{:6d}/{:6d} ({:.0f}%)]' progress line);
# nhid 30 -> 4, 8 levels -> 3, ksize 7 -> 3, seq_len 400 -> 12, 50000 samples -> 12, dropout 0
def test_locuslab_tcn_adding_problem():
    def program(torch, log):
        import warnings
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        Variable = torch.autograd.Variable
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            weight_norm = torch.nn.utils.weight_norm

        class Chomp1d(nn.Module):
            def __init__(self, chomp_size):
                super(Chomp1d, self).__init__()
                self.chomp_size = chomp_size

            def forward(self, x):
                return x[:, :, :-self.chomp_size].contiguous()

        class TemporalBlock(nn.Module):
            def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2):
                super(TemporalBlock, self).__init__()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self.conv1 = weight_norm(nn.Conv1d(n_inputs, n_outputs, kernel_size,
                                                       stride=stride, padding=padding, dilation=dilation))
                self.chomp1 = Chomp1d(padding)
                self.relu1 = nn.ReLU()
                self.dropout1 = nn.Dropout(dropout)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self.conv2 = weight_norm(nn.Conv1d(n_outputs, n_outputs, kernel_size,
                                                       stride=stride, padding=padding, dilation=dilation))
                self.chomp2 = Chomp1d(padding)
                self.relu2 = nn.ReLU()
                self.dropout2 = nn.Dropout(dropout)
                self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1,
                                         self.conv2, self.chomp2, self.relu2, self.dropout2)
                self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
                self.relu = nn.ReLU()
                self.init_weights()

            def init_weights(self):
                self.conv1.weight.data.normal_(0, 0.01)
                self.conv2.weight.data.normal_(0, 0.01)
                if self.downsample is not None:
                    self.downsample.weight.data.normal_(0, 0.01)

            def forward(self, x):
                out = self.net(x)
                res = x if self.downsample is None else self.downsample(x)
                return self.relu(out + res)

        class TemporalConvNet(nn.Module):
            def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2):
                super(TemporalConvNet, self).__init__()
                layers = []
                num_levels = len(num_channels)
                for i in range(num_levels):
                    dilation_size = 2 ** i
                    in_channels = num_inputs if i == 0 else num_channels[i-1]
                    out_channels = num_channels[i]
                    layers += [TemporalBlock(in_channels, out_channels, kernel_size, stride=1, dilation=dilation_size,
                                             padding=(kernel_size-1) * dilation_size, dropout=dropout)]
                self.network = nn.Sequential(*layers)

            def forward(self, x):
                return self.network(x)

        class TCN(nn.Module):
            def __init__(self, input_size, output_size, num_channels, kernel_size, dropout):
                super(TCN, self).__init__()
                self.tcn = TemporalConvNet(input_size, num_channels, kernel_size=kernel_size, dropout=dropout)
                self.linear = nn.Linear(num_channels[-1], output_size)
                self.init_weights()

            def init_weights(self):
                self.linear.weight.data.normal_(0, 0.01)

            def forward(self, x):
                y1 = self.tcn(x)
                return self.linear(y1[:, :, -1])

        np.random.seed(0)
        rs = np.random.RandomState(1)

        def data_generator(N, seq_length):
            X_num = torch.tensor(rs.rand(N, 1, seq_length).astype(np.float32))    # torch.rand
            X_mask = torch.zeros([N, 1, seq_length])
            Y = torch.zeros([N, 1])
            for i in range(N):
                positions = np.random.choice(seq_length, size=2, replace=False)
                X_mask[i, 0, positions[0]] = 1
                X_mask[i, 0, positions[1]] = 1
                Y[i, 0] = X_num[i, 0, positions[0]] + X_num[i, 0, positions[1]]
            X = torch.cat((X_num, X_mask), dim=1)
            return Variable(X), Variable(Y)

        X_train, Y_train = data_generator(12, 12)
        X_test, Y_test = data_generator(4, 12)
        model = TCN(2, 1, [4] * 3, kernel_size=3, dropout=0.0)
        init_params(torch, model, 0)
        log("names", [n for n, _ in model.named_parameters()])
        lr = 4e-3
        optimizer = getattr(optim, 'Adam')(model.parameters(), lr=lr)
        batch_size, clip, log_interval = 5, 0.5, 2

        def train(epoch):
            model.train()
            batch_idx = 1
            total_loss = 0
            for i in range(0, X_train.size(0), batch_size):
                if i + batch_size > X_train.size(0):
                    x, y = X_train[i:], Y_train[i:]
                else:
                    x, y = X_train[i:(i+batch_size)], Y_train[i:(i+batch_size)]
                optimizer.zero_grad()
                output = model(x)
                loss = F.mse_loss(output, y)
                loss.backward()
                if clip > 0:
                    log(f"norm {epoch}.{i}", torch.nn.utils.clip_grad_norm_(model.parameters(), clip))
                optimizer.step()
                batch_idx += 1
                total_loss += loss.item()
                if batch_idx % log_interval == 0:
                    cur_loss = total_loss / log_interval
                    processed = min(i+batch_size, X_train.size(0))
                    print('Train Epoch: {:2d} [{:6d}/{:6d} ({:.0f}%)]\tLearning rate: {:.4f}\tLoss: {:.4f}'.format(
                        epoch, processed, X_train.size(0), 100.*processed/X_train.size(0), lr, cur_loss))
                    total_loss = 0

        def evaluate():
            model.eval()
            with torch.no_grad():
                output = model(X_test)
                test_loss = F.mse_loss(output, Y_test)
                return test_loss.item()

        for ep in range(1, 3):
            train(ep)
            log(f"test loss {ep}", evaluate())
        log("weight_g", model.tcn.network[0].conv1.weight_g)
        log("weight", model.tcn.network[2].conv2.weight)
        log("weight_v grad", model.tcn.network[1].conv1.weight_v.grad)
    run_both(program)


# milesial/Pytorch-UNet unet/unet_parts.py and unet_model.py (DoubleConv, Down, Up both ways:
# bilinear Upsample(align_corners=True) and ConvTranspose2d; Up.forward's F.pad with a list of
# one-element tensors ``diffX // 2``), utils/dice_score.py (dice_coeff with torch.where,
# multiclass_dice_coeff's flatten(0, 1), dice_loss) and train.py's step (CrossEntropyLoss +
# dice_loss of softmax vs one_hot(...).permute(0, 3, 1, 2), RMSprop(foreach=True, momentum=0.999),
# torch.cuda.amp.GradScaler(enabled=False) with unscale_ and clip_grad_norm_, ReduceLROnPlateau
# ('max') on the dice score, evaluate()'s argmax one_hot dice); widths 64..1024 -> 2..32, one
# 2 images of 1x35x35 (odd sizes: the pads are not zero), 2 steps (1 for the bilinear net); the
# predicted masks themselves pass 18 convolutions and batch norms of 2 images and are compared
# through the losses, gradients and dice scores
def test_milesial_unet():
    def program(torch, log):
        import warnings
        nn, F = torch.nn, torch.nn.functional
        Tensor = torch.Tensor

        class DoubleConv(nn.Module):
            def __init__(self, in_channels, out_channels, mid_channels=None):
                super().__init__()
                if not mid_channels:
                    mid_channels = out_channels
                self.double_conv = nn.Sequential(
                    nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
                    nn.BatchNorm2d(mid_channels),
                    nn.ReLU(inplace=True),
                    nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
                    nn.BatchNorm2d(out_channels),
                    nn.ReLU(inplace=True)
                )

            def forward(self, x):
                return self.double_conv(x)

        class Down(nn.Module):
            def __init__(self, in_channels, out_channels):
                super().__init__()
                self.maxpool_conv = nn.Sequential(
                    nn.MaxPool2d(2),
                    DoubleConv(in_channels, out_channels)
                )

            def forward(self, x):
                return self.maxpool_conv(x)

        class Up(nn.Module):
            def __init__(self, in_channels, out_channels, bilinear=True):
                super().__init__()
                if bilinear:
                    self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
                    self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
                else:
                    self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
                    self.conv = DoubleConv(in_channels, out_channels)

            def forward(self, x1, x2):
                x1 = self.up(x1)
                diffY = torch.tensor([x2.size()[2] - x1.size()[2]])
                diffX = torch.tensor([x2.size()[3] - x1.size()[3]])
                x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2,
                                diffY // 2, diffY - diffY // 2])
                x = torch.cat([x2, x1], dim=1)
                return self.conv(x)

        class OutConv(nn.Module):
            def __init__(self, in_channels, out_channels):
                super(OutConv, self).__init__()
                self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

            def forward(self, x):
                return self.conv(x)

        class UNet(nn.Module):
            def __init__(self, n_channels, n_classes, bilinear=False):
                super(UNet, self).__init__()
                self.n_channels = n_channels
                self.n_classes = n_classes
                self.bilinear = bilinear
                self.inc = (DoubleConv(n_channels, 2))
                self.down1 = (Down(2, 4))
                self.down2 = (Down(4, 8))
                self.down3 = (Down(8, 16))
                factor = 2 if bilinear else 1
                self.down4 = (Down(16, 32 // factor))
                self.up1 = (Up(32, 16 // factor, bilinear))
                self.up2 = (Up(16, 8 // factor, bilinear))
                self.up3 = (Up(8, 4 // factor, bilinear))
                self.up4 = (Up(4, 2, bilinear))
                self.outc = (OutConv(2, n_classes))

            def forward(self, x):
                x1 = self.inc(x)
                x2 = self.down1(x1)
                x3 = self.down2(x2)
                x4 = self.down3(x3)
                x5 = self.down4(x4)
                x = self.up1(x5, x4)
                x = self.up2(x, x3)
                x = self.up3(x, x2)
                x = self.up4(x, x1)
                logits = self.outc(x)
                return logits

        def dice_coeff(input: Tensor, target: Tensor, reduce_batch_first: bool = False, epsilon: float = 1e-6):
            assert input.size() == target.size()
            assert input.dim() == 3 or not reduce_batch_first
            sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)
            inter = 2 * (input * target).sum(dim=sum_dim)
            sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
            sets_sum = torch.where(sets_sum == 0, inter, sets_sum)
            dice = (inter + epsilon) / (sets_sum + epsilon)
            return dice.mean()

        def multiclass_dice_coeff(input: Tensor, target: Tensor, reduce_batch_first: bool = False, epsilon: float = 1e-6):
            return dice_coeff(input.flatten(0, 1), target.flatten(0, 1), reduce_batch_first, epsilon)

        def dice_loss(input: Tensor, target: Tensor, multiclass: bool = False):
            fn = multiclass_dice_coeff if multiclass else dice_coeff
            return 1 - fn(input, target, reduce_batch_first=True)

        for bilinear in (False, True):
            model = init_params(torch, UNet(n_channels=1, n_classes=2, bilinear=bilinear), 0, scale=0.5)
            optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-5, weight_decay=1e-8, momentum=0.999, foreach=True)
            scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, 'max', patience=5)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                grad_scaler = torch.cuda.amp.GradScaler(enabled=False)
            criterion = nn.CrossEntropyLoss() if model.n_classes > 1 else nn.BCEWithLogitsLoss()
            images = randn(torch, (2, 1, 35, 35), 1).to(device='cpu', dtype=torch.float32, memory_format=torch.channels_last)
            true_masks = torch.tensor(np.random.RandomState(2).randint(0, 2, (2, 35, 35))).to(device='cpu', dtype=torch.long)
            for step in range(1 if bilinear else 2):
                model.train()
                masks_pred = model(images)
                loss = criterion(masks_pred, true_masks)
                loss += dice_loss(
                    F.softmax(masks_pred, dim=1).float(),
                    F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float(),
                    multiclass=True
                )
                optimizer.zero_grad(set_to_none=True)
                grad_scaler.scale(loss).backward()
                grad_scaler.unscale_(optimizer)
                log(f"norm {bilinear} {step}", torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
                grad_scaler.step(optimizer)
                grad_scaler.update()
                log(f"loss {bilinear} {step}", loss)
            model.eval()
            with torch.no_grad():
                mask_pred = model(images)
                mask_true = F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float()
                mask_pred = F.one_hot(mask_pred.argmax(dim=1), model.n_classes).permute(0, 3, 1, 2).float()
                dice_score = multiclass_dice_coeff(mask_pred[:, 1:], mask_true[:, 1:], reduce_batch_first=False)
            scheduler.step(dice_score)
            log(f"dice {bilinear}", dice_score)
            log(f"up1 grad {bilinear}", model.up1.conv.double_conv[0].weight.grad)
    run_both(program)


# Jongchan/attention-module MODELS/cbam.py (BasicConv with BatchNorm2d(momentum=0.01),
# ChannelGate over pool_types avg/max/lp/lse: F.avg_pool2d/max_pool2d/lp_pool2d with the input's
# own (H, W) as kernel and stride, logsumexp_2d by hand, F.sigmoid(...).unsqueeze(2).unsqueeze(3)
# .expand_as(x); ChannelPool's cat of torch.max(x,1)[0] and torch.mean(x,1); SpatialGate; CBAM
# with and without the spatial gate); gate_channels 16, reduction 4, 2 images of 5x6, SGD steps
def test_jongchan_cbam():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class BasicConv(nn.Module):
            def __init__(self, in_planes, out_planes, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                         relu=True, bn=True, bias=False):
                super(BasicConv, self).__init__()
                self.out_channels = out_planes
                self.conv = nn.Conv2d(in_planes, out_planes, kernel_size=kernel_size, stride=stride, padding=padding,
                                      dilation=dilation, groups=groups, bias=bias)
                self.bn = nn.BatchNorm2d(out_planes, eps=1e-5, momentum=0.01, affine=True) if bn else None
                self.relu = nn.ReLU() if relu else None

            def forward(self, x):
                x = self.conv(x)
                if self.bn is not None:
                    x = self.bn(x)
                if self.relu is not None:
                    x = self.relu(x)
                return x

        class Flatten(nn.Module):
            def forward(self, x):
                return x.view(x.size(0), -1)

        class ChannelGate(nn.Module):
            def __init__(self, gate_channels, reduction_ratio=16, pool_types=['avg', 'max']):
                super(ChannelGate, self).__init__()
                self.gate_channels = gate_channels
                self.mlp = nn.Sequential(
                    Flatten(),
                    nn.Linear(gate_channels, gate_channels // reduction_ratio),
                    nn.ReLU(),
                    nn.Linear(gate_channels // reduction_ratio, gate_channels)
                )
                self.pool_types = pool_types

            def forward(self, x):
                channel_att_sum = None
                for pool_type in self.pool_types:
                    if pool_type == 'avg':
                        avg_pool = F.avg_pool2d(x, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
                        channel_att_raw = self.mlp(avg_pool)
                    elif pool_type == 'max':
                        max_pool = F.max_pool2d(x, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
                        channel_att_raw = self.mlp(max_pool)
                    elif pool_type == 'lp':
                        lp_pool = F.lp_pool2d(x, 2, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
                        channel_att_raw = self.mlp(lp_pool)
                    elif pool_type == 'lse':
                        lse_pool = logsumexp_2d(x)
                        channel_att_raw = self.mlp(lse_pool)
                    if channel_att_sum is None:
                        channel_att_sum = channel_att_raw
                    else:
                        channel_att_sum = channel_att_sum + channel_att_raw
                scale = F.sigmoid(channel_att_sum).unsqueeze(2).unsqueeze(3).expand_as(x)
                return x * scale

        def logsumexp_2d(tensor):
            tensor_flatten = tensor.view(tensor.size(0), tensor.size(1), -1)
            s, _ = torch.max(tensor_flatten, dim=2, keepdim=True)
            outputs = s + (tensor_flatten - s).exp().sum(dim=2, keepdim=True).log()
            return outputs

        class ChannelPool(nn.Module):
            def forward(self, x):
                return torch.cat((torch.max(x, 1)[0].unsqueeze(1), torch.mean(x, 1).unsqueeze(1)), dim=1)

        class SpatialGate(nn.Module):
            def __init__(self):
                super(SpatialGate, self).__init__()
                kernel_size = 7
                self.compress = ChannelPool()
                self.spatial = BasicConv(2, 1, kernel_size, stride=1, padding=(kernel_size-1) // 2, relu=False)

            def forward(self, x):
                x_compress = self.compress(x)
                x_out = self.spatial(x_compress)
                scale = F.sigmoid(x_out)
                return x * scale

        class CBAM(nn.Module):
            def __init__(self, gate_channels, reduction_ratio=16, pool_types=['avg', 'max'], no_spatial=False):
                super(CBAM, self).__init__()
                self.ChannelGate = ChannelGate(gate_channels, reduction_ratio, pool_types)
                self.no_spatial = no_spatial
                if not no_spatial:
                    self.SpatialGate = SpatialGate()

            def forward(self, x):
                x_out = self.ChannelGate(x)
                if not self.no_spatial:
                    x_out = self.SpatialGate(x_out)
                return x_out

        net = nn.Sequential(BasicConv(3, 16, 3, padding=1), CBAM(16, 4, ['avg', 'max', 'lp', 'lse']),
                            CBAM(16, 4, no_spatial=True), nn.AdaptiveAvgPool2d(1), Flatten(), nn.Linear(16, 3))
        init_params(torch, net, 0)
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        x = randn(torch, (2, 3, 5, 6), 1, scale=2.0)
        y = torch.tensor([2, 0])
        for step in range(2):
            opt.zero_grad()
            out = net(x)
            loss = F.cross_entropy(out, y)
            loss.backward()
            opt.step()
            log(f"step{step}", (out, loss))
        log("grads", [p.grad for p in net.parameters()])
        log("bn", (net[1].SpatialGate.spatial.bn.running_mean, net[1].SpatialGate.spatial.bn.running_var,
                   net[0].bn.num_batches_tracked))
        net.eval()
        log("eval", net(x))
    run_both(program)


# harvardnlp/annotated-transformer the_annotated_transformer.py (EncoderDecoder, Generator,
# clones by copy.deepcopy, the hand-written LayerNorm with an unbiased std, SublayerConnection,
# Encoder/Decoder layers, subsequent_mask's triu(...).type(torch.uint8) == 0, attention's
# masked_fill(mask == 0, -1e9), MultiHeadedAttention's view/transpose/contiguous, Embeddings *
# sqrt(d_model), PositionalEncoding's buffer sliced with requires_grad_(False), make_model's
# xavier_uniform_ of every p.dim() > 1; the copy task: Batch with make_std_mask and
# ``(self.tgt_y != pad).data.sum()``, LabelSmoothing (x.data.clone(), scatter_, index_fill_ of
# nonzero rows, KLDivLoss(reduction="sum")), SimpleLossCompute returning ``sloss.data * norm``,
# run_epoch's '%6.2f' / '%7.1f' formatting of 0-d tensors, rate() through LambdaLR, Adam(betas
# (0.9, 0.98), eps=1e-9), greedy_decode's ``torch.zeros(1, 1).type_as(src.data).fill_(next_word)``);
# V 11, N 2 -> 1, d_model 512 -> 8, d_ff 16, h 2, dropout 0 (masks are a random stream; also the
# attention's 0.1, which make_model leaves at its default), data_gen's randint from numpy, length
# 10 -> 5, one epoch of 2 batches of 2, greedy_decode to length 2 (each length decodes at new
# shapes), and a clock stand-in for time.time (the tokens/sec column
# is otherwise a wall-clock reading)
def test_harvardnlp_annotated_transformer_copy_task():
    def program(torch, log):
        import copy
        nn = torch.nn
        log_softmax = torch.nn.functional.log_softmax
        LambdaLR = torch.optim.lr_scheduler.LambdaLR

        class time:     # a deterministic clock: one second per call
            now = [0.0]

            @staticmethod
            def time():
                time.now[0] += 1.0
                return time.now[0]

        class EncoderDecoder(nn.Module):
            def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
                super(EncoderDecoder, self).__init__()
                self.encoder = encoder
                self.decoder = decoder
                self.src_embed = src_embed
                self.tgt_embed = tgt_embed
                self.generator = generator

            def forward(self, src, tgt, src_mask, tgt_mask):
                return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

            def encode(self, src, src_mask):
                return self.encoder(self.src_embed(src), src_mask)

            def decode(self, memory, src_mask, tgt, tgt_mask):
                return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)

        class Generator(nn.Module):
            def __init__(self, d_model, vocab):
                super(Generator, self).__init__()
                self.proj = nn.Linear(d_model, vocab)

            def forward(self, x):
                return log_softmax(self.proj(x), dim=-1)

        def clones(module, N):
            return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])

        class Encoder(nn.Module):
            def __init__(self, layer, N):
                super(Encoder, self).__init__()
                self.layers = clones(layer, N)
                self.norm = LayerNorm(layer.size)

            def forward(self, x, mask):
                for layer in self.layers:
                    x = layer(x, mask)
                return self.norm(x)

        class LayerNorm(nn.Module):
            def __init__(self, features, eps=1e-6):
                super(LayerNorm, self).__init__()
                self.a_2 = nn.Parameter(torch.ones(features))
                self.b_2 = nn.Parameter(torch.zeros(features))
                self.eps = eps

            def forward(self, x):
                mean = x.mean(-1, keepdim=True)
                std = x.std(-1, keepdim=True)
                return self.a_2 * (x - mean) / (std + self.eps) + self.b_2

        class SublayerConnection(nn.Module):
            def __init__(self, size, dropout):
                super(SublayerConnection, self).__init__()
                self.norm = LayerNorm(size)
                self.dropout = nn.Dropout(dropout)

            def forward(self, x, sublayer):
                return x + self.dropout(sublayer(self.norm(x)))

        class EncoderLayer(nn.Module):
            def __init__(self, size, self_attn, feed_forward, dropout):
                super(EncoderLayer, self).__init__()
                self.self_attn = self_attn
                self.feed_forward = feed_forward
                self.sublayer = clones(SublayerConnection(size, dropout), 2)
                self.size = size

            def forward(self, x, mask):
                x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
                return self.sublayer[1](x, self.feed_forward)

        class Decoder(nn.Module):
            def __init__(self, layer, N):
                super(Decoder, self).__init__()
                self.layers = clones(layer, N)
                self.norm = LayerNorm(layer.size)

            def forward(self, x, memory, src_mask, tgt_mask):
                for layer in self.layers:
                    x = layer(x, memory, src_mask, tgt_mask)
                return self.norm(x)

        class DecoderLayer(nn.Module):
            def __init__(self, size, self_attn, src_attn, feed_forward, dropout):
                super(DecoderLayer, self).__init__()
                self.size = size
                self.self_attn = self_attn
                self.src_attn = src_attn
                self.feed_forward = feed_forward
                self.sublayer = clones(SublayerConnection(size, dropout), 3)

            def forward(self, x, memory, src_mask, tgt_mask):
                m = memory
                x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
                x = self.sublayer[1](x, lambda x: self.src_attn(x, m, m, src_mask))
                return self.sublayer[2](x, self.feed_forward)

        def subsequent_mask(size):
            attn_shape = (1, size, size)
            subsequent_mask = torch.triu(torch.ones(attn_shape), diagonal=1).type(
                torch.uint8
            )
            return subsequent_mask == 0

        def attention(query, key, value, mask=None, dropout=None):
            d_k = query.size(-1)
            scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
            if mask is not None:
                scores = scores.masked_fill(mask == 0, -1e9)
            p_attn = scores.softmax(dim=-1)
            if dropout is not None:
                p_attn = dropout(p_attn)
            return torch.matmul(p_attn, value), p_attn

        class MultiHeadedAttention(nn.Module):
            def __init__(self, h, d_model, dropout=0.1):
                super(MultiHeadedAttention, self).__init__()
                assert d_model % h == 0
                self.d_k = d_model // h
                self.h = h
                self.linears = clones(nn.Linear(d_model, d_model), 4)
                self.attn = None
                self.dropout = nn.Dropout(p=dropout)

            def forward(self, query, key, value, mask=None):
                if mask is not None:
                    mask = mask.unsqueeze(1)
                nbatches = query.size(0)
                query, key, value = [
                    lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                    for lin, x in zip(self.linears, (query, key, value))
                ]
                x, self.attn = attention(
                    query, key, value, mask=mask, dropout=self.dropout
                )
                x = (
                    x.transpose(1, 2)
                    .contiguous()
                    .view(nbatches, -1, self.h * self.d_k)
                )
                del query
                del key
                del value
                return self.linears[-1](x)

        class PositionwiseFeedForward(nn.Module):
            def __init__(self, d_model, d_ff, dropout=0.1):
                super(PositionwiseFeedForward, self).__init__()
                self.w_1 = nn.Linear(d_model, d_ff)
                self.w_2 = nn.Linear(d_ff, d_model)
                self.dropout = nn.Dropout(dropout)

            def forward(self, x):
                return self.w_2(self.dropout(self.w_1(x).relu()))

        class Embeddings(nn.Module):
            def __init__(self, d_model, vocab):
                super(Embeddings, self).__init__()
                self.lut = nn.Embedding(vocab, d_model)
                self.d_model = d_model

            def forward(self, x):
                return self.lut(x) * math.sqrt(self.d_model)

        class PositionalEncoding(nn.Module):
            def __init__(self, d_model, dropout, max_len=5000):
                super(PositionalEncoding, self).__init__()
                self.dropout = nn.Dropout(p=dropout)
                pe = torch.zeros(max_len, d_model)
                position = torch.arange(0, max_len).unsqueeze(1)
                div_term = torch.exp(
                    torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model)
                )
                pe[:, 0::2] = torch.sin(position * div_term)
                pe[:, 1::2] = torch.cos(position * div_term)
                pe = pe.unsqueeze(0)
                self.register_buffer("pe", pe)

            def forward(self, x):
                x = x + self.pe[:, : x.size(1)].requires_grad_(False)
                return self.dropout(x)

        def make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1):
            c = copy.deepcopy
            attn = MultiHeadedAttention(h, d_model)
            ff = PositionwiseFeedForward(d_model, d_ff, dropout)
            position = PositionalEncoding(d_model, dropout, max_len=50)
            model = EncoderDecoder(
                Encoder(EncoderLayer(d_model, c(attn), c(ff), dropout), N),
                Decoder(DecoderLayer(d_model, c(attn), c(attn), c(ff), dropout), N),
                nn.Sequential(Embeddings(d_model, src_vocab), c(position)),
                nn.Sequential(Embeddings(d_model, tgt_vocab), c(position)),
                Generator(d_model, tgt_vocab),
            )
            for p in model.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)
            return model

        class Batch:
            def __init__(self, src, tgt=None, pad=2):
                self.src = src
                self.src_mask = (src != pad).unsqueeze(-2)
                if tgt is not None:
                    self.tgt = tgt[:, :-1]
                    self.tgt_y = tgt[:, 1:]
                    self.tgt_mask = self.make_std_mask(self.tgt, pad)
                    self.ntokens = (self.tgt_y != pad).data.sum()

            @staticmethod
            def make_std_mask(tgt, pad):
                tgt_mask = (tgt != pad).unsqueeze(-2)
                tgt_mask = tgt_mask & subsequent_mask(tgt.size(-1)).type_as(
                    tgt_mask.data
                )
                return tgt_mask

        class TrainState:
            step: int = 0
            accum_step: int = 0
            samples: int = 0
            tokens: int = 0

        def run_epoch(data_iter, model, loss_compute, optimizer, scheduler, mode="train", accum_iter=1,
                      train_state=TrainState()):
            start = time.time()
            total_tokens = 0
            total_loss = 0
            tokens = 0
            n_accum = 0
            for i, batch in enumerate(data_iter):
                out = model.forward(
                    batch.src, batch.tgt, batch.src_mask, batch.tgt_mask
                )
                loss, loss_node = loss_compute(out, batch.tgt_y, batch.ntokens)
                if mode == "train" or mode == "train+log":
                    loss_node.backward()
                    train_state.step += 1
                    train_state.samples += batch.src.shape[0]
                    train_state.tokens += batch.ntokens
                    if i % accum_iter == 0:
                        optimizer.step()
                        optimizer.zero_grad(set_to_none=True)
                        n_accum += 1
                        train_state.accum_step += 1
                    scheduler.step()
                total_loss += loss
                total_tokens += batch.ntokens
                tokens += batch.ntokens
                if i % 40 == 1 and (mode == "train" or mode == "train+log"):
                    lr = optimizer.param_groups[0]["lr"]
                    elapsed = time.time() - start
                    print(
                        (
                            "Epoch Step: %6d | Accumulation Step: %3d | Loss: %6.2f "
                            + "| Tokens / Sec: %7.1f | Learning Rate: %6.1e"
                        )
                        % (i, n_accum, loss / batch.ntokens, tokens / elapsed, lr)
                    )
                    start = time.time()
                    tokens = 0
                del loss
                del loss_node
            return total_loss / total_tokens, train_state

        def rate(step, model_size, factor, warmup):
            if step == 0:
                step = 1
            return factor * (
                model_size ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5))
            )

        class LabelSmoothing(nn.Module):
            def __init__(self, size, padding_idx, smoothing=0.0):
                super(LabelSmoothing, self).__init__()
                self.criterion = nn.KLDivLoss(reduction="sum")
                self.padding_idx = padding_idx
                self.confidence = 1.0 - smoothing
                self.smoothing = smoothing
                self.size = size
                self.true_dist = None

            def forward(self, x, target):
                assert x.size(1) == self.size
                true_dist = x.data.clone()
                true_dist.fill_(self.smoothing / (self.size - 2))
                true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
                true_dist[:, self.padding_idx] = 0
                mask = torch.nonzero(target.data == self.padding_idx)
                if mask.dim() > 0:
                    true_dist.index_fill_(0, mask.squeeze(), 0.0)
                self.true_dist = true_dist
                return self.criterion(x, true_dist.clone().detach())

        rs = np.random.RandomState(0)

        def data_gen(V, batch_size, nbatches):
            for i in range(nbatches):
                data = torch.tensor(rs.randint(1, V, size=(batch_size, 5)))     # torch.randint, length 10 -> 5
                data[:, 0] = 1
                src = data.requires_grad_(False).clone().detach()
                tgt = data.requires_grad_(False).clone().detach()
                yield Batch(src, tgt, 0)

        class SimpleLossCompute:
            def __init__(self, generator, criterion):
                self.generator = generator
                self.criterion = criterion

            def __call__(self, x, y, norm):
                x = self.generator(x)
                sloss = (
                    self.criterion(
                        x.contiguous().view(-1, x.size(-1)), y.contiguous().view(-1)
                    )
                    / norm
                )
                return sloss.data * norm, sloss

        def greedy_decode(model, src, src_mask, max_len, start_symbol):
            memory = model.encode(src, src_mask)
            ys = torch.zeros(1, 1).fill_(start_symbol).type_as(src.data)
            for i in range(max_len - 1):
                out = model.decode(
                    memory, src_mask, ys, subsequent_mask(ys.size(1)).type_as(src.data)
                )
                prob = model.generator(out[:, -1])
                _, next_word = torch.max(prob, dim=1)
                next_word = next_word.data[0]
                ys = torch.cat(
                    [ys, torch.zeros(1, 1).type_as(src.data).fill_(next_word)], dim=1
                )
            return ys

        crit = LabelSmoothing(5, 0, 0.4)
        predict = torch.FloatTensor([[0, 0.2, 0.7, 0.1, 0]] * 5)
        log("smoothing loss", crit(x=predict.log(), target=torch.LongTensor([2, 1, 0, 3, 3])))
        log("true_dist", crit.true_dist)
        log("subsequent_mask", subsequent_mask(4))

        V = 11
        criterion = LabelSmoothing(size=V, padding_idx=0, smoothing=0.0)
        model = make_model(V, V, N=1, d_model=8, d_ff=16, h=2, dropout=0.0)
        init_params(torch, model, 0, scale=0.5)
        for m in model.modules():        # make_model leaves MultiHeadedAttention's dropout at 0.1
            if isinstance(m, nn.Dropout):
                m.p = 0.0
        optimizer = torch.optim.Adam(model.parameters(), lr=0.5, betas=(0.9, 0.98), eps=1e-9)
        lr_scheduler = LambdaLR(
            optimizer=optimizer,
            lr_lambda=lambda step: rate(step, model_size=model.src_embed[0].d_model, factor=1.0, warmup=400),
        )
        batch_size = 2
        for epoch in range(1):
            model.train()
            res = run_epoch(data_gen(V, batch_size, 2), model,
                            SimpleLossCompute(model.generator, criterion), optimizer, lr_scheduler,
                            mode="train")
            log(f"train {epoch}", (res[0], res[1].step, res[1].tokens))
            model.eval()
            log(f"eval {epoch}", run_epoch(data_gen(V, batch_size, 1), model,
                                           SimpleLossCompute(model.generator, criterion),
                                           None, None, mode="eval")[0])
        model.eval()
        src = torch.LongTensor([[0, 1, 2, 3, 4]])
        max_len = src.shape[1]
        src_mask = torch.ones(1, 1, max_len)
        log("greedy", greedy_decode(model, src, src_mask, max_len=2, start_symbol=0))
        log("attn", model.decoder.layers[0].src_attn.attn)
    run_both(program)


# pytorch/examples imagenet/main.py's train() bookkeeping (AverageMeter, ProgressMeter with its
# '{:' + str(num_digits) + 'd}' batch format, Summary enums, accuracy(output, target, topk=(1, 5))
# on ``pred.t()`` and ``correct[:k].reshape(-1)``, ``losses.update(loss.item(), images.size(0))``,
# adjust-by-StepLR, the best-acc1 bookkeeping of validate()) around a small classifier; the old
# ``correct[:k].view(-1)`` of earlier versions raises RuntimeError on the transposed comparison
# for k > 1 (the strict xfail below); resnet18 -> a conv net with 10 classes, 2 epochs of 3 numpy batches, timing columns
# left out (wall-clock readings)
def imagenet_program(old_top5):
    def program(torch, log):
        from enum import Enum
        nn = torch.nn

        class Summary(Enum):
            NONE = 0
            AVERAGE = 1
            SUM = 2
            COUNT = 3

        class AverageMeter(object):
            def __init__(self, name, fmt=':f', summary_type=Summary.AVERAGE):
                self.name = name
                self.fmt = fmt
                self.summary_type = summary_type
                self.reset()

            def reset(self):
                self.val = 0
                self.avg = 0
                self.sum = 0
                self.count = 0

            def update(self, val, n=1):
                self.val = val
                self.sum += val * n
                self.count += n
                self.avg = self.sum / self.count

            def __str__(self):
                fmtstr = '{name} {val' + self.fmt + '} ({avg' + self.fmt + '})'
                return fmtstr.format(**self.__dict__)

            def summary(self):
                fmtstr = ''
                if self.summary_type is Summary.NONE:
                    fmtstr = ''
                elif self.summary_type is Summary.AVERAGE:
                    fmtstr = '{name} {avg:.3f}'
                elif self.summary_type is Summary.SUM:
                    fmtstr = '{name} {sum:.3f}'
                elif self.summary_type is Summary.COUNT:
                    fmtstr = '{name} {count:.3f}'
                else:
                    raise ValueError('invalid summary type %r' % self.summary_type)
                return fmtstr.format(**self.__dict__)

        class ProgressMeter(object):
            def __init__(self, num_batches, meters, prefix=""):
                self.batch_fmtstr = self._get_batch_fmtstr(num_batches)
                self.meters = meters
                self.prefix = prefix

            def display(self, batch):
                entries = [self.prefix + self.batch_fmtstr.format(batch)]
                entries += [str(meter) for meter in self.meters]
                print('\t'.join(entries))

            def display_summary(self):
                entries = [" *"]
                entries += [meter.summary() for meter in self.meters]
                print(' '.join(entries))

            def _get_batch_fmtstr(self, num_batches):
                num_digits = len(str(num_batches // 1))
                fmt = '{:' + str(num_digits) + 'd}'
                return '[' + fmt + '/' + fmt.format(num_batches) + ']'

        def accuracy(output, target, topk=(1,)):
            with torch.no_grad():
                maxk = max(topk)
                batch_size = target.size(0)
                _, pred = output.topk(maxk, 1, True, True)
                pred = pred.t()
                correct = pred.eq(target.view(1, -1).expand_as(pred))
                res = []
                for k in topk:
                    correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
                    res.append(correct_k.mul_(100.0 / batch_size))
                return res

        def old_accuracy(output, target, topk=(1,)):
            maxk = max(topk)
            batch_size = target.size(0)
            _, pred = output.topk(maxk, 1, True, True)
            pred = pred.t()
            correct = pred.eq(target.view(1, -1).expand_as(pred))
            res = []
            for k in topk:
                correct_k = correct[:k].view(-1).float().sum(0, keepdim=True)
                res.append(correct_k.mul_(100.0 / batch_size))
            return res

        model = init_params(torch, nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True),
                                                 nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(16, 10)), 0,
                            scale=0.5)
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.1)
        rs = np.random.RandomState(0)
        train_loader = [(torch.tensor(rs.randn(6, 3, 4, 4).astype(np.float32)), torch.tensor(rs.randint(0, 10, 6)))
                        for _ in range(3)]
        val_loader = train_loader[:2]
        best_acc1 = 0
        for epoch in range(2):
            losses = AverageMeter('Loss', ':.4e')
            top1 = AverageMeter('Acc@1', ':6.2f')
            top5 = AverageMeter('Acc@5', ':6.2f')
            progress = ProgressMeter(len(train_loader), [losses, top1, top5], prefix="Epoch: [{}]".format(epoch))
            model.train()
            for i, (images, target) in enumerate(train_loader):
                output = model(images)
                loss = criterion(output, target)
                acc1, acc5 = accuracy(output, target, topk=(1, 5))
                losses.update(loss.item(), images.size(0))
                top1.update(acc1[0], images.size(0))
                top5.update(acc5[0], images.size(0))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if i % 2 == 0:
                    progress.display(i + 1)
            model.eval()
            v_top1 = AverageMeter('Acc@1', ':6.2f', Summary.AVERAGE)
            v_losses = AverageMeter('Loss', ':.4e', Summary.NONE)
            with torch.no_grad():
                for i, (images, target) in enumerate(val_loader):
                    output = model(images)
                    v_losses.update(criterion(output, target).item(), images.size(0))
                    acc1, = accuracy(output, target, topk=(1,))
                    v_top1.update(acc1[0], images.size(0))
            ProgressMeter(len(val_loader), [v_top1, v_losses], prefix='Test: ').display_summary()
            acc1 = v_top1.avg
            scheduler.step()
            is_best = acc1 > best_acc1
            best_acc1 = max(acc1, best_acc1)
            log(f"epoch {epoch}", (losses.avg, top1.avg, top5.sum, is_best, best_acc1, scheduler.get_last_lr()))
        log("old top1", old_accuracy(model(train_loader[0][0]), train_loader[0][1], topk=(1,)))
        if old_top5:
            try:
                old_accuracy(model(train_loader[0][0]), train_loader[0][1], topk=(1, 5))
            except RuntimeError as e:
                log("old accuracy", type(e).__mro__[1] if type(e).__module__ != "builtins" else type(e))
    return program


def test_pytorch_examples_imagenet_meters_accuracy():
    run_both(imagenet_program(old_top5=False))


@pytest.mark.xfail(strict=True, reason="NOTE [storage layouts]: a pointwise op on a plain transposed view "
                   "(``pred.t().eq(...)``) gives a contiguous result in tracegrad, where torch keeps the "
                   "view's order, so the old ``correct[:k].view(-1)`` does not raise")
def test_pytorch_examples_imagenet_old_accuracy_view_raises():
    run_both(imagenet_program(old_top5=True))


# gram-ai/capsule-networks capsule_network.py (the softmax helper over a transposed dim with an
# implicit-dim F.softmax, CapsuleLayer's squash and dynamic routing ``x[None, :, :, None, :] @
# self.route_weights[:, None, :, :, :]``, primary capsules as a ModuleList of convs, CapsuleNet's
# ``.squeeze().transpose(0, 1)``, ``(x ** 2).sum(dim=-1) ** 0.5``, the decoder on the chosen
# capsules, CapsuleLoss with MSELoss(size_average=True)) and processor()'s
# ``torch.sparse.torch.eye(NUM_CLASSES).index_select(dim=0, index=labels)``; NUM_CLASSES 10 -> 3,
# 256 channels -> 4, 8 primary capsules of 32 -> 4 of 2, 9x9 kernels -> 3x3 on 1x9x9 images,
# decoder 512/1024/784 -> 8/8/81, Adam steps; ``x[batch, index.data[0], :]`` indexes a 0-d tensor,
# which raises IndexError now (checked), so the rest runs with ``index.item()`` in its place
def test_gram_ai_capsule_network():
    def program(torch, log):
        import warnings
        nn, F = torch.nn, torch.nn.functional
        Variable = torch.autograd.Variable
        NUM_CLASSES = 3
        NUM_ROUTING_ITERATIONS = 3

        def softmax(input, dim=1):
            transposed_input = input.transpose(dim, len(input.size()) - 1)
            softmaxed_output = F.softmax(transposed_input.contiguous().view(-1, transposed_input.size(-1)))
            return softmaxed_output.view(*transposed_input.size()).transpose(dim, len(input.size()) - 1)

        class CapsuleLayer(nn.Module):
            def __init__(self, num_capsules, num_route_nodes, in_channels, out_channels, kernel_size=None, stride=None,
                         num_iterations=NUM_ROUTING_ITERATIONS):
                super(CapsuleLayer, self).__init__()
                self.num_route_nodes = num_route_nodes
                self.num_iterations = num_iterations
                self.num_capsules = num_capsules
                if num_route_nodes != -1:
                    self.route_logits = nn.Parameter(torch.zeros(num_capsules, 1, num_route_nodes, 1, 1))
                    self.route_weights = nn.Parameter(torch.randn(num_capsules, num_route_nodes, in_channels, out_channels))
                else:
                    self.capsules = nn.ModuleList(
                        [nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride, padding=0) for _ in
                         range(num_capsules)])

            def squash(self, tensor, dim=-1):
                squared_norm = (tensor ** 2).sum(dim=dim, keepdim=True)
                scale = squared_norm / (1 + squared_norm)
                return scale * tensor / torch.sqrt(squared_norm)

            def forward(self, x):
                if self.num_route_nodes != -1:
                    priors = x[None, :, :, None, :] @ self.route_weights[:, None, :, :, :]
                    logits = self.route_logits
                    for i in range(self.num_iterations):
                        probs = softmax(logits, dim=2)
                        outputs = self.squash((probs * priors).sum(dim=2, keepdim=True))
                        if i != self.num_iterations - 1:
                            delta_logits = (priors * outputs).sum(dim=-1, keepdim=True)
                            logits = logits + delta_logits
                else:
                    outputs = [capsule(x).view(x.size(0), -1, 1) for capsule in self.capsules]
                    outputs = torch.cat(outputs, dim=-1)
                    outputs = self.squash(outputs)
                return outputs

        class CapsuleNet(nn.Module):
            def __init__(self, fixed):
                super(CapsuleNet, self).__init__()
                self.fixed = fixed
                self.conv1 = nn.Conv2d(in_channels=1, out_channels=4, kernel_size=3, stride=1)
                self.primary_capsules = CapsuleLayer(num_capsules=4, num_route_nodes=-1, in_channels=4, out_channels=2,
                                                     kernel_size=3, stride=2)
                self.digit_capsules = CapsuleLayer(num_capsules=NUM_CLASSES, num_route_nodes=2 * 3 * 3, in_channels=4,
                                                   out_channels=5)
                self.decoder = nn.Sequential(
                    nn.Linear(5, 8),
                    nn.ReLU(inplace=True),
                    nn.Linear(8, 8),
                    nn.ReLU(inplace=True),
                    nn.Linear(8, 81),
                    nn.Sigmoid()
                )

            def forward(self, x, y=None):
                x = F.relu(self.conv1(x), inplace=True)
                x = self.primary_capsules(x)
                x = self.digit_capsules(x).squeeze().transpose(0, 1)
                classes = (x ** 2).sum(dim=-1) ** 0.5
                classes = F.softmax(classes)
                if y is None:
                    _, max_length_indices = classes.max(dim=1)
                else:
                    _, max_length_indices = y.max(dim=1)
                vectors = []
                for batch, index in enumerate(max_length_indices):
                    vectors.append(x[batch, index.item() if self.fixed else index.data[0], :])
                reconstructions = self.decoder(torch.stack(vectors, dim=0))
                return classes, reconstructions

        class CapsuleLoss(nn.Module):
            def __init__(self):
                super(CapsuleLoss, self).__init__()
                self.reconstruction_loss = nn.MSELoss(size_average=True)

            def forward(self, images, labels, classes, reconstructions):
                left = torch.clamp(0.9 - classes, min=0) ** 2
                right = torch.clamp(classes - 0.1, min=0) ** 2
                margin_loss = labels * left + 0.5 * (1 - labels) * right
                margin_loss = margin_loss.sum(dim=1).mean()
                reconstruction_loss = self.reconstruction_loss(reconstructions.view(images.size(0), -1),
                                                               images.view(images.size(0), -1))
                return margin_loss + 0.0005 * reconstruction_loss

        warnings.simplefilter("ignore")
        rs = np.random.RandomState(0)
        sample = (torch.tensor(rs.randint(0, 256, (3, 9, 9))), rs.randint(0, NUM_CLASSES, 3).tolist())

        def processor(sample, model):
            data = sample[0].unsqueeze(1).float() / 255.0
            labels = torch.LongTensor(sample[1])
            labels = torch.sparse.torch.eye(NUM_CLASSES).index_select(dim=0, index=labels)
            data = Variable(data)
            labels = Variable(labels)
            classes, reconstructions = model(data, labels)
            loss = capsule_loss(data, labels, classes, reconstructions)
            return loss, classes

        capsule_loss = CapsuleLoss()
        try:
            processor(sample, init_params(torch, CapsuleNet(False), 0, scale=0.5))
        except IndexError as e:
            log("index.data[0]", type(e).__mro__[1] if type(e).__module__ != "builtins" else type(e))
        model = init_params(torch, CapsuleNet(True), 0, scale=0.5)
        optimizer = torch.optim.Adam(model.parameters())
        for step in range(2):
            optimizer.zero_grad()
            loss, classes = processor(sample, model)
            loss.backward()
            optimizer.step()
            log(f"step{step}", (loss, classes))
        log("grads", [p.grad for p in model.parameters()])
        classes, reconstructions = model(sample[0].unsqueeze(1).float() / 255.0)
        log("predict", (classes, reconstructions.view(-1, 9, 9)[:, 4]))
    run_both(program)


# juho-lee/set_transformer modules.py (MAB's heads by ``torch.cat(Q.split(dim_split, 2), 0)``,
# bmm attention, the heads joined back by ``.split(Q.size(0), 0)``, the optional LayerNorms
# found through ``getattr(self, 'ln0', None)``; SAB, ISAB with inducing points from
# ``nn.Parameter(torch.Tensor(1, num_inds, dim_out))`` + xavier_uniform_ and ``self.I.repeat``,
# PMA) and models.py's SetTransformer, trained as the max-regression notebook does (gen_data
# with np.random, L1Loss, Adam); dim_hidden 128 -> 8, num_inds 32 -> 3, 4 heads -> 2, batches of
# 3 sets of 5 numbers, 3 steps
def test_juho_lee_set_transformer_max_regression():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class MAB(nn.Module):
            def __init__(self, dim_Q, dim_K, dim_V, num_heads, ln=False):
                super(MAB, self).__init__()
                self.dim_V = dim_V
                self.num_heads = num_heads
                self.fc_q = nn.Linear(dim_Q, dim_V)
                self.fc_k = nn.Linear(dim_K, dim_V)
                self.fc_v = nn.Linear(dim_K, dim_V)
                if ln:
                    self.ln0 = nn.LayerNorm(dim_V)
                    self.ln1 = nn.LayerNorm(dim_V)
                self.fc_o = nn.Linear(dim_V, dim_V)

            def forward(self, Q, K):
                Q = self.fc_q(Q)
                K, V = self.fc_k(K), self.fc_v(K)
                dim_split = self.dim_V // self.num_heads
                Q_ = torch.cat(Q.split(dim_split, 2), 0)
                K_ = torch.cat(K.split(dim_split, 2), 0)
                V_ = torch.cat(V.split(dim_split, 2), 0)
                A = torch.softmax(Q_.bmm(K_.transpose(1, 2))/math.sqrt(self.dim_V), 2)
                O = torch.cat((Q_ + A.bmm(V_)).split(Q.size(0), 0), 2)
                O = O if getattr(self, 'ln0', None) is None else self.ln0(O)
                O = O + F.relu(self.fc_o(O))
                O = O if getattr(self, 'ln1', None) is None else self.ln1(O)
                return O

        class SAB(nn.Module):
            def __init__(self, dim_in, dim_out, num_heads, ln=False):
                super(SAB, self).__init__()
                self.mab = MAB(dim_in, dim_in, dim_out, num_heads, ln=ln)

            def forward(self, X):
                return self.mab(X, X)

        class ISAB(nn.Module):
            def __init__(self, dim_in, dim_out, num_heads, num_inds, ln=False):
                super(ISAB, self).__init__()
                self.I = nn.Parameter(torch.Tensor(1, num_inds, dim_out))
                nn.init.xavier_uniform_(self.I)
                self.mab0 = MAB(dim_out, dim_in, dim_out, num_heads, ln=ln)
                self.mab1 = MAB(dim_in, dim_out, dim_out, num_heads, ln=ln)

            def forward(self, X):
                H = self.mab0(self.I.repeat(X.size(0), 1, 1), X)
                return self.mab1(X, H)

        class PMA(nn.Module):
            def __init__(self, dim, num_heads, num_seeds, ln=False):
                super(PMA, self).__init__()
                self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
                nn.init.xavier_uniform_(self.S)
                self.mab = MAB(dim, dim, dim, num_heads, ln=ln)

            def forward(self, X):
                return self.mab(self.S.repeat(X.size(0), 1, 1), X)

        class SetTransformer(nn.Module):
            def __init__(self, dim_input, num_outputs, dim_output, num_inds=32, dim_hidden=128, num_heads=4, ln=False):
                super(SetTransformer, self).__init__()
                self.enc = nn.Sequential(
                    ISAB(dim_input, dim_hidden, num_heads, num_inds, ln=ln),
                    ISAB(dim_hidden, dim_hidden, num_heads, num_inds, ln=ln))
                self.dec = nn.Sequential(
                    PMA(dim_hidden, num_heads, num_outputs, ln=ln),
                    SAB(dim_hidden, dim_hidden, num_heads, ln=ln),
                    SAB(dim_hidden, dim_hidden, num_heads, ln=ln),
                    nn.Linear(dim_hidden, dim_output))

            def forward(self, X):
                return self.dec(self.enc(X))

        def gen_data(batch_size, max_length=10, test=False):
            length = np.random.randint(1, max_length + 1)
            x = np.random.randint(1, 100, (batch_size, length))
            y = np.max(x, axis=1)
            x, y = np.expand_dims(x, axis=2), np.expand_dims(y, axis=1)
            return x, y

        np.random.seed(92)        # set sizes 3, 3, 3 (each new size costs compilations)
        model = init_params(torch, SetTransformer(dim_input=1, num_outputs=1, dim_output=1, num_inds=3, dim_hidden=8,
                                                  num_heads=2, ln=True), 0)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        criterion = nn.L1Loss()
        losses = []
        for step in range(3):
            x, y = gen_data(batch_size=3, max_length=5)
            x, y = torch.from_numpy(x).float(), torch.from_numpy(y).float()
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        log("losses", losses)
        log("grads", [p.grad for p in model.parameters()])
        plain = init_params(torch, SetTransformer(1, 1, 1, num_inds=3, dim_hidden=8, num_heads=2), 1)
        log("no layer norm", (plain(x), [n for n, _ in plain.named_parameters()][:6]))
    run_both(program)


# karpathy/minGPT mingpt/model.py, the version whose forwards are decorated with
# ``@autocast()`` from torch.cuda.amp (on a CPU-only machine: a warning, then autocast disabled)
# (GPTConfig's kwargs as attributes, CausalSelfAttention with the tril 'mask' buffer and
# ``masked_fill(self.mask[:,:,:T,:T] == 0, float('-inf'))``, Block, GPT's pos_emb Parameter,
# apply(_init_weights) with ``.data.normal_``/``zero_``/``fill_``, logits.view(-1, ...) cross
# entropy) and mingpt/utils.py of that time (top_k_logits's ``out[out < v[:, [-1]]] =
# -float('Inf')``, sample() under ``@torch.no_grad()`` cropping the context to block_size);
# n_layer 1, n_head 2, n_embd 8, block_size 4, vocab 7, pdrops 0 (dropout masks are a random
# stream), the normal_ init -> numpy-seeded parameters; sample=False (multinomial is random)
def test_karpathy_mingpt_autocast_model_and_sample():
    def program(torch, log):
        import warnings
        nn, F = torch.nn, torch.nn.functional
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            autocast = torch.cuda.amp.autocast

            class GPTConfig:
                embd_pdrop = 0.1
                resid_pdrop = 0.1
                attn_pdrop = 0.1

                def __init__(self, vocab_size, block_size, **kwargs):
                    self.vocab_size = vocab_size
                    self.block_size = block_size
                    for k, v in kwargs.items():
                        setattr(self, k, v)

            class CausalSelfAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    assert config.n_embd % config.n_head == 0
                    self.key = nn.Linear(config.n_embd, config.n_embd)
                    self.query = nn.Linear(config.n_embd, config.n_embd)
                    self.value = nn.Linear(config.n_embd, config.n_embd)
                    self.attn_drop = nn.Dropout(config.attn_pdrop)
                    self.resid_drop = nn.Dropout(config.resid_pdrop)
                    self.proj = nn.Linear(config.n_embd, config.n_embd)
                    self.register_buffer("mask", torch.tril(torch.ones(config.block_size, config.block_size))
                                         .view(1, 1, config.block_size, config.block_size))
                    self.n_head = config.n_head

                @autocast()
                def forward(self, x, layer_past=None):
                    B, T, C = x.size()
                    k = self.key(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    q = self.query(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    v = self.value(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                    att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float('-inf'))
                    att = F.softmax(att, dim=-1)
                    att = self.attn_drop(att)
                    y = att @ v
                    y = y.transpose(1, 2).contiguous().view(B, T, C)
                    y = self.resid_drop(self.proj(y))
                    return y

            class Block(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.ln1 = nn.LayerNorm(config.n_embd)
                    self.ln2 = nn.LayerNorm(config.n_embd)
                    self.attn = CausalSelfAttention(config)
                    self.mlp = nn.Sequential(
                        nn.Linear(config.n_embd, 4 * config.n_embd),
                        nn.GELU(),
                        nn.Linear(4 * config.n_embd, config.n_embd),
                        nn.Dropout(config.resid_pdrop),
                    )

                @autocast()
                def forward(self, x):
                    x = x + self.attn(self.ln1(x))
                    x = x + self.mlp(self.ln2(x))
                    return x

            class GPT(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
                    self.pos_emb = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd))
                    self.drop = nn.Dropout(config.embd_pdrop)
                    self.blocks = nn.Sequential(*[Block(config) for _ in range(config.n_layer)])
                    self.ln_f = nn.LayerNorm(config.n_embd)
                    self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
                    self.block_size = config.block_size
                    self.apply(self._init_weights)

                def _init_weights(self, module):
                    if isinstance(module, (nn.Linear, nn.Embedding)):
                        module.weight.data.normal_(mean=0.0, std=0.02)
                        if isinstance(module, nn.Linear) and module.bias is not None:
                            module.bias.data.zero_()
                    elif isinstance(module, nn.LayerNorm):
                        module.bias.data.zero_()
                        module.weight.data.fill_(1.0)

                def get_block_size(self):
                    return self.block_size

                @autocast()
                def forward(self, idx, targets=None):
                    b, t = idx.size()
                    assert t <= self.block_size, "Cannot forward, model block size is exhausted."
                    token_embeddings = self.tok_emb(idx)
                    position_embeddings = self.pos_emb[:, :t, :]
                    x = self.drop(token_embeddings + position_embeddings)
                    x = self.blocks(x)
                    x = self.ln_f(x)
                    logits = self.head(x)
                    loss = None
                    if targets is not None:
                        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
                    return logits, loss

        def top_k_logits(logits, k):
            v, ix = torch.topk(logits, k)
            out = logits.clone()
            out[out < v[:, [-1]]] = -float('Inf')
            return out

        @torch.no_grad()
        def sample(model, x, steps, temperature=1.0, sample=False, top_k=None):
            block_size = model.get_block_size()
            model.eval()
            for k in range(steps):
                x_cond = x if x.size(1) <= block_size else x[:, -block_size:]
                logits, _ = model(x_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    logits = top_k_logits(logits, top_k)
                probs = F.softmax(logits, dim=-1)
                if sample:
                    ix = torch.multinomial(probs, num_samples=1)
                else:
                    _, ix = torch.topk(probs, k=1, dim=-1)
                x = torch.cat((x, ix), dim=1)
            return x

        mconf = GPTConfig(7, 4, n_layer=1, n_head=2, n_embd=8, embd_pdrop=0.0, resid_pdrop=0.0, attn_pdrop=0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = GPT(mconf)
            log("init", (model.ln_f.weight, model.head.weight.abs().max() < 0.2, model.blocks[0].attn.mask))
            init_params(torch, model, 0, scale=0.5)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95))
            rs = np.random.RandomState(1)
            for it in range(3):
                xy = torch.tensor(rs.randint(0, 7, (3, 5)))
                x, y = xy[:, :-1].contiguous(), xy[:, 1:].contiguous()     # as a DataLoader batches them
                logits, loss = model(x, y)
                loss = loss.mean()
                model.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                log(f"iter {it}", (loss, logits.dtype))
            # a full block_size context: the second step crops it, and every forward has the
            # training batches' shape (a shorter context compiles the whole model again)
            out = sample(model, torch.tensor([[1, 2, 3, 0], [3, 4, 5, 1], [6, 0, 1, 2]]), 2, temperature=0.9, top_k=3)
            log("sample", out)
            log("top_k_logits", top_k_logits(torch.tensor([[1.0, 3.0, 2.0, 0.5]]), 2))
            log("no grad kept", model.training)
    run_both(program)
