"""Round-21 public programs (``tests/api/test_public_programs_round21.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager (and == torch: none of these steps draws random numbers) with the harness
(tiny sizes, numpy data):

- lucidrains/lion-pytorch: a user ``Optimizer`` subclass (``Lion``) whose ``@torch.no_grad()``
  ``step`` clones, ``sign_``s and writes ``p.data.mul_`` inside the compiled step: one trace, no
  break;
- LiyuanLucasLiu/RAdam: ``RAdam.step`` keeps ``state['step']`` as a Python int (and writes the
  group's ``buffer`` list); a compiled step cannot replay that side effect, so it breaks there and
  every call runs eagerly, with torch's values through the switch to the rectified update;
- allegro/allRank: ``approxNDCGLoss`` + ``listNet`` (``-inf`` written through boolean masks,
  ``sort``/``gather``, ``diagonal().zero_()`` on a bool mask, ``scores_diffs[~mask] = 0.``) trace
  whole: every mask is written to, never used to select; ``lambdaLoss`` selects its pair losses with
  ``losses[mask]`` (a data-dependent size), so that step breaks there (``nonzero()``), as
  torch.compile's does, and runs eagerly with torch's values.
"""
import math

import numpy as np

from ._harness import check_compiled, data, labels, np_init


def _mlp(mod, seed):
    nn = mod.nn
    return np_init(nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 3)), mod, seed=seed, scale=0.5)


# ---- lucidrains/lion-pytorch lion_pytorch/lion_pytorch.py (update_fn, Lion) -----------------------
def test_lion_user_optimizer_step():
    def make(mod, wrap):
        F = mod.nn.functional

        def update_fn(p, grad, exp_avg, lr, wd, beta1, beta2):
            p.data.mul_(1. - lr * wd)
            update = exp_avg.clone().mul_(beta1).add(grad, alpha = 1. - beta1).sign_()
            p.add_(update, alpha = -lr)
            exp_avg.mul_(beta2).add_(grad, alpha = 1. - beta2)

        class Lion(mod.optim.Optimizer):
            def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, decoupled_weight_decay=False):
                assert lr > 0.
                self._init_lr = lr
                self.decoupled_wd = decoupled_weight_decay
                super().__init__(params, dict(lr = lr, betas = betas, weight_decay = weight_decay))
                self.update_fn = update_fn

            @mod.no_grad()
            def step(self, closure = None):
                loss = None
                if closure is not None:
                    with mod.enable_grad():
                        loss = closure()
                for group in self.param_groups:
                    for p in filter(lambda p: p.grad is not None, group['params']):
                        grad, lr, wd, beta1, beta2, state, decoupled_wd, init_lr = p.grad, group['lr'], group['weight_decay'], *group['betas'], self.state[p], self.decoupled_wd, self._init_lr
                        if decoupled_wd:
                            wd /= init_lr
                        if len(state) == 0:
                            state['exp_avg'] = mod.zeros_like(p)
                        self.update_fn(p, grad, state['exp_avg'], lr, wd, beta1, beta2)
                return loss

        model = _mlp(mod, 1)
        opt = Lion([{'params': model[0].parameters()}, {'params': model[2].parameters(), 'lr': 3e-2, 'weight_decay': 0.}],
                   lr=1e-2, weight_decay=1e-2, decoupled_weight_decay=True)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 6, 4), labels(mod, i, 6, 3))

    run = check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1, run.step.stats


# ---- LiyuanLucasLiu/RAdam radam/radam.py (RAdam; the argument checks and __setstate__ left out) -----
def test_radam_step_breaks_on_python_int_state():
    # state['step'] is a Python int the step increments (and group['buffer'] a Python list it
    # writes): a compiled program would replay one value, so the step breaks there and every call
    # runs eagerly -- 7 calls, so the rectified branch (step 6) runs too.
    def make(mod, wrap):
        F = mod.nn.functional

        class RAdam(mod.optim.Optimizer):
            def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, degenerated_to_sgd=True):
                self.degenerated_to_sgd = degenerated_to_sgd
                defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, buffer=[[None, None, None] for _ in range(10)])
                super().__init__(params, defaults)

            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group['params']:
                        if p.grad is None:
                            continue
                        grad = p.grad.data.float()
                        p_data_fp32 = p.data.float()
                        state = self.state[p]
                        if len(state) == 0:
                            state['step'] = 0
                            state['exp_avg'] = mod.zeros_like(p_data_fp32)
                            state['exp_avg_sq'] = mod.zeros_like(p_data_fp32)
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
                            if N_sma >= 5:
                                step_size = math.sqrt((1 - beta2_t) * (N_sma - 4) / (N_sma_max - 4) * (N_sma - 2) / N_sma * N_sma_max / (N_sma_max - 2)) / (1 - beta1 ** state['step'])
                            elif self.degenerated_to_sgd:
                                step_size = 1.0 / (1 - beta1 ** state['step'])
                            else:
                                step_size = -1
                            buffered[2] = step_size
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

        model = _mlp(mod, 2)
        opt = RAdam(model.parameters(), lr=0.05, betas=(0.9, 0.9), weight_decay=1e-2)
        log = []

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            log.append(opt.state[model[0].weight]['step'])
            return loss

        return wrap(step), {"model": model, "opt": opt, "log": log, "buffer": opt.param_groups[0]['buffer']}, lambda i: (data(mod, i, 6, 4), labels(mod, i, 6, 3))

    run = check_compiled(make, calls=7, torch_too=True, rtol=1e-4, atol=1e-5)
    breaks = run.step.stats["graph_breaks"]
    assert len(breaks) == 1 and "Python int" in breaks[0][0] and "'step'" in breaks[0][0], run.step.stats
    assert run.step.stats["eager_calls"] == 7 and run.step.stats["traces"] == 0, run.step.stats


