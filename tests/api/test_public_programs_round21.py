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
- juntang-zhuang/Adabelief-Optimizer: ``AdaBelief`` (gated on ``torch.__version__ >= "1.5.0"``,
  ``zeros_like(memory_format=torch.preserve_format)``, AMSGrad through ``torch.max(a, b, out=a)``,
  coupled weight decay written into ``p.grad.data`` in place, the constructor's prints);
- alphadl/lookahead.pytorch: ``Lookahead`` wrapping ``torch.optim.Adam``, an ``Optimizer``
  subclass that never calls ``Optimizer.__init__`` (shares the inner ``param_groups``, keeps slow
  weights in its own ``defaultdict`` state, syncs every k steps), its ``state_dict`` keyed by
  ``id(param)`` and the ``zero_grad``/``load_state_dict`` of the base class that need the missing
  ``__init__`` attributes;
- allegro/allRank: the learning-to-rank losses ``listMLE`` (``randperm`` shuffle: without ties its
  loss does not depend on the permutation), ``rankNet`` (fancy indexing by a list of
  ``itertools.product`` pairs, ``BCEWithLogitsLoss(weight=...)``) and ``lambdaLoss`` with the
  ``ndcgLoss2PP`` scheme (``-inf`` padding through ``sort``/``gather``/``isfinite``, NaN pair
  differences masked out by boolean indexing, ``deltas.diagonal().zero_()``) on a padded batch of
  slates (its ``listNet`` and ``approxNDCGLoss`` are compared with torch in
  ``tests/compile/test_public_patterns_round22.py``);
- lucidrains/mixture-of-experts: ``Top2Gating`` + ``MoE`` (``einsum`` with ``...`` dispatch and
  combine, ``topk`` values squeezed and then divided in place, ``F.one_hot`` and its
  ``safe_one_hot`` of a tensor-valued length, ``cumsum_exclusive`` through ``F.pad`` of the
  second-to-last dim, expert capacity dropping tokens, ``combine_tensor.bool().to(combine_tensor)``),
  trained on MSE + its load-balancing loss; its 'threshold' policy's broadcast error in both;
- msurtsukov/neural-ode: the notebook's Neural ODE, an ``autograd.Function`` (``ODEAdjoint``)
  taking a module as a non-tensor input and solving the adjoint ODE backwards in its ``backward``
  with Euler steps whose count comes from ``.item()``, ``autograd.grad(..., allow_unused=True)``
  under ``set_grad_enabled(True)``, ``adj_p[:] += ...`` writes and ``bmm``; gradients for the
  parameters, the initial state and the observation times.

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


# LiyuanLucasLiu/RAdam radam/radam.py (RAdam, PlainRAdam, AdamW), unchanged but for the
# ``from torch.optim.optimizer import Optimizer, required`` line and, in PlainRAdam and AdamW, the
# argument checks, ``__setstate__`` and sparse-gradient checks RAdam shows. Each trains its own copy of a
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


# juntang-zhuang/Adabelief-Optimizer pypi_packages/adabelief_pytorch0.2.0/adabelief_pytorch/AdaBelief.py
# (AdaBelief, unchanged but for the import lines: tabulate/colorama are only used by the change-log
# banner, which ``print_change_log=False`` skips). Its module-level ``version_higher = (
# torch.__version__ >= "1.5.0")`` picks ``zeros_like(..., memory_format=torch.preserve_format)``;
# the constructor prints its options (compared). Two runs of the 4-3-3 MLP, 6 steps each with
# beta2=0.9 (the rectification turns on at step 6): decoupled weight decay + AMSGrad
# (``torch.max(a, b, out=a)``), then coupled decay without rectification; then ``reset()``.
def test_adabelief_optimizer():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Optimizer = torch.optim.Optimizer

        version_higher = ( torch.__version__ >= "1.5.0" )

        class AdaBelief(Optimizer):

            def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-16,
                         weight_decay=0, amsgrad=False, weight_decouple=True, fixed_decay=False, rectify=True,
                         degenerated_to_sgd=True, print_change_log = True):

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

                defaults = dict(lr=lr, betas=betas, eps=eps,
                                weight_decay=weight_decay, amsgrad=amsgrad, buffer=[[None, None, None] for _ in range(10)])
                super(AdaBelief, self).__init__(params, defaults)

                self.degenerated_to_sgd = degenerated_to_sgd
                self.weight_decouple = weight_decouple
                self.rectify = rectify
                self.fixed_decay = fixed_decay
                if self.weight_decouple:
                    print('Weight decoupling enabled in AdaBelief')
                    if self.fixed_decay:
                        print('Weight decay fixed')
                if self.rectify:
                    print('Rectification enabled in AdaBelief')
                if amsgrad:
                    print('AMSGrad enabled in AdaBelief')

            def __setstate__(self, state):
                super(AdaBelief, self).__setstate__(state)
                for group in self.param_groups:
                    group.setdefault('amsgrad', False)

            def reset(self):
                for group in self.param_groups:
                    for p in group['params']:
                        state = self.state[p]
                        amsgrad = group['amsgrad']

                        # State initialization
                        state['step'] = 0
                        # Exponential moving average of gradient values
                        state['exp_avg'] = torch.zeros_like(p.data,memory_format=torch.preserve_format) \
                            if version_higher else torch.zeros_like(p.data)

                        # Exponential moving average of squared gradient values
                        state['exp_avg_var'] = torch.zeros_like(p.data,memory_format=torch.preserve_format) \
                            if version_higher else torch.zeros_like(p.data)

                        if amsgrad:
                            # Maintains max of all exp. moving avg. of sq. grad. values
                            state['max_exp_avg_var'] = torch.zeros_like(p.data,memory_format=torch.preserve_format) \
                                if version_higher else torch.zeros_like(p.data)

            def step(self, closure=None):
                loss = None
                if closure is not None:
                    loss = closure()

                for group in self.param_groups:
                    for p in group['params']:
                        if p.grad is None:
                            continue
                        grad = p.grad.data
                        if grad.is_sparse:
                            raise RuntimeError(
                                'AdaBelief does not support sparse gradients, please consider SparseAdam instead')
                        amsgrad = group['amsgrad']

                        state = self.state[p]

                        beta1, beta2 = group['betas']

                        # State initialization
                        if len(state) == 0:
                            state['step'] = 0
                            # Exponential moving average of gradient values
                            state['exp_avg'] = torch.zeros_like(p.data,memory_format=torch.preserve_format) \
                                if version_higher else torch.zeros_like(p.data)
                            # Exponential moving average of squared gradient values
                            state['exp_avg_var'] = torch.zeros_like(p.data,memory_format=torch.preserve_format) \
                                if version_higher else torch.zeros_like(p.data)
                            if amsgrad:
                                # Maintains max of all exp. moving avg. of sq. grad. values
                                state['max_exp_avg_var'] = torch.zeros_like(p.data,memory_format=torch.preserve_format) \
                                    if version_higher else torch.zeros_like(p.data)

                        # perform weight decay, check if decoupled weight decay
                        if self.weight_decouple:
                            if not self.fixed_decay:
                                p.data.mul_(1.0 - group['lr'] * group['weight_decay'])
                            else:
                                p.data.mul_(1.0 - group['weight_decay'])
                        else:
                            if group['weight_decay'] != 0:
                                grad.add_(p.data, alpha=group['weight_decay'])

                        # get current state variable
                        exp_avg, exp_avg_var = state['exp_avg'], state['exp_avg_var']

                        state['step'] += 1
                        bias_correction1 = 1 - beta1 ** state['step']
                        bias_correction2 = 1 - beta2 ** state['step']

                        # Update first and second moment running average
                        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                        grad_residual = grad - exp_avg
                        exp_avg_var.mul_(beta2).addcmul_( grad_residual, grad_residual, value=1 - beta2)

                        if amsgrad:
                            max_exp_avg_var = state['max_exp_avg_var']
                            # Maintains the maximum of all 2nd moment running avg. till now
                            torch.max(max_exp_avg_var, exp_avg_var.add_(group['eps']), out=max_exp_avg_var)

                            # Use the max. for normalizing running avg. of gradient
                            denom = (max_exp_avg_var.sqrt() / math.sqrt(bias_correction2)).add_(group['eps'])
                        else:
                            denom = (exp_avg_var.add_(group['eps']).sqrt() / math.sqrt(bias_correction2)).add_(group['eps'])

                        # update
                        if not self.rectify:
                            # Default update
                            step_size = group['lr'] / bias_correction1
                            p.data.addcdiv_( exp_avg, denom, value=-step_size)

                        else:  # Rectified update, forked from RAdam
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
                                    step_size = math.sqrt(
                                        (1 - beta2_t) * (N_sma - 4) / (N_sma_max - 4) * (N_sma - 2) / N_sma * N_sma_max / (
                                                N_sma_max - 2)) / (1 - beta1 ** state['step'])
                                elif self.degenerated_to_sgd:
                                    step_size = 1.0 / (1 - beta1 ** state['step'])
                                else:
                                    step_size = -1
                                buffered[2] = step_size

                            if N_sma >= 5:
                                denom = exp_avg_var.sqrt().add_(group['eps'])
                                p.data.addcdiv_(exp_avg, denom, value=-step_size * group['lr'])
                            elif step_size > 0:
                                p.data.add_( exp_avg, alpha=-step_size * group['lr'])

                return loss

        log("version_higher", version_higher)
        x, y = _xy(torch)
        for name, kw in (("decoupled_amsgrad", dict(weight_decay=1e-2, amsgrad=True, fixed_decay=True)),
                         ("coupled_plain", dict(weight_decay=1e-2, weight_decouple=False, rectify=False))):
            model = init_params(torch, nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 3)), seed=2, scale=0.5)
            opt = AdaBelief(model.parameters(), lr=0.05, betas=(0.9, 0.9), eps=1e-8, print_change_log=False, **kw)
            for step in range(6):
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                log(f"{name}_loss{step}", loss)
            w = model[0].weight
            log(name + "_w", w)
            log(name + "_grad_decayed", w.grad)      # coupled decay adds into p.grad.data in place
            log(name + "_state", sorted(opt.state[w]))
            log(name + "_exp_avg_var", opt.state[w]['exp_avg_var'])
        opt.reset()
        log("reset", [(s['step'], float(s['exp_avg'].abs().sum())) for s in opt.state.values()])

    run_both(program)


