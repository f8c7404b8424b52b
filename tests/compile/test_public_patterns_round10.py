"""Round-10 public programs (``tests/api/test_public_programs_round10.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- facebookresearch/barlowtwins main.py: the cross-correlation loss with in-place ``div_`` and
  ``torch.diagonal(c).add_(-1).pow_(2)`` on a view, off_diagonal, the hand-written LARS
  optimizer (torch.where of norms, a momentum state dict);
- karpathy/pytorch-made made.py: MaskedLinear's mask buffer times the weight, masks rewritten
  between calls through ``mask.data.copy_(torch.from_numpy(...))`` (update_masks), summed BCE
  with logits, Adam;
- meta-llama/llama model.py: RMSNorm, complex64 rotary embeddings (polar, view_as_complex,
  view_as_real), SwiGLU, a causal mask made by ``torch.triu(torch.full(...))``, AdamW;
- openai/guided-diffusion nn.py: ResBlock through CheckpointFunction, whose backward reruns the
  block under enable_grad and calls autograd.grad (a Function with a hand-written backward);
- facebookresearch/dino: DINOLoss's centred teacher softmax with the 'center' buffer reassigned
  under no_grad, the EMA teacher update in the step, MultiCropWrapper's unique_consecutive over
  crop sizes (a host value: a graph break).
"""
import math

import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, data, np_init


def _no_breaks(run):
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] >= 1, run.step.stats


# ---- facebookresearch/barlowtwins main.py ------------------------------------------------------
def barlow_program(mod, wrap):
    nn, optim = mod.nn, mod.optim

    def off_diagonal(x):
        n, m = x.shape
        assert n == m
        return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()

    class LARS(optim.Optimizer):
        def __init__(self, params, lr, weight_decay=0, momentum=0.9, eta=0.001,
                     weight_decay_filter=None, lars_adaptation_filter=None):
            defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                            eta=eta, weight_decay_filter=weight_decay_filter,
                            lars_adaptation_filter=lars_adaptation_filter)
            super().__init__(params, defaults)

        @mod.no_grad()
        def step(self):
            for g in self.param_groups:
                for p in g['params']:
                    dp = p.grad
                    if dp is None:
                        continue
                    if g['weight_decay_filter'] is None or not g['weight_decay_filter'](p):
                        dp = dp.add(p, alpha=g['weight_decay'])
                    if g['lars_adaptation_filter'] is None or not g['lars_adaptation_filter'](p):
                        param_norm = mod.norm(p)
                        update_norm = mod.norm(dp)
                        one = mod.ones_like(param_norm)
                        q = mod.where(param_norm > 0.,
                                      mod.where(update_norm > 0,
                                                (g['eta'] * param_norm / update_norm), one), one)
                        dp = dp.mul(q)
                    param_state = self.state[p]
                    if 'mu' not in param_state:
                        param_state['mu'] = mod.zeros_like(p)
                    mu = param_state['mu']
                    mu.mul_(g['momentum']).add_(dp)
                    p.add_(mu, alpha=-g['lr'])

    def exclude_bias_and_norm(p):
        return p.ndim == 1

    backbone = nn.Sequential(nn.Linear(5, 6), nn.ReLU())
    projector = nn.Sequential(nn.Linear(6, 6, bias=False), nn.BatchNorm1d(6), nn.ReLU(inplace=True),
                              nn.Linear(6, 6, bias=False))
    bn = nn.BatchNorm1d(6, affine=False)
    model = np_init(nn.ModuleDict({"backbone": backbone, "projector": projector, "bn": bn}), mod)
    weights = [p for p in model.parameters() if p.ndim != 1]
    biases = [p for p in model.parameters() if p.ndim == 1]
    opt = LARS([{'params': weights, 'lr': 0.2}, {'params': biases, 'lr': 0.0048}], lr=0,
               weight_decay=1e-6, weight_decay_filter=exclude_bias_and_norm,
               lars_adaptation_filter=exclude_bias_and_norm)

    def step(y1, y2):
        z1 = projector(backbone(y1))
        z2 = projector(backbone(y2))
        c = bn(z1).T @ bn(z2)
        c.div_(4)
        on_diag = mod.diagonal(c).add_(-1).pow_(2).sum()
        off_diag = off_diagonal(c).pow_(2).sum()
        loss = on_diag + 0.0051 * off_diag
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 4, 5), data(mod, i, 4, 5, seed=300))


