"""A twenty-first round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round20.py``, from repositories no earlier round used:

- lucidrains/lion-pytorch: the ``Lion`` optimizer (a ``torch.optim.Optimizer`` subclass with a
  ``@torch.no_grad()`` ``step``, ``filter`` over params without ``.grad``, ``p.data.mul_`` weight
  decay, ``exp_avg.clone().mul_(beta1).add(grad, alpha=...).sign_()``, ``decoupled_weight_decay``
  dividing by the initial lr, a closure run under ``torch.enable_grad()``) on two param groups;
- LiyuanLucasLiu/RAdam: ``RAdam`` (the per-group ``buffer`` list shared through ``defaults``, the
  ``N_sma`` rectification switching from its SGD branch to its adaptive one at step 6,
  ``p.data.float()`` aliasing the parameter's storage so ``p_data_fp32.addcdiv_`` writes through),
  ``PlainRAdam`` and the file's ``AdamW`` (the deprecated ``addcmul_(value, t1, t2)``,
  ``add_(value, t)``, ``addcdiv_(value, t1, t2)`` overloads);
- alphadl/lookahead.pytorch: ``Lookahead`` wrapping ``torch.optim.Adam``, an ``Optimizer``
  subclass that never calls ``Optimizer.__init__`` (shares the inner ``param_groups``, keeps slow
  weights in its own ``defaultdict`` state, syncs every k steps), its ``state_dict`` keyed by
  ``id(param)`` and the ``zero_grad``/``load_state_dict`` of the base class that need the missing
  ``__init__`` attributes;
- Harry24k/bayesian-neural-network-pytorch (torchbnn): ``BayesLinear`` (``torch.Tensor(out, in)``
  storage, ``weight_eps`` buffers, ``.data.uniform_``/``fill_`` init) frozen on fixed noise, the
  ``bayesian_kl_loss``/``BKLLoss`` closed-form Normal KL (``torch.Tensor([0])`` accumulated in
  place with ``+=``, ``len(t.view(-1))``) and the ``freeze``/``unfreeze`` walkers, trained with
  cross entropy + KL as its demo notebooks do;
- allegro/allRank: the learning-to-rank losses ``listNet``, ``listMLE`` (``randperm`` shuffle:
  without ties its loss does not depend on the permutation), ``rankNet`` (fancy indexing by a list
  of ``itertools.product`` pairs, ``BCEWithLogitsLoss(weight=...)``), ``lambdaLoss`` with the
  ``ndcgLoss2PP`` scheme (``-inf`` padding through ``sort``/``gather``/``isfinite``, NaN pair
  differences masked out by boolean indexing) and ``approxNDCGLoss`` (``diagonal().zero_()`` on a
  bool mask) on a padded batch of slates;
- lucidrains/mixture-of-experts: ``Top2Gating`` + ``MoE`` (``einsum`` with ``...`` dispatch and
  combine, ``topk`` values squeezed and then divided in place, ``F.one_hot`` and its
  ``safe_one_hot`` of a tensor-valued length, ``cumsum_exclusive`` through ``F.pad`` of the
  second-to-last dim, expert capacity dropping tokens, ``combine_tensor.bool().to(combine_tensor)``),
  trained on MSE + its load-balancing loss; its 'threshold' policy's broadcast error in both.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters
(``init_params``) in place of downloads and random streams; where a program's own code had to
change, the comment above its test says how and why. ``from torch.x import y`` lines become
attribute reads of the module the program is given (``torch`` is either library).
"""
import math
import warnings
from collections import defaultdict
from itertools import product

import numpy as np
import pytest

from parity import init_params, run_both

torch = pytest.importorskip("torch")


def _xy(torch, n=6, d=4, k=3, seed=0):
    rs = np.random.RandomState(seed)
    x = torch.tensor(rs.standard_normal((n, d)).astype(np.float32))
    y = torch.tensor(rs.randint(0, k, n))
    return x, y


# lucidrains/lion-pytorch lion_pytorch/lion_pytorch.py (update_fn and Lion, unchanged but for the
# triton branch and the ``from torch.optim.optimizer import Optimizer`` line). Trained on a 4-3-3 MLP
# with two param groups (the second without weight decay), 3 closure steps, then a step where one
# parameter has no grad (``filter(lambda p: exists(p.grad), ...)`` skips it).
def test_lion_pytorch_optimizer():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Optimizer = torch.optim.Optimizer

        def exists(val):
            return val is not None

        def update_fn(p, grad, exp_avg, lr, wd, beta1, beta2):
            # stepweight decay
            p.data.mul_(1. - lr * wd)
            # weight update
            update = exp_avg.clone().mul_(beta1).add(grad, alpha = 1. - beta1).sign_()
            p.add_(update, alpha = -lr)
            # decay the momentum running average coefficient
            exp_avg.mul_(beta2).add_(grad, alpha = 1. - beta2)

        class Lion(Optimizer):
            def __init__(self, params, lr: float = 1e-4, betas=(0.9, 0.99), weight_decay: float = 0.0,
                         use_triton: bool = False, decoupled_weight_decay: bool = False):
                assert lr > 0.
                assert all([0. <= beta <= 1. for beta in betas])
                self._init_lr = lr
                self.decoupled_wd = decoupled_weight_decay
                defaults = dict(lr = lr, betas = betas, weight_decay = weight_decay)
                super().__init__(params, defaults)
                self.update_fn = update_fn

            @torch.no_grad()
            def step(self, closure = None):
                loss = None
                if exists(closure):
                    with torch.enable_grad():
                        loss = closure()

                for group in self.param_groups:
                    for p in filter(lambda p: exists(p.grad), group['params']):
                        grad, lr, wd, beta1, beta2, state, decoupled_wd, init_lr = p.grad, group['lr'], group['weight_decay'], *group['betas'], self.state[p], self.decoupled_wd, self._init_lr
                        # maybe decoupled weight decay
                        if decoupled_wd:
                            wd /= init_lr
                        # init state - exponential moving average of gradient values
                        if len(state) == 0:
                            state['exp_avg'] = torch.zeros_like(p)
                        exp_avg = state['exp_avg']
                        self.update_fn(p, grad, exp_avg, lr, wd, beta1, beta2)
                return loss

        x, y = _xy(torch)
        model = init_params(torch, nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 3)), seed=1, scale=0.5)
        opt = Lion([{'params': model[0].parameters()},
                    {'params': model[2].parameters(), 'lr': 3e-2, 'weight_decay': 0.}],
                   lr=1e-2, betas=(0.9, 0.99), weight_decay=1e-2, decoupled_weight_decay=True)
        log("defaults", repr(sorted(opt.defaults.items())))

        def closure():
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            log("grad_enabled_in_closure", torch.is_grad_enabled())
            loss.backward()
            return loss

        for _ in range(3):
            loss = opt.step(closure)
            log("loss", loss)
            log("loss_requires_grad", loss.requires_grad)
        for name, p in model.named_parameters():
            log(name, p)
            log(name + "_exp_avg", opt.state[p]['exp_avg'])
        # one parameter without a grad: Lion leaves it and its state alone
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        model[0].bias.grad = None
        before = model[0].bias.detach().clone()
        opt.step()
        log("skipped_unchanged", bool((model[0].bias == before).all()))
        log("weight", model[0].weight)
        sd = opt.state_dict()
        log("sd_groups", repr([(g['params'], g['lr'], g['weight_decay']) for g in sd['param_groups']]))
        log("sd_state_keys", sorted(sd['state']))
        try:
            Lion(model.parameters(), lr=0.)
            log("bad_lr", "no error")
        except AssertionError:
            log("bad_lr", "AssertionError")

    run_both(program)


