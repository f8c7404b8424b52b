"""Round-12 public programs (``tests/api/test_public_programs_round12.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- seungeunrho/minimalRL dqn.py: the Q-learning step (gather, ``max(1)[0].unsqueeze(1)`` of the
  target network, smooth_l1_loss, Adam), the target refreshed by load_state_dict between calls;
- openai/spinningup sac/sac.py + core.py: the deterministic squashed Gaussian actor, twin Q
  losses against a no_grad backup, the actor loss, polyak averaging through ``.data.mul_`` /
  ``.data.add_`` under no_grad, two Adams;
- lucidrains/adam-atan2-pytorch adam_atan2.py: a user ``Optimizer`` subclass whose state holds
  a Python int step count beside ``lerp_``/``atan2_`` buffers, stepped inside the compiled step
  (a graph break: the int changes every call);
- facebookresearch/simsiam builder.py + main_simsiam.py: the projector/predictor with
  BatchNorm1d (one without affine), ``nn.CosineSimilarity`` loss on detached targets, SGD with a
  fixed-lr param group and the cosine schedule applied between calls;
- NegatioN/OnlineMiningTripletLoss losses.py: batch-hard triplet mining over uint8 ``~`` masks
  and in-place boolean-mask writes (``tl[tl < 0] = 0``: one select, no graph break), SGD on a
  linear embedder;
- lucidrains/slot-attention slot_attention.py: the iterative einsum attention with a GRU cell
  update and a residual MLP, SGD;
- HobbitLong/RepDistiller distiller_zoo: KD's kl_div, RKD's ``res[range(n), range(n)] = 0`` and
  mask-selected means (a data-dependent shape: a graph break, as in torch), PKT's NaN scrub;
- denisyarats/pytorch_sac agent/actor.py: a user ``Transform`` inside a
  ``TransformedDistribution`` subclass, log_prob of given actions, the learned temperature's
  ``log_alpha`` with its own Adam;
- seungeunrho/minimalRL td3.py: twin critics, deepcopied targets soft-updated through
  ``.data.copy_``, the policy noise a NumPy float64 argument made a 0-d float64 tensor.
"""
import math

import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, data, labels, np_init


def _no_breaks(run):
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] >= 1, run.step.stats