# ---- allegro/allRank allrank/models/losses (approxNDCG, listNet, lambdaLoss) ----------------------
def _allrank(mod):
    F = mod.nn.functional

    def listNet(y_pred, y_true, eps=1e-10, padded_value_indicator=-1):
        y_pred = y_pred.clone()
        y_true = y_true.clone()
        mask = y_true == padded_value_indicator
        y_pred[mask] = float('-inf')
        y_true[mask] = float('-inf')
        preds_smax = F.softmax(y_pred, dim=1)
        true_smax = F.softmax(y_true, dim=1)
        preds_log = mod.log(preds_smax + eps)
        return mod.mean(-mod.sum(true_smax * preds_log, dim=1))

    def approxNDCGLoss(y_pred, y_true, padded_value_indicator=-1, alpha=1.):
        y_pred = y_pred.clone()
        y_true = y_true.clone()
        padded_mask = y_true == padded_value_indicator
        y_pred[padded_mask] = float("-inf")
        y_true[padded_mask] = float("-inf")
        y_pred_sorted, indices_pred = y_pred.sort(descending=True, dim=-1)
        y_true_sorted, _ = y_true.sort(descending=True, dim=-1)
        true_sorted_by_preds = mod.gather(y_true, dim=1, index=indices_pred)
        true_diffs = true_sorted_by_preds[:, :, None] - true_sorted_by_preds[:, None, :]
        padded_pairs_mask = mod.isfinite(true_diffs)
        padded_pairs_mask.diagonal(dim1=-2, dim2=-1).zero_()
        true_sorted_by_preds.clamp_(min=0.)
        y_true_sorted.clamp_(min=0.)
        pos_idxs = mod.arange(1, y_pred.shape[1] + 1)
        D = mod.log2(1. + pos_idxs.float())[None, :]
        maxDCGs = mod.sum((mod.pow(2, y_true_sorted) - 1) / D, dim=-1).clamp(min=1e-10)
        G = (mod.pow(2, true_sorted_by_preds) - 1) / maxDCGs[:, None]
        scores_diffs = (y_pred_sorted[:, :, None] - y_pred_sorted[:, None, :])
        scores_diffs[~padded_pairs_mask] = 0.
        approx_pos = 1. + mod.sum(padded_pairs_mask.float() * (mod.sigmoid(-alpha * scores_diffs).clamp(min=1e-10)), dim=-1)
        approx_D = mod.log2(1. + approx_pos)
        return -mod.mean(mod.sum((G / approx_D), dim=-1))

    def lambdaLoss(y_pred, y_true, eps=1e-10, padded_value_indicator=-1, sigma=1.):
        # weighing_scheme=None, k=None, reduction="sum", reduction_log="binary"
        y_pred = y_pred.clone()
        y_true = y_true.clone()
        padded_mask = y_true == padded_value_indicator
        y_pred[padded_mask] = float("-inf")
        y_true[padded_mask] = float("-inf")
        y_pred_sorted, indices_pred = y_pred.sort(descending=True, dim=-1)
        true_sorted_by_preds = mod.gather(y_true, dim=1, index=indices_pred)
        true_diffs = true_sorted_by_preds[:, :, None] - true_sorted_by_preds[:, None, :]
        padded_pairs_mask = mod.isfinite(true_diffs) & (true_diffs > 0)
        ndcg_at_k_mask = mod.zeros((y_pred.shape[1], y_pred.shape[1]), dtype=mod.bool)
        k = None
        ndcg_at_k_mask[:k, :k] = 1
        scores_diffs = (y_pred_sorted[:, :, None] - y_pred_sorted[:, None, :]).clamp(min=-1e8, max=1e8)
        scores_diffs.masked_fill(mod.isnan(scores_diffs), 0.)
        weighted_probas = (mod.sigmoid(sigma * scores_diffs).clamp(min=eps) ** 1.).clamp(min=eps)
        losses = mod.log2(weighted_probas)
        return -mod.sum(losses[padded_pairs_mask & ndcg_at_k_mask])

    return listNet, approxNDCGLoss, lambdaLoss


def _slates(mod, i):
    return (mod.tensor(np.random.RandomState(50 + i).randn(2, 4, 3).astype("float32")),
            mod.tensor([[2., 0., 1., 3.], [1., 2., 0., -1.]]))


def _ranker(mod, wrap, loss_fn):
    nn = mod.nn
    model = np_init(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)), mod, seed=6, scale=0.6)
    optimizer = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(X, y_true):
        loss = loss_fn(model(X).squeeze(-1), y_true)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return wrap(step), {"model": model, "opt": optimizer}, lambda i: _slates(mod, i)


def test_allrank_approx_ndcg_listnet_step_traces_whole():
    def make(mod, wrap):
        listNet, approxNDCGLoss, _ = _allrank(mod)
        return _ranker(mod, wrap, lambda p, t: approxNDCGLoss(p, t) + 0.5 * listNet(p, t))

    run = check_compiled(make, calls=2, torch_too=True, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1, run.step.stats


def test_allrank_lambda_loss_step_breaks_on_pair_selection():
    def make(mod, wrap):
        return _ranker(mod, wrap, _allrank(mod)[2])

    run = check_compiled(make, calls=2, torch_too=True, rtol=1e-4, atol=1e-5)
    breaks = run.step.stats["graph_breaks"]
    assert len(breaks) == 1 and "nonzero()" in breaks[0][0], run.step.stats
    assert run.step.stats["eager_calls"] == 2 and run.step.stats["traces"] == 0, run.step.stats