# LiyuanLucasLiu/RAdam radam/radam.py (RAdam, PlainRAdam, AdamW, unchanged but for the
# ``from torch.optim.optimizer import Optimizer, required`` line). Each trains its own copy of a
# 4-3-3 MLP for 6 steps with beta2=0.9, so the rectification term N_sma crosses 5 at step 6: steps
# 1-5 take RAdam's SGD branch (degenerated_to_sgd) and step 6 the adaptive one.
def test_radam_optimizers():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Optimizer = torch.optim.Optimizer

        class RAdam(Optimizer):

            def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, degenerated_to_sgd=False):
                if not 0.0 <= lr:
                    raise ValueError("Invalid learning rate: {}".format(lr))
                if not 0.0 <= eps:
                    raise ValueError("Invalid epsilon value: {}".format(eps))
                if not 0.0 <= betas[0] < 1.0:
                    raise ValueError("Invalid beta parameter at index 0: {}".format(betas[0]))
                if not 0.0 <= betas[1] < 1.0:
                    raise ValueError("Invalid beta parameter at index 1: {}".format(betas[1]))

                self.degenerated_to_sgd = degenerated_to_sgd
                if isinstance(params, (list, tuple)) and len(params) > 0 and isinstance(params[0], dict):
                    for param in params:
                        if 'betas' in param and (param['betas'][0] != betas[0] or param['betas'][1] != betas[1]):
                            param['buffer'] = [[None, None, None] for _ in range(10)]
                defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, buffer=[[None, None, None] for _ in range(10)])
                super(RAdam, self).__init__(params, defaults)

            def __setstate__(self, state):
                super(RAdam, self).__setstate__(state)

            def step(self, closure=None):

                loss = None
                if closure is not None:
                    loss = closure()

                for group in self.param_groups:

                    for p in group['params']:
                        if p.grad is None:
                            continue
                        grad = p.grad.data.float()
                        if grad.is_sparse:
                            raise RuntimeError('RAdam does not support sparse gradients')

                        p_data_fp32 = p.data.float()

                        state = self.state[p]

                        if len(state) == 0:
                            state['step'] = 0
                            state['exp_avg'] = torch.zeros_like(p_data_fp32)
                            state['exp_avg_sq'] = torch.zeros_like(p_data_fp32)
                        else:
                            state['exp_avg'] = state['exp_avg'].type_as(p_data_fp32)
                            state['exp_avg_sq'] = state['exp_avg_sq'].type_as(p_data_fp32)

                        exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                        beta1, beta2 = group['betas']

                        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value = 1 - beta2)
                        exp_avg.mul_(beta1).add_(grad, alpha = 1 - beta1)

                        state['step'] += 1
                        buffered = group['buffer'][int(state['step'] % 10)]
                        if state['step'] == buffered[0]:
                            N_sma, step_size = buffered[1], buffered[2]
                        else:
                            buffered[0] = state['step']
                            beta2_t = beta2 ** state['step']
                            N_sma_max = 2 / (1 - beta2) - 1
                            N_sma = N_sma_max - 2 * state['step'] * beta2_t / (1 - beta2_t)
                            buffered[1] = N_sma

                            # more conservative since it's an approximated value
                            if N_sma >= 5:
                                step_size = math.sqrt((1 - beta2_t) * (N_sma - 4) / (N_sma_max - 4) * (N_sma - 2) / N_sma * N_sma_max / (N_sma_max - 2)) / (1 - beta1 ** state['step'])
                            elif self.degenerated_to_sgd:
                                step_size = 1.0 / (1 - beta1 ** state['step'])
                            else:
                                step_size = -1
                            buffered[2] = step_size

                        # more conservative since it's an approximated value
                        if N_sma >= 5:
                            if group['weight_decay'] != 0:
                                p_data_fp32.add_(p_data_fp32, alpha = -group['weight_decay'] * group['lr'])
                            denom = exp_avg_sq.sqrt().add_(group['eps'])
                            p_data_fp32.addcdiv_(exp_avg, denom, value = -step_size * group['lr'])
                            p.data.copy_(p_data_fp32)
                        elif step_size > 0:
                            if group['weight_decay'] != 0:
                                p_data_fp32.add_(p_data_fp32, alpha = -group['weight_decay'] * group['lr'])
                            p_data_fp32.add_(exp_avg, alpha = -step_size * group['lr'])
                            p.data.copy_(p_data_fp32)

                return loss

        class PlainRAdam(Optimizer):

            def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, degenerated_to_sgd=False):
                if not 0.0 <= lr:
                    raise ValueError("Invalid learning rate: {}".format(lr))
                self.degenerated_to_sgd = degenerated_to_sgd
                defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

                super(PlainRAdam, self).__init__(params, defaults)

            def step(self, closure=None):

                loss = None
                if closure is not None:
                    loss = closure()

                for group in self.param_groups:

                    for p in group['params']:
                        if p.grad is None:
                            continue
                        grad = p.grad.data.float()
                        p_data_fp32 = p.data.float()

                        state = self.state[p]

                        if len(state) == 0:
                            state['step'] = 0
                            state['exp_avg'] = torch.zeros_like(p_data_fp32)
                            state['exp_avg_sq'] = torch.zeros_like(p_data_fp32)
                        else:
                            state['exp_avg'] = state['exp_avg'].type_as(p_data_fp32)
                            state['exp_avg_sq'] = state['exp_avg_sq'].type_as(p_data_fp32)

                        exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                        beta1, beta2 = group['betas']

                        exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
                        exp_avg.mul_(beta1).add_(1 - beta1, grad)

                        state['step'] += 1
                        beta2_t = beta2 ** state['step']
                        N_sma_max = 2 / (1 - beta2) - 1
                        N_sma = N_sma_max - 2 * state['step'] * beta2_t / (1 - beta2_t)

                        # more conservative since it's an approximated value
                        if N_sma >= 5:
                            if group['weight_decay'] != 0:
                                p_data_fp32.add_(-group['weight_decay'] * group['lr'], p_data_fp32)
                            step_size = group['lr'] * math.sqrt((1 - beta2_t) * (N_sma - 4) / (N_sma_max - 4) * (N_sma - 2) / N_sma * N_sma_max / (N_sma_max - 2)) / (1 - beta1 ** state['step'])
                            denom = exp_avg_sq.sqrt().add_(group['eps'])
                            p_data_fp32.addcdiv_(-step_size, exp_avg, denom)
                            p.data.copy_(p_data_fp32)
                        elif self.degenerated_to_sgd:
                            if group['weight_decay'] != 0:
                                p_data_fp32.add_(-group['weight_decay'] * group['lr'], p_data_fp32)
                            step_size = group['lr'] / (1 - beta1 ** state['step'])
                            p_data_fp32.add_(-step_size, exp_avg)
                            p.data.copy_(p_data_fp32)

                return loss

        class AdamW(Optimizer):

            def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, warmup = 0):
                defaults = dict(lr=lr, betas=betas, eps=eps,
                                weight_decay=weight_decay, warmup = warmup)
                super(AdamW, self).__init__(params, defaults)

            def step(self, closure=None):
                loss = None
                if closure is not None:
                    loss = closure()

                for group in self.param_groups:

                    for p in group['params']:
                        if p.grad is None:
                            continue
                        grad = p.grad.data.float()
                        p_data_fp32 = p.data.float()

                        state = self.state[p]

                        if len(state) == 0:
                            state['step'] = 0
                            state['exp_avg'] = torch.zeros_like(p_data_fp32)
                            state['exp_avg_sq'] = torch.zeros_like(p_data_fp32)
                        else:
                            state['exp_avg'] = state['exp_avg'].type_as(p_data_fp32)
                            state['exp_avg_sq'] = state['exp_avg_sq'].type_as(p_data_fp32)

                        exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                        beta1, beta2 = group['betas']

                        state['step'] += 1

                        exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
                        exp_avg.mul_(beta1).add_(1 - beta1, grad)

                        denom = exp_avg_sq.sqrt().add_(group['eps'])
                        bias_correction1 = 1 - beta1 ** state['step']
                        bias_correction2 = 1 - beta2 ** state['step']

                        if group['warmup'] > state['step']:
                            scheduled_lr = 1e-8 + state['step'] * group['lr'] / group['warmup']
                        else:
                            scheduled_lr = group['lr']

                        step_size = scheduled_lr * math.sqrt(bias_correction2) / bias_correction1

                        if group['weight_decay'] != 0:
                            p_data_fp32.add_(-group['weight_decay'] * scheduled_lr, p_data_fp32)

                        p_data_fp32.addcdiv_(-step_size, exp_avg, denom)

                        p.data.copy_(p_data_fp32)

                return loss

        x, y = _xy(torch)
        for name, make in (
                ("radam", lambda ps: RAdam(ps, lr=0.05, betas=(0.9, 0.9), weight_decay=1e-2, degenerated_to_sgd=True)),
                ("plain", lambda ps: PlainRAdam(ps, lr=0.05, betas=(0.9, 0.9), weight_decay=1e-2, degenerated_to_sgd=True)),
                ("adamw", lambda ps: AdamW(ps, lr=0.05, betas=(0.9, 0.9), weight_decay=1e-2, warmup=3))):
            model = init_params(torch, nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 3)), seed=2, scale=0.5)
            opt = make(model.parameters())
            w = model[0].weight
            for step in range(6):
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                log(f"{name}_loss{step}", loss)
            log(name + "_w", w)
            log(name + "_same_w_object", w is model[0].weight)
            log(name + "_w_version_bumped", w._version > 0)
            st = opt.state[w]
            log(name + "_step", st['step'])
            log(name + "_exp_avg_sq", st['exp_avg_sq'])
            if name == "radam":
                log("buffer", [[b[0], b[1], b[2]] for b in opt.param_groups[0]['buffer'] if b[0] is not None])
        try:
            RAdam(model.parameters(), betas=(0.9, 1.0))
            log("bad_beta", "no error")
        except ValueError as e:
            log("bad_beta", str(e))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the deprecated overloads' warning
        run_both(program)