# alphadl/lookahead.pytorch lookahead.py (Lookahead, unchanged). It wraps torch.optim.Adam (k=2,
# alpha=0.5) on the 4-3-3 MLP for 4 steps, then round-trips its state_dict into a fresh wrapper.
# It never calls ``Optimizer.__init__``, so the base class's ``zero_grad`` and ``load_state_dict``
# meet missing attributes (both libraries raise AttributeError: the README's
# ``lookahead.zero_grad()`` fails under torch 2.x), so the program zeroes grads through the model.
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


# allegro/allRank allrank/models/losses/{listMLE,rankNet,lambdaLoss}.py,
# unchanged but for the imports (PADDED_Y_VALUE = -1, DEFAULT_EPS = 1e-10), docstrings and the
# ``globals()[weighing_scheme]`` lookup (a dict of the schemes: they are local here). A 3-4-1
# scorer (allRank's FCModel-like ``Linear -> ReLU -> Linear``, squeezed to [batch, slate]) ranks 2
# slates of 4 documents, the second padded at its last place; each loss in turn takes one SGD
# step of one shared model (its loss and gradients compared).
def test_allrank_learning_to_rank_losses():
    def program(torch, log):
        nn = torch.nn
        BCEWithLogitsLoss = torch.nn.BCEWithLogitsLoss
        PADDED_Y_VALUE = -1
        DEFAULT_EPS = 1e-10

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

        rs = np.random.RandomState(5)
        X = torch.tensor(rs.standard_normal((2, 4, 3)).astype(np.float32))
        y_true = torch.tensor([[2., 0., 1., 3.], [1., 2., 0., -1.]])
        losses = {
            "rankNet_weightByGTDiff": lambda p, t: rankNet(p, t, weight_by_diff=True),
            "lambdaLoss_ndcgLoss2PP": lambda p, t: lambdaLoss(p, t, weighing_scheme="ndcgLoss2PP_scheme", k=3),
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


# msurtsukov/neural-ode "Neural ODEs.ipynb" (ode_solve, ODEF, ODEAdjoint, NeuralODE, TestODEF,
# NNODEF and conduct_experiment's training step), unchanged but for the plotting and data cells:
# the true dynamics (TestODEF with the notebook's matrices) give 3 observations at t = 0, 0.12,
# 0.24 (3 Euler steps of h <= 0.05 per interval; numpy noise in place of ``randn_like``), and a
# time-dependent NNODEF(2, 4) is fitted for 2 Adam steps on the whole window (create_batch's
# random windows dropped). Its gradients come from the adjoint ODE solved backwards inside the
# custom ``autograd.Function``'s backward (``autograd.grad`` with ``allow_unused`` under
# ``set_grad_enabled(True)``, ``adj_z[:] = ...``/``adj_p[:] += ...`` writes, ``bmm``).
def test_neural_ode_adjoint_function():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Tensor = torch.Tensor
        Variable = torch.autograd.Variable

        def ode_solve(z0, t0, t1, f):
            """
            Simplest Euler ODE initial value solver
            """
            h_max = 0.05
            n_steps = math.ceil((abs(t1 - t0)/h_max).max().item())

            h = (t1 - t0)/n_steps
            t = t0
            z = z0

            for i_step in range(n_steps):
                z = z + h * f(z, t)
                t = t + h
            return z

        class ODEF(nn.Module):
            def forward_with_grad(self, z, t, grad_outputs):
                """Compute f and a df/dz, a df/dp, a df/dt"""
                batch_size = z.shape[0]

                out = self.forward(z, t)

                a = grad_outputs
                adfdz, adfdt, *adfdp = torch.autograd.grad(
                    (out,), (z, t) + tuple(self.parameters()), grad_outputs=(a),
                    allow_unused=True, retain_graph=True
                )
                # grad method automatically sums gradients for batch items, we have to expand them back
                if adfdp is not None:
                    adfdp = torch.cat([p_grad.flatten() for p_grad in adfdp]).unsqueeze(0)
                    adfdp = adfdp.expand(batch_size, -1) / batch_size
                if adfdt is not None:
                    adfdt = adfdt.expand(batch_size, 1) / batch_size
                return out, adfdz, adfdt, adfdp

            def flatten_parameters(self):
                p_shapes = []
                flat_parameters = []
                for p in self.parameters():
                    p_shapes.append(p.size())
                    flat_parameters.append(p.flatten())
                return torch.cat(flat_parameters)

        class ODEAdjoint(torch.autograd.Function):
            @staticmethod
            def forward(ctx, z0, t, flat_parameters, func):
                assert isinstance(func, ODEF)
                bs, *z_shape = z0.size()
                time_len = t.size(0)

                with torch.no_grad():
                    z = torch.zeros(time_len, bs, *z_shape).to(z0)
                    z[0] = z0
                    for i_t in range(time_len - 1):
                        z0 = ode_solve(z0, t[i_t], t[i_t+1], func)
                        z[i_t+1] = z0

                ctx.func = func
                ctx.save_for_backward(t, z.clone(), flat_parameters)
                return z

            @staticmethod
            def backward(ctx, dLdz):
                """
                dLdz shape: time_len, batch_size, *z_shape
                """
                func = ctx.func
                t, z, flat_parameters = ctx.saved_tensors
                time_len, bs, *z_shape = z.size()
                n_dim = np.prod(z_shape)
                n_params = flat_parameters.size(0)

                # Dynamics of augmented system to be calculated backwards in time
                def augmented_dynamics(aug_z_i, t_i):
                    """
                    tensors here are temporal slices
                    t_i - is tensor with size: bs, 1
                    aug_z_i - is tensor with size: bs, n_dim*2 + n_params + 1
                    """
                    z_i, a = aug_z_i[:, :n_dim], aug_z_i[:, n_dim:2*n_dim]  # ignore parameters and time

                    # Unflatten z and a
                    z_i = z_i.view(bs, *z_shape)
                    a = a.view(bs, *z_shape)
                    with torch.set_grad_enabled(True):
                        t_i = t_i.detach().requires_grad_(True)
                        z_i = z_i.detach().requires_grad_(True)
                        func_eval, adfdz, adfdt, adfdp = func.forward_with_grad(z_i, t_i, grad_outputs=a)  # bs, *z_shape
                        adfdz = adfdz.to(z_i) if adfdz is not None else torch.zeros(bs, *z_shape).to(z_i)
                        adfdp = adfdp.to(z_i) if adfdp is not None else torch.zeros(bs, n_params).to(z_i)
                        adfdt = adfdt.to(z_i) if adfdt is not None else torch.zeros(bs, 1).to(z_i)

                    # Flatten f and adfdz
                    func_eval = func_eval.view(bs, n_dim)
                    adfdz = adfdz.view(bs, n_dim)
                    return torch.cat((func_eval, -adfdz, -adfdp, -adfdt), dim=1)

                dLdz = dLdz.view(time_len, bs, n_dim)  # flatten dLdz for convenience
                with torch.no_grad():
                    ## Create placeholders for output gradients
                    # Prev computed backwards adjoints to be adjusted by direct gradients
                    adj_z = torch.zeros(bs, n_dim).to(dLdz)
                    adj_p = torch.zeros(bs, n_params).to(dLdz)
                    # In contrast to z and p we need to return gradients for all times
                    adj_t = torch.zeros(time_len, bs, 1).to(dLdz)

                    for i_t in range(time_len-1, 0, -1):
                        z_i = z[i_t]
                        t_i = t[i_t]
                        f_i = func(z_i, t_i).view(bs, n_dim)

                        # Compute direct gradients
                        dLdz_i = dLdz[i_t]
                        dLdt_i = torch.bmm(torch.transpose(dLdz_i.unsqueeze(-1), 1, 2), f_i.unsqueeze(-1))[:, 0]

                        # Adjusting adjoints with direct gradients
                        adj_z += dLdz_i
                        adj_t[i_t] = adj_t[i_t] - dLdt_i

                        # Pack augmented variable
                        aug_z = torch.cat((z_i.view(bs, n_dim), adj_z, torch.zeros(bs, n_params).to(z), adj_t[i_t]), dim=-1)

                        # Solve augmented system backwards
                        aug_ans = ode_solve(aug_z, t_i, t[i_t-1], augmented_dynamics)

                        # Unpack solved backwards augmented system
                        adj_z[:] = aug_ans[:, n_dim:2*n_dim]
                        adj_p[:] += aug_ans[:, 2*n_dim:2*n_dim + n_params]
                        adj_t[i_t-1] = aug_ans[:, 2*n_dim + n_params:]

                        del aug_z, aug_ans

                    ## Adjust 0 time adjoint with direct gradients
                    # Compute direct gradients
                    dLdz_0 = dLdz[0]
                    dLdt_0 = torch.bmm(torch.transpose(dLdz_0.unsqueeze(-1), 1, 2), f_i.unsqueeze(-1))[:, 0]

                    # Adjust adjoints
                    adj_z += dLdz_0
                    adj_t[0] = adj_t[0] - dLdt_0
                return adj_z.view(bs, *z_shape), adj_t, adj_p, None

        class NeuralODE(nn.Module):
            def __init__(self, func):
                super(NeuralODE, self).__init__()
                assert isinstance(func, ODEF)
                self.func = func

            def forward(self, z0, t=Tensor([0., 1.]), return_whole_sequence=False):
                t = t.to(z0)
                z = ODEAdjoint.apply(z0, t, self.func.flatten_parameters(), self.func)
                if return_whole_sequence:
                    return z
                else:
                    return z[-1]

        class TestODEF(ODEF):
            def __init__(self, A, B, x0):
                super(TestODEF, self).__init__()
                self.A = nn.Linear(2, 2, bias=False)
                self.A.weight = nn.Parameter(A)
                self.B = nn.Linear(2, 2, bias=False)
                self.B.weight = nn.Parameter(B)
                self.x0 = nn.Parameter(x0)

            def forward(self, x, t):
                xTx0 = torch.sum(x*self.x0, dim=1)
                dxdt = torch.sigmoid(xTx0) * self.A(x - self.x0) + torch.sigmoid(-xTx0) * self.B(x + self.x0)
                return dxdt

        class NNODEF(ODEF):
            def __init__(self, in_dim, hid_dim, time_invariant=False):
                super(NNODEF, self).__init__()
                self.time_invariant = time_invariant

                if time_invariant:
                    self.lin1 = nn.Linear(in_dim, hid_dim)
                else:
                    self.lin1 = nn.Linear(in_dim+1, hid_dim)
                self.lin2 = nn.Linear(hid_dim, hid_dim)
                self.lin3 = nn.Linear(hid_dim, in_dim)
                self.elu = nn.ELU(inplace=True)

            def forward(self, x, t):
                if not self.time_invariant:
                    x = torch.cat((x, t), dim=-1)

                h = self.elu(self.lin1(x))
                h = self.elu(self.lin2(h))
                out = self.lin3(h)
                return out

        func = TestODEF(Tensor([[-0.1, -0.5], [0.5, -0.1]]), Tensor([[0.2, 1.], [-1, 0.2]]), Tensor([[-1., 0.]]))
        ode_true = NeuralODE(func)
        ode_trained = NeuralODE(init_params(torch, NNODEF(2, 4, time_invariant=False), seed=9, scale=0.5))

        z0 = Variable(torch.Tensor([[0.6, 0.3]]))
        times_np = np.linspace(0, 0.24, num=3)
        times_np = np.hstack([times_np[:, None]])
        times = torch.from_numpy(times_np[:, :, None]).to(z0)
        obs = ode_true(z0, times, return_whole_sequence=True).detach()
        obs = obs + torch.tensor(np.random.RandomState(10).standard_normal(tuple(obs.shape)).astype(np.float32)) * 0.01
        log("obs", obs)

        optimizer = torch.optim.Adam(ode_trained.parameters(), lr=0.01)
        obs_, ts_ = obs, times
        for i in range(2):
            z_ = ode_trained(obs_[0], ts_, return_whole_sequence=True)
            log(f"z_grad_fn{i}", type(z_.grad_fn).__name__)
            loss = F.mse_loss(z_, obs_.detach())

            optimizer.zero_grad()
            loss.backward(retain_graph=True)
            log(f"loss{i}", loss)
            log(f"grads{i}", [p.grad for p in ode_trained.parameters()])
            optimizer.step()
        # the gradients for z0 and the observation times come out of the same backward
        z0g = obs[0].clone().requires_grad_()
        tg = times.clone().requires_grad_()
        out = ode_trained(z0g, tg)
        gz, gt = torch.autograd.grad(out.sum(), (z0g, tg))
        log("grad_z0", gz)
        log("grad_t", gt)

    run_both(program)