def test_barlowtwins_lars():
    _no_breaks(check_compiled(barlow_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- karpathy/pytorch-made made.py ---------------------------------------------------------------
def made_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional

    class MaskedLinear(nn.Linear):
        def __init__(self, in_features, out_features, bias=True):
            super().__init__(in_features, out_features, bias)
            self.register_buffer('mask', mod.ones(out_features, in_features))

        def set_mask(self, mask):
            self.mask.data.copy_(mod.from_numpy(mask.astype(np.uint8).T))

        def forward(self, input):
            return F.linear(input, self.mask * self.weight, self.bias)

    nin, hidden = 5, [7, 6]
    hs = [nin] + hidden + [nin]
    layers = []
    for h0, h1 in zip(hs, hs[1:]):
        layers.extend([MaskedLinear(h0, h1), nn.ReLU()])
    layers.pop()
    net = np_init(nn.Sequential(*layers), mod)
    state = {"seed": 0}

    def update_masks():      # MADE.update_masks with num_masks=3
        rng = np.random.RandomState(state["seed"])
        state["seed"] = (state["seed"] + 1) % 3
        m = {-1: rng.permutation(nin)}
        for l in range(len(hidden)):
            m[l] = rng.randint(m[l - 1].min(), nin - 1, size=hidden[l])
        masks = [m[l - 1][:, None] <= m[l][None, :] for l in range(len(hidden))]
        masks.append(m[len(hidden) - 1][:, None] < m[-1][None, :])
        for l, mk in zip([l for l in net.modules() if isinstance(l, MaskedLinear)], masks):
            l.set_mask(mk)

    update_masks()
    opt = mod.optim.Adam(net.parameters(), 1e-2, weight_decay=1e-4)

    def step(xb):
        xbhat = net(xb)
        loss = F.binary_cross_entropy_with_logits(xbhat, xb, reduction='sum') / xb.shape[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    def batch(i):
        return (mod.tensor((np.random.RandomState(400 + i).rand(4, nin) > 0.5).astype(np.float32)),)
    return wrap(step), {"model": net, "opt": opt, "update_masks": update_masks}, batch


def test_made_masks_rewritten_between_calls():
    run = check_compiled(made_program, calls=3, between=lambda s, i: s["update_masks"](),
                         torch_too=True, rtol=1e-4, atol=1e-5)
    _no_breaks(run)


# ---- meta-llama/llama model.py -------------------------------------------------------------------
def llama_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional
    dim, n_heads, seqlen, vocab = 8, 2, 4, 11
    head_dim = dim // n_heads

    class RMSNorm(nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(mod.ones(dim))

        def _norm(self, x):
            return x * mod.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

        def forward(self, x):
            output = self._norm(x.float()).type_as(x)
            return output * self.weight

    def precompute_freqs_cis(dim, end, theta=10000.0):
        freqs = 1.0 / (theta ** (mod.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        t = mod.arange(end, device=freqs.device)
        freqs = mod.outer(t, freqs).float()
        return mod.polar(mod.ones_like(freqs), freqs)

    def apply_rotary_emb(xq, xk, freqs_cis):
        xq_ = mod.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = mod.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        shape = [d if i == 1 or i == xq_.ndim - 1 else 1 for i, d in enumerate(xq_.shape)]
        freqs_cis = freqs_cis.view(*shape)
        xq_out = mod.view_as_real(xq_ * freqs_cis).flatten(3)
        xk_out = mod.view_as_real(xk_ * freqs_cis).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.wq, self.wk = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
            self.wv, self.wo = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
            self.w1, self.w2, self.w3 = nn.Linear(dim, 12, bias=False), nn.Linear(12, dim, bias=False), nn.Linear(dim, 12, bias=False)
            self.attention_norm, self.ffn_norm = RMSNorm(dim), RMSNorm(dim)

        def forward(self, x, freqs_cis, mask):
            bsz = x.shape[0]
            h = self.attention_norm(x)
            xq, xk, xv = self.wq(h), self.wk(h), self.wv(h)
            xq = xq.view(bsz, seqlen, n_heads, head_dim)
            xk = xk.view(bsz, seqlen, n_heads, head_dim)
            xv = xv.view(bsz, seqlen, n_heads, head_dim)
            xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
            xq, keys, values = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
            scores = mod.matmul(xq, keys.transpose(2, 3)) / math.sqrt(head_dim) + mask
            scores = F.softmax(scores.float(), dim=-1).type_as(xq)
            out = mod.matmul(scores, values).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
            h = x + self.wo(out)
            g = self.ffn_norm(h)
            return h + self.w2(F.silu(self.w1(g)) * self.w3(g))

    emb = nn.Embedding(vocab, dim)
    block = Block()
    norm, output = RMSNorm(dim), nn.Linear(dim, vocab, bias=False)
    model = np_init(nn.ModuleList([emb, block, norm, output]), mod)
    freqs_cis = precompute_freqs_cis(head_dim, seqlen * 2)
    opt = mod.optim.AdamW(model.parameters(), lr=1e-2)

    def step(tokens, targets):
        h = emb(tokens)
        mask = mod.full((1, 1, seqlen, seqlen), float("-inf"))
        mask = mod.triu(mask, diagonal=1).type_as(h)
        h = block(h, freqs_cis[:seqlen], mask)
        logits = output(norm(h)).float()
        loss = F.cross_entropy(logits.view(-1, vocab), targets.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    def batch(i):
        rs = np.random.RandomState(500 + i)
        return mod.tensor(rs.randint(0, vocab, (2, seqlen))), mod.tensor(rs.randint(0, vocab, (2, seqlen)))
    return wrap(step), {"model": model, "opt": opt}, batch


def test_llama_complex_rotary_adamw():
    _no_breaks(check_compiled(llama_program, calls=2, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- openai/guided-diffusion nn.py CheckpointFunction --------------------------------------------
def checkpoint_program(mod, wrap):
    th, nn = mod, mod.nn

    class CheckpointFunction(th.autograd.Function):
        @staticmethod
        def forward(ctx, run_function, length, *args):
            ctx.run_function = run_function
            ctx.input_tensors = list(args[:length])
            ctx.input_params = list(args[length:])
            with th.no_grad():
                output_tensors = ctx.run_function(*ctx.input_tensors)
            return output_tensors

        @staticmethod
        def backward(ctx, *output_grads):
            ctx.input_tensors = [x.detach().requires_grad_(True) for x in ctx.input_tensors]
            with th.enable_grad():
                shallow_copies = [x.view_as(x) for x in ctx.input_tensors]
                output_tensors = ctx.run_function(*shallow_copies)
            input_grads = th.autograd.grad(
                output_tensors,
                ctx.input_tensors + ctx.input_params,
                output_grads,
                allow_unused=True,
            )
            del ctx.input_tensors
            del ctx.input_params
            del output_tensors
            return (None, None) + input_grads

    class ResBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.in_layers = nn.Sequential(nn.GroupNorm(2, 4), nn.SiLU(), nn.Conv2d(4, 4, 3, padding=1))
            self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(6, 4))
            self.out_layers = nn.Sequential(nn.GroupNorm(2, 4), nn.SiLU(), nn.Conv2d(4, 4, 3, padding=1))

        def forward(self, x, emb):
            args = (x, emb) + tuple(self.parameters())
            return CheckpointFunction.apply(self._forward, 2, *args)

        def _forward(self, x, emb):
            h = self.in_layers(x)
            h = h + self.emb_layers(emb)[..., None, None]
            return x + self.out_layers(h)

    block = np_init(ResBlock(), mod)
    opt = mod.optim.SGD(block.parameters(), lr=0.1)

    def step(x, emb):
        out = block(x, emb)
        loss = (out ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": block, "opt": opt}, lambda i: (data(mod, i, 2, 4, 5, 5), data(mod, i, 2, 6, seed=600))


def test_guided_diffusion_checkpoint_function():
    check_compiled(checkpoint_program, calls=2, torch_too=True, rtol=1e-4, atol=1e-5)


# ---- facebookresearch/dino main_dino.py + utils.MultiCropWrapper -------------------------------
def dino_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional

    class MultiCropWrapper(nn.Module):
        def __init__(self, backbone, head):
            super().__init__()
            self.backbone = backbone
            self.head = head

        def forward(self, x):
            if not isinstance(x, list):
                x = [x]
            idx_crops = mod.cumsum(mod.unique_consecutive(
                mod.tensor([inp.shape[-1] for inp in x]),
                return_counts=True,
            )[1], 0)
            start_idx, output = 0, mod.empty(0).to(x[0].device)
            for end_idx in idx_crops:
                _out = self.backbone(mod.cat(x[start_idx: end_idx]))
                output = mod.cat((output, _out))
                start_idx = end_idx
            return self.head(output)

    class DINOLoss(nn.Module):
        def __init__(self, out_dim, ncrops, student_temp=0.1, center_momentum=0.9):
            super().__init__()
            self.student_temp = student_temp
            self.center_momentum = center_momentum
            self.ncrops = ncrops
            self.register_buffer("center", mod.zeros(1, out_dim))

        def forward(self, student_output, teacher_output, temp):
            student_out = (student_output / self.student_temp).chunk(self.ncrops)
            teacher_out = F.softmax((teacher_output - self.center) / temp, dim=-1).detach().chunk(2)
            total_loss, n_loss_terms = 0, 0
            for iq, q in enumerate(teacher_out):
                for v in range(len(student_out)):
                    if v == iq:
                        continue
                    loss = mod.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                    total_loss += loss.mean()
                    n_loss_terms += 1
            total_loss /= n_loss_terms
            self.update_center(teacher_output)
            return total_loss

        @mod.no_grad()
        def update_center(self, teacher_output):
            batch_center = mod.sum(teacher_output, dim=0, keepdim=True) / len(teacher_output)
            self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)

    def net():
        return MultiCropWrapper(nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
                                              nn.AdaptiveAvgPool2d(1), nn.Flatten()),
                                nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Linear(6, 5)))
    student, teacher = np_init(net(), mod), net()
    teacher.load_state_dict(student.state_dict())
    for p in teacher.parameters():
        p.requires_grad = False
    dino_loss = DINOLoss(5, 3)
    opt = mod.optim.AdamW(student.parameters(), lr=0.01)

    def step(g1, g2, l1):
        images = [g1, g2, l1]
        teacher_output = teacher(images[:2])
        student_output = student(images)
        loss = dino_loss(student_output, teacher_output, 0.04)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with mod.no_grad():
            for param_q, param_k in zip(student.parameters(), teacher.parameters()):
                param_k.data.mul_(0.9).add_((1 - 0.9) * param_q.detach().data)
        return loss
    return wrap(step), {"student": student, "teacher": teacher, "loss": dino_loss, "opt": opt}, \
        lambda i: (data(mod, i, 2, 3, 6, 6), data(mod, i, 2, 3, 6, 6, seed=700), data(mod, i, 2, 3, 4, 4, seed=800))


def test_dino_multicrop_center_ema():
    check_compiled(dino_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