# alphadl/lookahead.pytorch lookahead.py (Lookahead, unchanged). It wraps torch.optim.Adam (k=2,
# alpha=0.5) on the 4-3-3 MLP for 4 steps, then round-trips its state_dict into a fresh wrapper.
# It never calls ``Optimizer.__init__``, so the base class's ``zero_grad`` and ``load_state_dict``
# meet missing attributes (both libraries raise AttributeError); the program zeroes grads through
# the model, as the repo's README does.
def test_lookahead_wrapping_adam():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Optimizer = torch.optim.Optimizer

        class Lookahead(Optimizer):
            def __init__(self, optimizer, k=5, alpha=0.5):
                self.optimizer = optimizer
                self.k = k
                self.alpha = alpha
                self.param_groups = self.optimizer.param_groups
                self.state = defaultdict(dict)
                self.fast_state = self.optimizer.state
                for group in self.param_groups:
                    group["counter"] = 0

            def update(self, group):
                for fast in group["params"]:
                    param_state = self.state[fast]
                    if "slow_param" not in param_state:
                        param_state["slow_param"] = torch.zeros_like(fast.data)
                        param_state["slow_param"].copy_(fast.data)
                    slow = param_state["slow_param"]
                    slow += (fast.data - slow) * self.alpha
                    fast.data.copy_(slow)

            def update_lookahead(self):
                for group in self.param_groups:
                    self.update(group)

            def step(self, closure=None):
                loss = self.optimizer.step(closure)
                for group in self.param_groups:
                    if group["counter"] == 0:
                        self.update(group)
                    group["counter"] += 1
                    if group["counter"] >= self.k:
                        group["counter"] = 0
                return loss

            def state_dict(self):
                fast_state_dict = self.optimizer.state_dict()
                slow_state = {
                    (id(k) if isinstance(k, torch.Tensor) else k): v
                    for k, v in self.state.items()
                }
                fast_state = fast_state_dict["state"]
                param_groups = fast_state_dict["param_groups"]
                return {
                    "fast_state": fast_state,
                    "slow_state": slow_state,
                    "param_groups": param_groups,
                }

            def load_state_dict(self, state_dict):
                slow_state_dict = {
                    "state": state_dict["slow_state"],
                    "param_groups": state_dict["param_groups"],
                }
                fast_state_dict = {
                    "state": state_dict["fast_state"],
                    "param_groups": state_dict["param_groups"],
                }
                super(Lookahead, self).load_state_dict(slow_state_dict)
                self.optimizer.load_state_dict(fast_state_dict)
                self.fast_state = self.optimizer.state

            def add_param_group(self, param_group):
                param_group["counter"] = 0
                self.optimizer.add_param_group(param_group)

        x, y = _xy(torch)
        model = init_params(torch, nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 3)), seed=3, scale=0.5)
        base = torch.optim.Adam(model.parameters(), lr=0.05)
        opt = Lookahead(base, k=2, alpha=0.5)
        log("shares_groups", opt.param_groups is base.param_groups)
        try:
            opt.zero_grad()
            log("zero_grad", "no error")
        except AttributeError:
            log("zero_grad", "AttributeError")
        w = model[0].weight
        for step in range(4):
            model.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            log(f"loss{step}", loss)
            log(f"w{step}", w)
            log(f"slow{step}", opt.state[w]["slow_param"])
            log(f"counter{step}", opt.param_groups[0]["counter"])
        sd = opt.state_dict()
        log("slow_keys_are_ids", sorted(sd["slow_state"]) == sorted(id(p) for p in model.parameters()))
        log("fast_state_steps", [float(s["step"]) for s in sd["fast_state"].values()])
        log("group_keys", sorted(k for k in sd["param_groups"][0] if k != "params"))
        opt2 = Lookahead(torch.optim.Adam(model.parameters(), lr=0.05), k=2)
        try:
            opt2.load_state_dict(sd)
            log("load", "no error")
        except AttributeError:
            log("load", "AttributeError")
        # the inner optimizer loads on its own; the wrapped step then continues from its moments
        opt2.optimizer.load_state_dict({"state": sd["fast_state"], "param_groups": sd["param_groups"]})
        log("loaded_exp_avg", opt2.optimizer.state[w]["exp_avg"])
        opt2.add_param_group({"params": [nn.Parameter(torch.ones(2))]})
        log("added_group", [g["counter"] for g in opt2.param_groups])
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt2.step()
        log("after_reload_w", w)

    run_both(program)