# ---- seungeunrho/minimalRL dqn.py ---------------------------------------------------------------
def dqn_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional
    gamma = 0.98

    class Qnet(nn.Module):
        def __init__(self):
            super(Qnet, self).__init__()
            self.fc1 = nn.Linear(4, 8)
            self.fc2 = nn.Linear(8, 8)
            self.fc3 = nn.Linear(8, 2)

        def forward(self, x):
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            x = self.fc3(x)
            return x

    q = np_init(Qnet(), mod)
    q_target = Qnet()
    q_target.load_state_dict(q.state_dict())
    optimizer = mod.optim.Adam(q.parameters(), lr=0.0005)

    def step(s, a, r, s_prime, done_mask):
        q_out = q(s)
        q_a = q_out.gather(1, a)
        max_q_prime = q_target(s_prime).max(1)[0].unsqueeze(1)
        target = r + gamma * max_q_prime * done_mask
        loss = F.smooth_l1_loss(q_a, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    def batch(i):
        rs = np.random.RandomState(i)
        return (data(mod, i, 4, 4), mod.tensor(rs.randint(0, 2, size=(4, 1))),
                mod.tensor(rs.rand(4, 1).astype(np.float32) / 100), data(mod, i, 4, 4, seed=300),
                mod.tensor((rs.rand(4, 1) > 0.3).astype(np.float32)))
    return wrap(step), {"q": q, "q_target": q_target, "opt": optimizer}, batch


def test_minimalrl_dqn_step():
    def between(state, i):
        if i == 1:
            state["q_target"].load_state_dict(state["q"].state_dict())
    _no_breaks(check_compiled(dqn_program, calls=3, between=between, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- openai/spinningup spinup/algos/pytorch/sac -------------------------------------------------
def spinningup_sac_program(mod, wrap):
    import itertools
    from copy import deepcopy
    nn, F = mod.nn, mod.nn.functional
    Normal = mod.distributions.Normal
    gamma, polyak, alpha = 0.99, 0.9, 0.2

    def mlp(sizes, activation, output_activation=nn.Identity):
        layers = []
        for j in range(len(sizes) - 1):
            act = activation if j < len(sizes) - 2 else output_activation
            layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
        return nn.Sequential(*layers)

    class SquashedGaussianMLPActor(nn.Module):
        def __init__(self, obs_dim, act_dim, hidden_sizes, activation, act_limit):
            super().__init__()
            self.net = mlp([obs_dim] + list(hidden_sizes), activation, activation)
            self.mu_layer = nn.Linear(hidden_sizes[-1], act_dim)
            self.log_std_layer = nn.Linear(hidden_sizes[-1], act_dim)
            self.act_limit = act_limit

        def forward(self, obs, deterministic=False, with_logprob=True):
            net_out = self.net(obs)
            mu = self.mu_layer(net_out)
            log_std = mod.clamp(self.log_std_layer(net_out), -20, 2)
            std = mod.exp(log_std)
            pi_distribution = Normal(mu, std, validate_args=False)
            pi_action = mu if deterministic else pi_distribution.rsample()
            logp_pi = pi_distribution.log_prob(pi_action).sum(axis=-1)
            logp_pi -= (2 * (np.log(2) - pi_action - F.softplus(-2 * pi_action))).sum(axis=1)
            return self.act_limit * mod.tanh(pi_action), logp_pi

    class MLPQFunction(nn.Module):
        def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
            super().__init__()
            self.q = mlp([obs_dim + act_dim] + list(hidden_sizes) + [1], activation)

        def forward(self, obs, act):
            return mod.squeeze(self.q(mod.cat([obs, act], dim=-1)), -1)

    ac = nn.ModuleDict({"pi": SquashedGaussianMLPActor(3, 2, (6, 6), nn.ReLU, 2.0),
                        "q1": MLPQFunction(3, 2, (6, 6), nn.ReLU),
                        "q2": MLPQFunction(3, 2, (6, 6), nn.ReLU)})
    np_init(ac, mod)
    ac_targ = deepcopy(ac)
    for p in ac_targ.parameters():
        p.requires_grad = False
    q_params = itertools.chain(ac["q1"].parameters(), ac["q2"].parameters())
    pi_optimizer = mod.optim.Adam(ac["pi"].parameters(), lr=1e-2)
    q_optimizer = mod.optim.Adam(q_params, lr=1e-2)

    def step(o, a, r, o2, d):
        q_optimizer.zero_grad()
        q1, q2 = ac["q1"](o, a), ac["q2"](o, a)
        with mod.no_grad():
            a2, logp_a2 = ac["pi"](o2, deterministic=True)
            q_pi_targ = mod.min(ac_targ["q1"](o2, a2), ac_targ["q2"](o2, a2))
            backup = r + gamma * (1 - d) * (q_pi_targ - alpha * logp_a2)
        loss_q = ((q1 - backup) ** 2).mean() + ((q2 - backup) ** 2).mean()
        loss_q.backward()
        q_optimizer.step()
        pi_optimizer.zero_grad()
        pi, logp_pi = ac["pi"](o, deterministic=True)
        loss_pi = (alpha * logp_pi - mod.min(ac["q1"](o, pi), ac["q2"](o, pi))).mean()
        loss_pi.backward()
        pi_optimizer.step()
        with mod.no_grad():
            for p, p_targ in zip(ac.parameters(), ac_targ.parameters()):
                p_targ.data.mul_(polyak)
                p_targ.data.add_((1 - polyak) * p.data)
        return loss_q, loss_pi

    def batch(i):
        rs = np.random.RandomState(i)
        return (data(mod, i, 4, 3), mod.tensor(rs.uniform(-2, 2, (4, 2)).astype(np.float32)),
                data(mod, i, 4, seed=300), data(mod, i, 4, 3, seed=400),
                mod.tensor((rs.rand(4) > 0.7).astype(np.float32)))
    return wrap(step), {"ac": ac, "ac_targ": ac_targ, "pi_opt": pi_optimizer, "q_opt": q_optimizer}, batch


def test_spinningup_sac_update():
    _no_breaks(check_compiled(spinningup_sac_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- lucidrains/adam-atan2-pytorch adam_atan2_pytorch/adam_atan2.py ----------------------------
def adam_atan2_program(mod, wrap):
    import importlib
    Optimizer = importlib.import_module(mod.__name__ + ".optim.optimizer").Optimizer
    nn = mod.nn

    class AdamAtan2(Optimizer):
        def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0., a=1.27, b=1.):
            self._init_lr = lr
            super().__init__(params, dict(lr=lr, betas=betas, a=a, b=b, weight_decay=weight_decay))

        @mod.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with mod.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in filter(lambda p: p.grad is not None, group['params']):
                    grad, lr, wd, beta1, beta2, a, b, state, init_lr = p.grad, group['lr'], group['weight_decay'], *group['betas'], group['a'], group['b'], self.state[p], self._init_lr
                    if wd > 0.:
                        p.mul_(1. - lr / init_lr * wd)
                    if len(state) == 0:
                        state['steps'] = 0
                        state['exp_avg'] = mod.zeros_like(grad)
                        state['exp_avg_sq'] = mod.zeros_like(grad)
                    exp_avg, exp_avg_sq, steps = state['exp_avg'], state['exp_avg_sq'], state['steps']
                    steps += 1
                    bias_correct1 = 1. - beta1 ** steps
                    bias_correct2 = 1. - beta2 ** steps
                    exp_avg.lerp_(grad, 1. - beta1)
                    exp_avg_sq.lerp_(grad * grad, 1. - beta2)
                    den = exp_avg_sq.mul_(b * b / bias_correct2).sqrt_()
                    update = exp_avg.clone().mul_(1. / bias_correct1).atan2_(den)
                    p.add_(update, alpha=-lr * a)
                    state['steps'] = steps
            return loss

    model = np_init(nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1)), mod)
    opt = AdamAtan2(model.parameters(), lr=1e-2, weight_decay=0.1)

    def step(x, y):
        def closure():
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            return loss
        return opt.step(closure)

    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 8, 4), data(mod, i, 8, 1, seed=300))