# Harry24k/bayesian-neural-network-pytorch torchbnn/modules/linear.py (BayesLinear, commit
# 1a3761a), torchbnn/functional.py (_kl_loss, bayesian_kl_loss), modules/loss.py (BKLLoss) and
# utils/freeze_model.py (freeze, unfreeze), unchanged but for BayesConv2d/BayesBatchNorm2d left out
# of the isinstance checks. The demo's ``nn.Sequential(BayesLinear, ReLU, BayesLinear)`` classifier
# trains with ``ce + kl_weight * kl`` and Adam; the random ``weight_eps``/``bias_eps`` buffers are
# overwritten with numpy draws and the model frozen (its ``freeze`` keeps them fixed), 3 steps;
# then unfrozen, a forward redraws the buffers (only their change is compared).
def test_torchbnn_bayes_linear_kl():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Module, Parameter = torch.nn.Module, torch.nn.Parameter

        class BayesLinear(Module):
            __constants__ = ['prior_mu', 'prior_sigma', 'bias', 'in_features', 'out_features']

            def __init__(self, prior_mu, prior_sigma, in_features, out_features, bias=True):
                super(BayesLinear, self).__init__()
                self.in_features = in_features
                self.out_features = out_features

                self.prior_mu = prior_mu
                self.prior_sigma = prior_sigma
                self.prior_log_sigma = math.log(prior_sigma)

                self.freeze = False

                self.weight_mu = Parameter(torch.Tensor(out_features, in_features))
                self.weight_log_sigma = Parameter(torch.Tensor(out_features, in_features))
                self.register_buffer('weight_eps', torch.Tensor(out_features, in_features))

                self.bias = bias
                if bias:
                    self.bias_mu = Parameter(torch.Tensor(out_features))
                    self.bias_log_sigma = Parameter(torch.Tensor(out_features))
                    self.register_buffer('bias_eps', torch.Tensor(out_features))
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
                self.weight_eps.normal_()
                if self.bias :
                    self.bias_mu.data.uniform_(-stdv, stdv)
                    self.bias_log_sigma.data.fill_(self.prior_log_sigma)
                    self.bias_eps.normal_()

            def forward(self, input):
                if not self.freeze :
                    self.weight_eps.normal_()
                weight = self.weight_mu + torch.exp(self.weight_log_sigma) * self.weight_eps

                if self.bias:
                    if not self.freeze :
                        self.bias_eps.normal_()
                    bias = self.bias_mu + torch.exp(self.bias_log_sigma) * self.bias_eps
                else :
                    bias = None

                return F.linear(input, weight, bias)

            def extra_repr(self):
                return 'prior_mu={}, prior_sigma={}, in_features={}, out_features={}, bias={}'.format(self.prior_mu, self.prior_sigma, self.in_features, self.out_features, self.bias is not None)

        def _kl_loss(mu_0, log_sigma_0, mu_1, log_sigma_1) :
            kl = log_sigma_1 - log_sigma_0 + \
            (torch.exp(log_sigma_0)**2 + (mu_0-mu_1)**2)/(2*math.exp(log_sigma_1)**2) - 0.5
            return kl.sum()

        def bayesian_kl_loss(model, reduction='mean', last_layer_only=False) :
            device = torch.device("cuda" if next(model.parameters()).is_cuda else "cpu")
            kl = torch.Tensor([0]).to(device)
            kl_sum = torch.Tensor([0]).to(device)
            n = 0

            for m in model.modules() :
                if isinstance(m, (BayesLinear,)):
                    kl = _kl_loss(m.weight_mu, m.weight_log_sigma, m.prior_mu, m.prior_log_sigma)
                    kl_sum += kl
                    n += len(m.weight_mu.view(-1))

                    if m.bias :
                        kl = _kl_loss(m.bias_mu, m.bias_log_sigma, m.prior_mu, m.prior_log_sigma)
                        kl_sum += kl
                        n += len(m.bias_mu.view(-1))

            if last_layer_only :
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
            __constants__ = ['reduction']

            def __init__(self, reduction='mean', last_layer_only=False):
                super(BKLLoss, self).__init__(reduction)
                self.last_layer_only = last_layer_only

            def forward(self, model):
                return bayesian_kl_loss(model, reduction=self.reduction, last_layer_only=self.last_layer_only)

        bayes_layer = (BayesLinear,)

        def freeze(module):
            if isinstance(module, bayes_layer) :
                module.freeze = True
            for submodule in module.children() :
                freeze(submodule)

        def unfreeze(module):
            if isinstance(module, bayes_layer) :
                module.freeze = False
            for submodule in module.children() :
                unfreeze(submodule)

        x, y = _xy(torch)
        model = nn.Sequential(
            BayesLinear(prior_mu=0, prior_sigma=0.1, in_features=4, out_features=3),
            nn.ReLU(),
            BayesLinear(prior_mu=0, prior_sigma=0.1, in_features=3, out_features=3),
        )
        log("repr", repr(model))
        log("names", [n for n, _ in model.named_parameters()])
        log("buffers", [(n, tuple(b.shape)) for n, b in model.named_buffers()])
        log("init_log_sigma", model[0].weight_log_sigma)
        # numpy values for the mean parameters (the log sigmas keep their fill_) and the noise
        rs = np.random.RandomState(4)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("_mu"):
                    p.copy_(torch.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
            for _, b in model.named_buffers():
                b.copy_(torch.tensor(rs.standard_normal(tuple(b.shape)).astype(np.float32)))
        freeze(model)
        log("frozen", [getattr(m, "freeze", None) for m in model])

        ce_loss = nn.CrossEntropyLoss()
        kl_loss = BKLLoss(reduction='mean', last_layer_only=False)
        kl_weight = 0.01
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        for step in range(3):
            pre = model(x)
            ce = ce_loss(pre, y)
            kl = kl_loss(model)
            cost = ce + kl_weight*kl
            optimizer.zero_grad()
            cost.backward()
            optimizer.step()
            log(f"ce{step}", ce)
            log(f"kl{step}", kl)
            log(f"kl_grad_fn{step}", type(kl.grad_fn).__name__)
        for name, p in model.named_parameters():
            log(name, p)
            log(name + "_grad", p.grad)
        log("kl_sum", BKLLoss(reduction='sum')(model))
        log("kl_last", BKLLoss(last_layer_only=True)(model))
        _, predicted = torch.max(pre.data, 1)
        log("correct", (predicted == y).sum().item())
        try:
            BKLLoss(reduction='none')(model)
        except ValueError as e:
            log("bad_reduction", str(e))
        unfreeze(model)
        eps = model[2].weight_eps.clone()
        model(x)
        log("redrawn", bool((model[2].weight_eps != eps).any()))

    run_both(program)


# allegro/allRank allrank/models/losses/{listNet,listMLE,rankNet,lambdaLoss,approxNDCG}.py,
# unchanged but for the imports (PADDED_Y_VALUE = -1, DEFAULT_EPS = 1e-10), docstrings and the
# ``globals()[weighing_scheme]`` lookup (a dict of the schemes: they are local here). A 3-4-1
# scorer (allRank's FCModel-like ``Linear -> ReLU -> Linear``, squeezed to [batch, slate]) ranks 2
# slates of 4 documents, the second padded at its last place; each loss in turn takes one SGD
# step of one shared model (its loss and gradients compared).
def test_allrank_learning_to_rank_losses():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        BCEWithLogitsLoss = torch.nn.BCEWithLogitsLoss
        PADDED_Y_VALUE = -1
        DEFAULT_EPS = 1e-10

        def listNet(y_pred, y_true, eps=DEFAULT_EPS, padded_value_indicator=PADDED_Y_VALUE):
            y_pred = y_pred.clone()
            y_true = y_true.clone()

            mask = y_true == padded_value_indicator
            y_pred[mask] = float('-inf')
            y_true[mask] = float('-inf')

            preds_smax = F.softmax(y_pred, dim=1)
            true_smax = F.softmax(y_true, dim=1)

            preds_smax = preds_smax + eps
            preds_log = torch.log(preds_smax)

            return torch.mean(-torch.sum(true_smax * preds_log, dim=1))

        def listMLE(y_pred, y_true, padded_value_indicator=PADDED_Y_VALUE, epsilon=DEFAULT_EPS):
            # shuffle for randomised tie resolution
            random_indices = torch.randperm(y_pred.shape[-1])
            y_pred_shuffled = y_pred[:, random_indices]
            y_true_shuffled = y_true[:, random_indices]

            y_true_sorted, indices = y_true_shuffled.sort(descending=True, dim=-1)

            mask = y_true_sorted == padded_value_indicator

            preds_sorted_by_true = torch.gather(y_pred_shuffled, dim=1, index=indices)
            preds_sorted_by_true[mask] = float("-inf")

            max_pred_values, _ = preds_sorted_by_true.max(dim=1, keepdim=True)

            preds_sorted_by_true_minus_max = preds_sorted_by_true - max_pred_values

            cumsums = torch.cumsum(preds_sorted_by_true_minus_max.exp().flip(dims=[1]), dim=1).flip(dims=[1])

            observation_loss = torch.log(cumsums + epsilon) - preds_sorted_by_true_minus_max

            observation_loss[mask] = 0.0

            return torch.mean(torch.sum(observation_loss, dim=1))

        def rankNet(y_pred, y_true, padded_value_indicator=PADDED_Y_VALUE,
                    weight_by_diff=False, weight_by_diff_powed=False):
            y_pred = y_pred.clone()
            y_true = y_true.clone()

            mask = y_true == padded_value_indicator
            y_pred[mask] = float('-inf')
            y_true[mask] = float('-inf')

            # here we generate every pair of indices from the range of document length in the batch
            document_pairs_candidates = list(product(range(y_true.shape[1]), repeat=2))

            pairs_true = y_true[:, document_pairs_candidates]
            selected_pred = y_pred[:, document_pairs_candidates]

            # here we calculate the relative true relevance of every candidate pair
            true_diffs = pairs_true[:, :, 0] - pairs_true[:, :, 1]
            pred_diffs = selected_pred[:, :, 0] - selected_pred[:, :, 1]

            the_mask = (true_diffs > 0) & (~torch.isinf(true_diffs))

            pred_diffs = pred_diffs[the_mask]

            weight = None
            if weight_by_diff:
                abs_diff = torch.abs(true_diffs)
                weight = abs_diff[the_mask]
            elif weight_by_diff_powed:
                true_pow_diffs = torch.pow(pairs_true[:, :, 0], 2) - torch.pow(pairs_true[:, :, 1], 2)
                abs_diff = torch.abs(true_pow_diffs)
                weight = abs_diff[the_mask]

            true_diffs = (true_diffs > 0).type(torch.float32)
            true_diffs = true_diffs[the_mask]

            return BCEWithLogitsLoss(weight=weight)(pred_diffs, true_diffs)

        def lambdaLoss(y_pred, y_true, eps=DEFAULT_EPS, padded_value_indicator=PADDED_Y_VALUE, weighing_scheme=None, k=None, sigma=1., mu=10.,
                       reduction="sum", reduction_log="binary"):
            device = y_pred.device
            y_pred = y_pred.clone()
            y_true = y_true.clone()

            padded_mask = y_true == padded_value_indicator
            y_pred[padded_mask] = float("-inf")
            y_true[padded_mask] = float("-inf")

            # Here we sort the true and predicted relevancy scores.
            y_pred_sorted, indices_pred = y_pred.sort(descending=True, dim=-1)
            y_true_sorted, _ = y_true.sort(descending=True, dim=-1)

            # After sorting, we can mask out the pairs of indices (i, j) containing index of a padded element.
            true_sorted_by_preds = torch.gather(y_true, dim=1, index=indices_pred)
            true_diffs = true_sorted_by_preds[:, :, None] - true_sorted_by_preds[:, None, :]
            padded_pairs_mask = torch.isfinite(true_diffs)

            if weighing_scheme != "ndcgLoss1_scheme":
                padded_pairs_mask = padded_pairs_mask & (true_diffs > 0)

            ndcg_at_k_mask = torch.zeros((y_pred.shape[1], y_pred.shape[1]), dtype=torch.bool, device=device)
            ndcg_at_k_mask[:k, :k] = 1

            # Here we clamp the -infs to get correct gains and ideal DCGs (maxDCGs)
            true_sorted_by_preds.clamp_(min=0.)
            y_true_sorted.clamp_(min=0.)

            # Here we find the gains, discounts and ideal DCGs per slate.
            pos_idxs = torch.arange(1, y_pred.shape[1] + 1).to(device)
            D = torch.log2(1. + pos_idxs.float())[None, :]
            maxDCGs = torch.sum(((torch.pow(2, y_true_sorted) - 1) / D)[:, :k], dim=-1).clamp(min=eps)
            G = (torch.pow(2, true_sorted_by_preds) - 1) / maxDCGs[:, None]

            # Here we apply appropriate weighing scheme - ndcgLoss1, ndcgLoss2, ndcgLoss2++ or no weights (=1.0)
            if weighing_scheme is None:
                weights = 1.
            else:
                weights = schemes[weighing_scheme](G, D, mu, true_sorted_by_preds)  # type: ignore

            # We are clamping the array entries to maintain correct backprop (log(0) and division by 0)
            scores_diffs = (y_pred_sorted[:, :, None] - y_pred_sorted[:, None, :]).clamp(min=-1e8, max=1e8)
            scores_diffs.masked_fill(torch.isnan(scores_diffs), 0.)
            weighted_probas = (torch.sigmoid(sigma * scores_diffs).clamp(min=eps) ** weights).clamp(min=eps)
            if reduction_log == "natural":
                losses = torch.log(weighted_probas)
            elif reduction_log == "binary":
                losses = torch.log2(weighted_probas)
            else:
                raise ValueError("Reduction logarithm base can be either natural or binary")

            if reduction == "sum":
                loss = -torch.sum(losses[padded_pairs_mask & ndcg_at_k_mask])
            elif reduction == "mean":
                loss = -torch.mean(losses[padded_pairs_mask & ndcg_at_k_mask])
            else:
                raise ValueError("Reduction method can be either sum or mean")

            return loss

        def ndcgLoss2_scheme(G, D, *args):
            pos_idxs = torch.arange(1, G.shape[1] + 1, device=G.device)
            delta_idxs = torch.abs(pos_idxs[:, None] - pos_idxs[None, :])
            deltas = torch.abs(torch.pow(torch.abs(D[0, delta_idxs - 1]), -1.) - torch.pow(torch.abs(D[0, delta_idxs]), -1.))
            deltas.diagonal().zero_()

            return deltas[None, :, :] * torch.abs(G[:, :, None] - G[:, None, :])

        def lambdaRank_scheme(G, D, *args):
            return torch.abs(torch.pow(D[:, :, None], -1.) - torch.pow(D[:, None, :], -1.)) * torch.abs(G[:, :, None] - G[:, None, :])

        def ndcgLoss2PP_scheme(G, D, *args):
            return args[0] * ndcgLoss2_scheme(G, D) + lambdaRank_scheme(G, D)

        schemes = {"ndcgLoss2PP_scheme": ndcgLoss2PP_scheme, "lambdaRank_scheme": lambdaRank_scheme}

        def approxNDCGLoss(y_pred, y_true, padded_value_indicator=PADDED_Y_VALUE, alpha=1.):
            device = y_pred.device
            y_pred = y_pred.clone()
            y_true = y_true.clone()

            padded_mask = y_true == padded_value_indicator
            y_pred[padded_mask] = float("-inf")
            y_true[padded_mask] = float("-inf")

            # Here we sort the true and predicted relevancy scores.
            y_pred_sorted, indices_pred = y_pred.sort(descending=True, dim=-1)
            y_true_sorted, _ = y_true.sort(descending=True, dim=-1)

            # After sorting, we can mask out the pairs of indices (i, j) containing index of a padded element.
            true_sorted_by_preds = torch.gather(y_true, dim=1, index=indices_pred)
            true_diffs = true_sorted_by_preds[:, :, None] - true_sorted_by_preds[:, None, :]
            padded_pairs_mask = torch.isfinite(true_diffs)
            padded_pairs_mask.diagonal(dim1=-2, dim2=-1).zero_()

            # Here we clamp the -infs to get correct gains and ideal DCGs (maxDCGs)
            true_sorted_by_preds.clamp_(min=0.)
            y_true_sorted.clamp_(min=0.)

            # Here we find the gains, discounts and ideal DCGs per listing.
            pos_idxs = torch.arange(1, y_pred.shape[1] + 1).to(device)
            D = torch.log2(1. + pos_idxs.float())[None, :]
            maxDCGs = torch.sum((torch.pow(2, y_true_sorted) - 1) / D, dim=-1).clamp(min=DEFAULT_EPS)
            G = (torch.pow(2, true_sorted_by_preds) - 1) / maxDCGs[:, None]

            # Here we approximate the ranking positions according to Eqs 19-20 and later approximate NDCG (Eq 21)
            scores_diffs = (y_pred_sorted[:, :, None] - y_pred_sorted[:, None, :])
            scores_diffs[~padded_pairs_mask] = 0.
            approx_pos = 1. + torch.sum(padded_pairs_mask.float() * (torch.sigmoid(-alpha * scores_diffs).clamp(min=DEFAULT_EPS)), dim=-1)
            approx_D = torch.log2(1. + approx_pos)
            approx_NDCG = torch.sum((G / approx_D), dim=-1)

            return -torch.mean(approx_NDCG)

        rs = np.random.RandomState(5)
        X = torch.tensor(rs.standard_normal((2, 4, 3)).astype(np.float32))
        y_true = torch.tensor([[2., 0., 1., 3.], [1., 2., 0., -1.]])
        losses = {
            "listNet": listNet,
            "rankNet_weightByGTDiff": lambda p, t: rankNet(p, t, weight_by_diff=True),
            "lambdaLoss_ndcgLoss2PP": lambda p, t: lambdaLoss(p, t, weighing_scheme="ndcgLoss2PP_scheme", k=3),
            "approxNDCG": approxNDCGLoss,
        }
        model = init_params(torch, nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)), seed=6, scale=0.6)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for name, loss_fn in losses.items():
            y_pred = model(X).squeeze(-1)
            loss = loss_fn(y_pred, y_true)
            optimizer.zero_grad()
            loss.backward()
            log(name, loss)
            log(name + "_grads", [p.grad for p in model.parameters()])
            optimizer.step()
        # listMLE shuffles with randperm: without ties in y_true its loss does not depend on the draw
        log("listMLE", listMLE(y_pred, y_true))
        log("y_true_unchanged", y_true)
        for bad in (lambda: lambdaLoss(y_pred, y_true, reduction="none"),
                    lambda: lambdaLoss(y_pred, y_true, reduction_log="ten")):
            try:
                bad()
            except ValueError as e:
                log("bad", str(e))

    run_both(program)


# lucidrains/mixture-of-experts mixture_of_experts/mixture_of_experts.py (helpers, Experts,
# Top2Gating, MoE), unchanged but for the GELU_ fallback (nn.GELU exists); HeirarchicalMoE is left
# out (it doubles the test's cold time). The gate's second-expert policy is chosen through the
# constructor: 'all' when training ('random' draws ``uniform_``, whose streams differ; 'threshold'
# raises, see the end of the program) and 'none' in eval mode. Sizes: 2 sequences of 6 tokens of
# width 4, 4 experts of hidden width 3, so the expert capacity (4) drops tokens; two SGD steps on
# an MSE + balancing loss, then an eval-mode forward.
def test_lucidrains_mixture_of_experts_top2_gating():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        from inspect import isfunction

        MIN_EXPERT_CAPACITY = 4

        def default(val, default_val):
            default_val = default_val() if isfunction(default_val) else default_val
            return val if val is not None else default_val

        def cast_tuple(el):
            return el if isinstance(el, tuple) else (el,)

        def top1(t):
            values, index = t.topk(k=1, dim=-1)
            values, index = map(lambda x: x.squeeze(dim=-1), (values, index))
            return values, index

        def cumsum_exclusive(t, dim=-1):
            num_dims = len(t.shape)
            num_pad_dims = - dim - 1
            pre_padding = (0, 0) * num_pad_dims
            pre_slice   = (slice(None),) * num_pad_dims
            padded_t = F.pad(t, (*pre_padding, 1, 0)).cumsum(dim=dim)
            return padded_t[(..., slice(None, -1), *pre_slice)]

        def safe_one_hot(indexes, max_length):
            max_index = indexes.max() + 1
            return F.one_hot(indexes, max(max_index + 1, max_length))[..., :max_length]

        def init_(t):
            dim = t.shape[-1]
            std = 1 / math.sqrt(dim)
            return t.uniform_(-std, std)

        GELU = nn.GELU

        class Experts(nn.Module):
            def __init__(self,
                dim,
                num_experts = 16,
                hidden_dim = None,
                activation = GELU):
                super().__init__()

                hidden_dim = default(hidden_dim, dim * 4)
                num_experts = cast_tuple(num_experts)

                w1 = torch.zeros(*num_experts, dim, hidden_dim)
                w2 = torch.zeros(*num_experts, hidden_dim, dim)

                w1 = init_(w1)
                w2 = init_(w2)

                self.w1 = nn.Parameter(w1)
                self.w2 = nn.Parameter(w2)
                self.act = activation()

            def forward(self, x):
                hidden = torch.einsum('...nd,...dh->...nh', x, self.w1)
                hidden = self.act(hidden)
                out    = torch.einsum('...nh,...hd->...nd', hidden, self.w2)
                return out

        class Top2Gating(nn.Module):
            def __init__(
                self,
                dim,
                num_gates,
                eps = 1e-9,
                outer_expert_dims = tuple(),
                second_policy_train = 'random',
                second_policy_eval = 'random',
                second_threshold_train = 0.2,
                second_threshold_eval = 0.2,
                capacity_factor_train = 1.25,
                capacity_factor_eval = 2.):
                super().__init__()

                self.eps = eps
                self.num_gates = num_gates
                self.w_gating = nn.Parameter(torch.randn(*outer_expert_dims, dim, num_gates))

                self.second_policy_train = second_policy_train
                self.second_policy_eval = second_policy_eval
                self.second_threshold_train = second_threshold_train
                self.second_threshold_eval = second_threshold_eval
                self.capacity_factor_train = capacity_factor_train
                self.capacity_factor_eval = capacity_factor_eval

            def forward(self, x, importance = None):
                *_, b, group_size, dim = x.shape
                num_gates = self.num_gates

                if self.training:
                    policy = self.second_policy_train
                    threshold = self.second_threshold_train
                    capacity_factor = self.capacity_factor_train
                else:
                    policy = self.second_policy_eval
                    threshold = self.second_threshold_eval
                    capacity_factor = self.capacity_factor_eval

                raw_gates = torch.einsum('...bnd,...de->...bne', x, self.w_gating)
                raw_gates = raw_gates.softmax(dim=-1)

                gate_1, index_1 = top1(raw_gates)
                mask_1 = F.one_hot(index_1, num_gates).float()
                density_1_proxy = raw_gates

                if importance is not None:
                    equals_one_mask = (importance == 1.).float()
                    mask_1 *= equals_one_mask[..., None]
                    gate_1 *= equals_one_mask
                    density_1_proxy = density_1_proxy * equals_one_mask[..., None]
                    del equals_one_mask

                gates_without_top_1 = raw_gates * (1. - mask_1)

                gate_2, index_2 = top1(gates_without_top_1)
                mask_2 = F.one_hot(index_2, num_gates).float()

                if importance is not None:
                    greater_zero_mask = (importance > 0.).float()
                    mask_2 *= greater_zero_mask[..., None]
                    del greater_zero_mask

                # normalize top2 gate scores
                denom = gate_1 + gate_2 + self.eps
                gate_1 /= denom
                gate_2 /= denom

                density_1 = mask_1.mean(dim=-2)
                density_1_proxy = density_1_proxy.mean(dim=-2)
                loss = (density_1_proxy * density_1).mean() * float(num_gates ** 2)

                if policy == "all":
                    pass
                elif policy == "none":
                    mask_2 = torch.zeros_like(mask_2)
                elif policy == "threshold":
                    mask_2 *= (gate_2 > threshold).float()
                elif policy == "random":
                    probs = torch.zeros_like(gate_2).uniform_(0., 1.)
                    mask_2 *= (probs < (gate_2 / max(threshold, self.eps))).float().unsqueeze(-1)
                else:
                    raise ValueError(f"Unknown policy {policy}")

                expert_capacity = min(group_size, int((group_size * capacity_factor) / num_gates))
                expert_capacity = max(expert_capacity, MIN_EXPERT_CAPACITY)
                expert_capacity_f = float(expert_capacity)

                position_in_expert_1 = cumsum_exclusive(mask_1, dim=-2) * mask_1
                mask_1 *= (position_in_expert_1 < expert_capacity_f).float()
                mask_1_count = mask_1.sum(dim=-2, keepdim=True)
                mask_1_flat = mask_1.sum(dim=-1)
                position_in_expert_1 = position_in_expert_1.sum(dim=-1)
                gate_1 *= mask_1_flat

                position_in_expert_2 = cumsum_exclusive(mask_2, dim=-2) + mask_1_count
                position_in_expert_2 *= mask_2
                mask_2 *= (position_in_expert_2 < expert_capacity_f).float()
                mask_2_flat = mask_2.sum(dim=-1)

                position_in_expert_2 = position_in_expert_2.sum(dim=-1)
                gate_2 *= mask_2_flat

                combine_tensor = (
                    gate_1[..., None, None]
                    * mask_1_flat[..., None, None]
                    * F.one_hot(index_1, num_gates)[..., None]
                    * safe_one_hot(position_in_expert_1.long(), expert_capacity)[..., None, :] +
                    gate_2[..., None, None]
                    * mask_2_flat[..., None, None]
                    * F.one_hot(index_2, num_gates)[..., None]
                    * safe_one_hot(position_in_expert_2.long(), expert_capacity)[..., None, :]
                )

                dispatch_tensor = combine_tensor.bool().to(combine_tensor)
                return dispatch_tensor, combine_tensor, loss

        class MoE(nn.Module):
            def __init__(self,
                dim,
                num_experts = 16,
                hidden_dim = None,
                activation = nn.ReLU,
                second_policy_train = 'random',
                second_policy_eval = 'random',
                second_threshold_train = 0.2,
                second_threshold_eval = 0.2,
                capacity_factor_train = 1.25,
                capacity_factor_eval = 2.,
                loss_coef = 1e-2,
                experts = None):
                super().__init__()

                self.num_experts = num_experts

                gating_kwargs = {'second_policy_train': second_policy_train, 'second_policy_eval': second_policy_eval, 'second_threshold_train': second_threshold_train, 'second_threshold_eval': second_threshold_eval, 'capacity_factor_train': capacity_factor_train, 'capacity_factor_eval': capacity_factor_eval}
                self.gate = Top2Gating(dim, num_gates = num_experts, **gating_kwargs)
                self.experts = default(experts, lambda: Experts(dim, num_experts = num_experts, hidden_dim = hidden_dim, activation = activation))
                self.loss_coef = loss_coef

            def forward(self, inputs, **kwargs):
                b, n, d, e = *inputs.shape, self.num_experts
                dispatch_tensor, combine_tensor, loss = self.gate(inputs)
                expert_inputs = torch.einsum('bnd,bnec->ebcd', inputs, dispatch_tensor)

                orig_shape = expert_inputs.shape
                expert_inputs = expert_inputs.reshape(e, -1, d)
                expert_outputs = self.experts(expert_inputs)
                expert_outputs = expert_outputs.reshape(*orig_shape)

                output = torch.einsum('ebcd,bnec->bnd', expert_outputs, combine_tensor)
                return output, loss * self.loss_coef

        rs = np.random.RandomState(7)
        inputs = torch.tensor(rs.standard_normal((2, 6, 4)).astype(np.float32))
        target = torch.tensor(rs.standard_normal((2, 6, 4)).astype(np.float32))
        for name, moe in (("moe", MoE(dim=4, num_experts=4, hidden_dim=3, second_policy_train='all',
                                      second_policy_eval='none')),):
            init_params(torch, moe, seed=8, scale=0.8)
            log(name + "_params", [(n, tuple(p.shape)) for n, p in moe.named_parameters()])
            opt = torch.optim.SGD(moe.parameters(), lr=0.1)
            for step in range(2):
                out, aux_loss = moe(inputs)
                loss = F.mse_loss(out, target) + aux_loss
                opt.zero_grad()
                loss.backward()
                opt.step()
                log(f"{name}_out{step}", out)
                log(f"{name}_aux{step}", aux_loss)
                log(f"{name}_grads{step}", [p.grad for p in moe.parameters()])
            moe.eval()
            with torch.no_grad():
                out, aux_loss = moe(inputs)
            log(name + "_eval", out)
            log(name + "_eval_aux", aux_loss)
        dispatch, combine, _ = moe.gate(inputs)
        log("dispatch", dispatch)
        log("combine", combine)
        log("cumsum_exclusive", cumsum_exclusive(torch.arange(6.).view(2, 3), dim=-1))
        log("safe_one_hot", safe_one_hot(torch.tensor([0, 5, 2]), 4))
        try:
            MoE(dim=4, num_experts=4, second_policy_eval='sometimes').eval()(inputs)
        except ValueError as e:
            log("bad_policy", str(e))
        # the 'threshold' policy multiplies the [b, n, e] mask by a [b, n] one (no unsqueeze(-1)):
        # a broadcast error in both libraries
        try:
            MoE(dim=4, num_experts=4, second_policy_train='threshold')(inputs)
        except RuntimeError:
            log("threshold_policy", "RuntimeError")

    run_both(program)