def test_adam_atan2_custom_optimizer():
    # ``state['steps']`` is a Python int the step rebinds: a program would bake the traced
    # step's count (and its bias corrections) in and leave the dict at it (this compiled to a
    # silently wrong third call once), so the step breaks the graph and runs eagerly, equal
    run = check_compiled(adam_atan2_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    reasons = [r for r, _ in run.step.stats["graph_breaks"]]
    assert any("'steps' to a Python int" in r for r in reasons), run.step.stats


# ---- facebookresearch/simsiam -------------------------------------------------------------------
def simsiam_program(mod, wrap):
    nn = mod.nn
    dim, pred_dim, prev_dim = 6, 3, 4
    encoder = nn.Sequential(nn.Conv2d(3, prev_dim, 3, padding=1, bias=False), nn.BatchNorm2d(prev_dim),
                            nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
                            nn.Sequential(nn.Linear(prev_dim, prev_dim, bias=False), nn.BatchNorm1d(prev_dim),
                                          nn.ReLU(inplace=True), nn.Linear(prev_dim, dim),
                                          nn.BatchNorm1d(dim, affine=False)))
    predictor = nn.Sequential(nn.Linear(dim, pred_dim, bias=False), nn.BatchNorm1d(pred_dim),
                              nn.ReLU(inplace=True), nn.Linear(pred_dim, dim))
    model = np_init(nn.ModuleDict({"encoder": encoder, "predictor": predictor}), mod)
    encoder[5][3].bias.requires_grad = False
    criterion = nn.CosineSimilarity(dim=1)
    optimizer = mod.optim.SGD([{'params': encoder.parameters(), 'fix_lr': False},
                               {'params': predictor.parameters(), 'fix_lr': True}],
                              0.08, momentum=0.9, weight_decay=1e-4)

    def step(x1, x2):
        z1, z2 = encoder(x1), encoder(x2)
        p1, p2 = predictor(z1), predictor(z2)
        z1, z2 = z1.detach(), z2.detach()
        loss = -(criterion(p1, z2).mean() + criterion(p2, z1).mean()) * 0.5
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return wrap(step), {"model": model, "opt": optimizer}, \
        lambda i: (data(mod, i, 4, 3, 4, 4), data(mod, i, 4, 3, 4, 4, seed=300))


def test_simsiam_step():
    def between(state, i):   # main_simsiam's adjust_learning_rate (cosine over 3 epochs)
        init_lr = 0.08
        cur_lr = init_lr * 0.5 * (1. + math.cos(math.pi * (i + 1) / 3))
        for param_group in state["opt"].param_groups:
            param_group['lr'] = init_lr if param_group.get('fix_lr') else cur_lr
    _no_breaks(check_compiled(simsiam_program, calls=3, between=between, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- NegatioN/OnlineMiningTripletLoss online_triplet_loss/losses.py ----------------------------
def triplet_program(mod, wrap):
    def _pairwise_distances(embeddings, squared=False):
        dot_product = mod.matmul(embeddings, embeddings.t())
        square_norm = mod.diag(dot_product)
        distances = square_norm.unsqueeze(0) - 2.0 * dot_product + square_norm.unsqueeze(1)
        distances[distances < 0] = 0
        if not squared:
            mask = distances.eq(0).float()
            distances = distances + mask * 1e-16
            distances = (1.0 - mask) * mod.sqrt(distances)
        return distances

    def batch_hard_triplet_loss(labels, embeddings, margin, squared=False):
        pairwise_dist = _pairwise_distances(embeddings, squared=squared)
        indices_not_equal = ~mod.eye(labels.size(0)).byte()
        mask_anchor_positive = ((labels.unsqueeze(0) == labels.unsqueeze(1)) & indices_not_equal).float()
        hardest_positive_dist, _ = (mask_anchor_positive * pairwise_dist).max(1, keepdim=True)
        mask_anchor_negative = (~(labels.unsqueeze(0) == labels.unsqueeze(1))).float()
        max_anchor_negative_dist, _ = pairwise_dist.max(1, keepdim=True)
        anchor_negative_dist = pairwise_dist + max_anchor_negative_dist * (1.0 - mask_anchor_negative)
        hardest_negative_dist, _ = anchor_negative_dist.min(1, keepdim=True)
        tl = hardest_positive_dist - hardest_negative_dist + margin
        tl[tl < 0] = 0
        return tl.mean()

    embedder = np_init(mod.nn.Linear(4, 3), mod)
    opt = mod.optim.SGD(embedder.parameters(), lr=0.1)

    def step(x, labels):
        loss = batch_hard_triplet_loss(labels, embedder(x), margin=1.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return wrap(step), {"embedder": embedder, "opt": opt}, lambda i: (data(mod, i, 6, 4), labels(mod, i, 6, 3))


def test_online_triplet_mining_step():
    _no_breaks(check_compiled(triplet_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- lucidrains/slot-attention slot_attention/slot_attention.py --------------------------------
def slot_attention_program(mod, wrap):
    nn = mod.nn
    dim, n_s, iters, eps = 8, 3, 2, 1e-8

    class SlotAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = dim ** -0.5
            self.slots_mu = nn.Parameter(mod.zeros(1, 1, dim))
            self.slots_sigma = nn.Parameter(mod.zeros(1, 1, dim))
            self.to_q = nn.Linear(dim, dim, bias=False)
            self.to_k = nn.Linear(dim, dim, bias=False)
            self.to_v = nn.Linear(dim, dim, bias=False)
            self.gru = nn.GRU(dim, dim)
            self.mlp_norm = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(inplace=True), nn.Linear(dim, dim))
            self.norm_input = nn.LayerNorm(dim)
            self.norm_slots = nn.LayerNorm(dim)

        def forward(self, inputs, noise):
            b, n, d = inputs.shape
            slots = self.slots_mu.expand(b, n_s, -1) + self.slots_sigma.expand(b, n_s, -1) * noise
            inputs = self.norm_input(inputs)
            k, v = self.to_k(inputs), self.to_v(inputs)
            for _ in range(iters):
                slots_prev = slots
                q = self.to_q(self.norm_slots(slots))
                dots = mod.einsum('bid,bjd->bij', q, k) * self.scale
                attn = dots.softmax(dim=1) + eps
                attn = attn / attn.sum(dim=-1, keepdim=True)
                updates = mod.einsum('bjd,bij->bid', v, attn)
                slots, _ = self.gru(updates.reshape(1, -1, d), slots_prev.reshape(1, -1, d))
                slots = slots.reshape(b, -1, d)
                slots = slots + self.mlp(self.mlp_norm(slots))
            return slots

    model = np_init(SlotAttention(), mod, scale=0.3)
    # SGD, not Adam: norm_slots' bias shifts every slot's query alike, which the softmax over
    # slots cancels: its gradient is rounding noise, which Adam would scale up to +-lr
    opt = mod.optim.SGD(model.parameters(), lr=0.1)

    def step(inputs, noise):
        slots = model(inputs, noise)
        loss = (slots.mean(1) - inputs.mean(1)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return wrap(step), {"model": model, "opt": opt}, \
        lambda i: (data(mod, i, 2, 5, dim), data(mod, i, 2, n_s, dim, seed=300))


def test_slot_attention_step():
    _no_breaks(check_compiled(slot_attention_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- HobbitLong/RepDistiller distiller_zoo (KD, RKD, PKT) ---------------------------------------
def distill_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional

    def pdist(e, squared=False, eps=1e-12):
        e_square = e.pow(2).sum(dim=1)
        prod = e @ e.t()
        res = (e_square.unsqueeze(1) + e_square.unsqueeze(0) - 2 * prod).clamp(min=eps)
        if not squared:
            res = res.sqrt()
        res = res.clone()
        res[range(len(e)), range(len(e))] = 0
        return res

    def rkd(student, teacher, w_d=25, w_a=50):
        with mod.no_grad():
            t_d = pdist(teacher)
            t_d = t_d / t_d[t_d > 0].mean()
        d = pdist(student)
        d = d / d[d > 0].mean()
        loss_d = F.smooth_l1_loss(d, t_d)
        with mod.no_grad():
            norm_td = F.normalize(teacher.unsqueeze(0) - teacher.unsqueeze(1), p=2, dim=2)
            t_angle = mod.bmm(norm_td, norm_td.transpose(1, 2)).view(-1)
        norm_sd = F.normalize(student.unsqueeze(0) - student.unsqueeze(1), p=2, dim=2)
        s_angle = mod.bmm(norm_sd, norm_sd.transpose(1, 2)).view(-1)
        return w_d * loss_d + w_a * F.smooth_l1_loss(s_angle, t_angle)

    def pkt(output_net, target_net, eps=0.0000001):
        output_net = output_net / (mod.sqrt(mod.sum(output_net ** 2, dim=1, keepdim=True)) + eps)
        output_net[output_net != output_net] = 0
        target_net = target_net / (mod.sqrt(mod.sum(target_net ** 2, dim=1, keepdim=True)) + eps)
        target_net[target_net != target_net] = 0
        model_similarity = (mod.mm(output_net, output_net.transpose(0, 1)) + 1.0) / 2.0
        target_similarity = (mod.mm(target_net, target_net.transpose(0, 1)) + 1.0) / 2.0
        model_similarity = model_similarity / mod.sum(model_similarity, dim=1, keepdim=True)
        target_similarity = target_similarity / mod.sum(target_similarity, dim=1, keepdim=True)
        return mod.mean(target_similarity * mod.log((target_similarity + eps) / (model_similarity + eps)))

    student = np_init(nn.Linear(5, 4), mod)
    teacher = np_init(nn.Linear(5, 4), mod, seed=1)
    opt = mod.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
    T = 4

    def step(x):
        f_s = student(x)
        with mod.no_grad():
            f_t = teacher(x)
        p_s = F.log_softmax(f_s / T, dim=1)
        p_t = F.softmax(f_t / T, dim=1)
        loss_kd = F.kl_div(p_s, p_t, reduction='sum') * (T ** 2) / f_s.shape[0]
        loss = loss_kd + rkd(f_s, f_t) + pkt(f_s, f_t)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss, loss_kd

    return wrap(step), {"student": student, "opt": opt}, lambda i: (data(mod, i, 6, 5),)


def test_repdistiller_step():
    # ``t_d[t_d > 0].mean()`` selects by a mask (a data-dependent shape): a graph break, equal
    # (as under torch.compile); PKT's ``output_net[output_net != output_net] = 0`` is no break
    run = check_compiled(distill_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    reasons = [r for r, _ in run.step.stats["graph_breaks"]]
    assert len(reasons) == 1 and "nonzero()" in reasons[0], run.step.stats


# ---- denisyarats/pytorch_sac agent/actor.py -----------------------------------------------------
def squashed_normal_program(mod, wrap):
    import math
    nn, F = mod.nn, mod.nn.functional
    pyd = mod.distributions

    class TanhTransform(pyd.transforms.Transform):
        domain = pyd.constraints.real
        codomain = pyd.constraints.interval(-1.0, 1.0)
        bijective = True
        sign = +1

        def __init__(self, cache_size=1):
            super().__init__(cache_size=cache_size)

        @staticmethod
        def atanh(x):
            return 0.5 * (x.log1p() - (-x).log1p())

        def __eq__(self, other):
            return isinstance(other, TanhTransform)

        def _call(self, x):
            return x.tanh()

        def _inverse(self, y):
            return self.atanh(y)

        def log_abs_det_jacobian(self, x, y):
            return 2. * (math.log(2.) - x - F.softplus(-2. * x))

    class SquashedNormal(pyd.transformed_distribution.TransformedDistribution):
        def __init__(self, loc, scale):
            self.loc = loc
            self.scale = scale
            self.base_dist = pyd.Normal(loc, scale)
            super().__init__(self.base_dist, [TanhTransform()])

        @property
        def mean(self):
            mu = self.loc
            for tr in self.transforms:
                mu = tr(mu)
            return mu

    trunk = np_init(nn.Sequential(nn.Linear(3, 6), nn.ReLU(inplace=True), nn.Linear(6, 4)), mod)
    log_alpha = mod.tensor(math.log(0.1), requires_grad=True)
    opt = mod.optim.Adam(list(trunk.parameters()), lr=1e-2)
    log_alpha_optimizer = mod.optim.Adam([log_alpha], lr=1e-2)
    target_entropy = -2

    def step(obs, action):
        mu, log_std = trunk(obs).chunk(2, dim=-1)
        log_std = mod.tanh(log_std)
        log_std = -5 + 0.5 * (2 - -5) * (log_std + 1)
        dist = SquashedNormal(mu, log_std.exp())
        log_prob = dist.log_prob(action).sum(-1, keepdim=True)
        actor_loss = (log_alpha.exp().detach() * log_prob - dist.mean.sum(-1, keepdim=True)).mean()
        opt.zero_grad()
        actor_loss.backward()
        opt.step()
        log_alpha_optimizer.zero_grad()
        alpha_loss = (log_alpha.exp() * (-log_prob - target_entropy).detach()).mean()
        alpha_loss.backward()
        log_alpha_optimizer.step()
        return actor_loss, alpha_loss

    def batch(i):
        rs = np.random.RandomState(i)
        return data(mod, i, 4, 3), mod.tensor(rs.uniform(-0.9, 0.9, (4, 2)).astype(np.float32))
    return wrap(step), {"trunk": trunk, "log_alpha": log_alpha, "opt": opt, "alpha_opt": log_alpha_optimizer}, batch


def test_squashed_normal_actor_step(no_validation):
    _no_breaks(check_compiled(squashed_normal_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


@pytest.fixture
def no_validation():
    """Distributions' default argument validation off in both libraries (restored after)."""
    import torch
    saved = (torch.distributions.Distribution._validate_args,
             tracegrad.distributions.Distribution._validate_args)
    torch.distributions.Distribution.set_default_validate_args(False)
    tracegrad.distributions.Distribution.set_default_validate_args(False)
    yield
    torch.distributions.Distribution.set_default_validate_args(saved[0])
    tracegrad.distributions.Distribution.set_default_validate_args(saved[1])


# ---- seungeunrho/minimalRL td3.py ---------------------------------------------------------------
def td3_program(mod, wrap):
    import copy
    nn, F = mod.nn, mod.nn.functional

    class QNet(nn.Module):
        def __init__(self):
            super(QNet, self).__init__()
            self.fc_s = nn.Linear(3, 6)
            self.fc_a = nn.Linear(1, 6)
            self.fc_q = nn.Linear(12, 6)
            self.fc_3 = nn.Linear(6, 1)

        def forward(self, x, a):
            h1 = F.relu(self.fc_s(x))
            h2 = F.relu(self.fc_a(a))
            q = F.relu(self.fc_q(mod.cat([h1, h2], dim=1)))
            return self.fc_3(q)

    q1, q2 = np_init(QNet(), mod), np_init(QNet(), mod, seed=1)
    mu = np_init(nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 1), nn.Tanh()), mod, seed=2)
    q_opt = mod.optim.Adam(list(q1.parameters()) + list(q2.parameters()), lr=1e-3)
    mu_opt = mod.optim.Adam(mu.parameters(), lr=1e-3)
    tq1, tq2, tmu = copy.deepcopy(q1), copy.deepcopy(q2), copy.deepcopy(mu)
    tau, discount_factor = 0.05, 0.99

    def step(s, a, r, s_prime, noise):
        tilde_a = tmu(s_prime) * 2 + mod.tensor(np.clip(noise, -0.5, 0.5))
        tilde_a = mod.clamp(tilde_a, -2, 2).detach()
        y = r + discount_factor * mod.min(tq1(s_prime, tilde_a), tq2(s_prime, tilde_a))
        q_loss = F.mse_loss(y.detach(), q1(s, a)) + F.mse_loss(y.detach(), q2(s, a))
        q_opt.zero_grad()
        q_loss.backward()
        q_opt.step()
        mu_loss = -q1(s, mu(s) * 2).mean()
        mu_opt.zero_grad()
        mu_loss.backward()
        mu_opt.step()
        for net, target in ((q1, tq1), (q2, tq2), (mu, tmu)):
            for param, target_param in zip(net.parameters(), target.parameters()):
                target_param.data.copy_(tau * param.data + (1 - tau) * target_param.data)
        return q_loss, mu_loss

    def batch(i):
        rs = np.random.RandomState(i)
        return (data(mod, i, 4, 3), mod.tensor(rs.uniform(-2, 2, (4, 1)).astype(np.float32)),
                data(mod, i, 4, 1, seed=300), data(mod, i, 4, 3, seed=400), np.float64(rs.normal(0, 0.2)))
    return wrap(step), {"q1": q1, "q2": q2, "mu": mu, "tq1": tq1, "tmu": tmu, "q_opt": q_opt}, batch


def test_td3_step():
    # the policy noise is a NumPy float64 argument made a 0-d float64 tensor in the step
    # (guarded by value: each new draw traces again, as dynamo specialises on it)
    _no_breaks(check_compiled(td3_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))
