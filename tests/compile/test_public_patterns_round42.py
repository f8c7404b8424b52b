"""Round 42: public training-loop patterns under ``tracegrad.compile``, each condensed to its
model, loss, optimizer and step and run compiled == eager (and == torch where the step draws
no random numbers) with the harness (tiny sizes, numpy weights and data):

- davda54/sam (``sam.py``, ``example/train.py``): the SAM wrapper optimizer (a
  ``torch.optim.Optimizer`` subclass sharing its ``param_groups`` with an inner SGD), two
  forward/backward passes per step, ``first_step`` keeping ``old_p = p.data.clone()`` in the
  optimizer state and ``second_step`` rebinding ``p.data = old_p``; ``bypass_bn``'s BatchNorm
  ``momentum`` set to 0 and back as a Python attribute inside the step; the label-smoothed
  ``kl_div`` loss built with ``full_like``/``scatter_(value=)``.
- KaiyangZhou/pytorch-center-loss: ``CenterLoss`` (``nn.Parameter`` centres, the deprecated
  ``addmm_(beta, alpha, mat1, mat2)`` overload, the class mask from an expanded ``arange``), two
  RMSprop optimizers in one step, the centres' gradients rescaled through
  ``param.grad.data *= 1 / weight``.
- huggingface run_glue_no_trainer's gradient accumulation: ``loss / accumulation_steps``, the
  optimizer, ``clip_grad_norm_`` (its returned norm logged with ``.item()``), the linear warmup
  ``LambdaLR`` and ``zero_grad`` taken only when the Python step index says so; AdamW with
  no-decay parameter groups.
- CuriousAI/mean-teacher: student and EMA teacher, ``CrossEntropyLoss(size_average=False,
  ignore_index=NO_LABEL)``, ``softmax_mse_loss`` with ``size_average=False``, the sigmoid
  consistency ramp-up, ``update_ema_variables``' ``alpha = min(1 - 1 / (global_step + 1), alpha)``
  and the deprecated ``add_(Number, Tensor)`` overload.
- michaelrzhang/lookahead: the ``Lookahead`` wrapper (an ``Optimizer`` subclass that never calls
  ``Optimizer.__init__``), its Python step counter, slow weights and the "pullback" momentum
  rewrite every ``la_steps`` calls.
- dropreg/R-Drop: two dropout forward passes per step, the symmetric ``kl_div`` with
  ``masked_fill_`` of the padding.
- facebookresearch/mixup-cifar10: ``mixup_data``/``mixup_criterion`` with ``randperm``, the mixing
  weight from ``np.random.beta`` or ``torch.distributions.Beta(...).sample()``.
- the FGM embedding attack of NLP competition code (yangyubuaa/Adversarial_Training and its
  copies): the embedding weights backed up in a dict, moved along their gradient, put back with
  ``param.data = self.backup[name]`` between two backward passes.
"""
import math
from collections import defaultdict

import numpy as np
import pytest

import tracegrad

from ._harness import break_lines, check_compiled, data, labels, np_init


def _mlp(mod, n_in, hidden, n_out, bn=False):
    nn = mod.nn
    layers = [nn.Linear(n_in, hidden)]
    if bn:
        layers.append(nn.BatchNorm1d(hidden))
    layers += [nn.ReLU(), nn.Linear(hidden, n_out)]
    return nn.Sequential(*layers)


# ---- davda54/sam: sam.py, example/utility/bypass_bn.py, example/model/smooth_cross_entropy.py ----
def _sam_class(mod):
    class SAM(mod.optim.Optimizer):
        def __init__(self, params, base_optimizer, rho=0.05, adaptive=False, **kwargs):
            assert rho >= 0.0, f"Invalid rho, should be non-negative: {rho}"
            defaults = dict(rho=rho, adaptive=adaptive, **kwargs)
            super().__init__(params, defaults)
            self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
            self.param_groups = self.base_optimizer.param_groups
            self.defaults.update(self.base_optimizer.defaults)

        @mod.no_grad()
        def first_step(self, zero_grad=False):
            grad_norm = self._grad_norm()
            for group in self.param_groups:
                scale = group["rho"] / (grad_norm + 1e-12)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    self.state[p]["old_p"] = p.data.clone()
                    e_w = (mod.pow(p, 2) if group["adaptive"] else 1.0) * p.grad * scale.to(p)
                    p.add_(e_w)   # climb to the local maximum "w + e(w)"
            if zero_grad:
                self.zero_grad()

        @mod.no_grad()
        def second_step(self, zero_grad=False):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.data = self.state[p]["old_p"]   # back to "w" from "w + e(w)"
            self.base_optimizer.step()
            if zero_grad:
                self.zero_grad()

        def _grad_norm(self):
            shared_device = self.param_groups[0]["params"][0].device
            return mod.norm(mod.stack([
                ((mod.abs(p) if group["adaptive"] else 1.0) * p.grad).norm(p=2).to(shared_device)
                for group in self.param_groups for p in group["params"] if p.grad is not None]), p=2)
    return SAM


def _sam_program(adaptive, bypass_bn):
    def make(mod, wrap):
        nn, F = mod.nn, mod.nn.functional
        model = np_init(_mlp(mod, 6, 8, 4, bn=True), mod, seed=1)
        optimizer = _sam_class(mod)(model.parameters(), mod.optim.SGD, rho=0.5 if adaptive else 0.05,
                                    adaptive=adaptive, lr=0.1, momentum=0.9, weight_decay=5e-4)

        def disable_running_stats(model):
            def _disable(module):
                if isinstance(module, nn.modules.batchnorm._BatchNorm):
                    module.backup_momentum = module.momentum
                    module.momentum = 0
            model.apply(_disable)

        def enable_running_stats(model):
            def _enable(module):
                if isinstance(module, nn.modules.batchnorm._BatchNorm) and hasattr(module, "backup_momentum"):
                    module.momentum = module.backup_momentum
            model.apply(_enable)

        def smooth_crossentropy(pred, gold, smoothing=0.1):
            n_class = pred.size(1)
            one_hot = mod.full_like(pred, fill_value=smoothing / (n_class - 1))
            one_hot.scatter_(dim=1, index=gold.unsqueeze(1), value=1.0 - smoothing)
            log_prob = F.log_softmax(pred, dim=1)
            return F.kl_div(input=log_prob, target=one_hot, reduction="none").sum(-1)

        # example/train.py's batch
        def step(inputs, targets):
            if bypass_bn:
                enable_running_stats(model)
            predictions = model(inputs)
            loss = smooth_crossentropy(predictions, targets, smoothing=0.1)
            loss.mean().backward()
            optimizer.first_step(zero_grad=True)

            if bypass_bn:
                disable_running_stats(model)
            smooth_crossentropy(model(inputs), targets, smoothing=0.1).mean().backward()
            optimizer.second_step(zero_grad=True)

            with mod.no_grad():
                correct = mod.argmax(predictions.data, 1) == targets
            return loss, correct

        state = {"model": model, "sam": optimizer, "base": optimizer.base_optimizer}
        return wrap(step), state, lambda i: (data(mod, i, 5, 6), labels(mod, i, 5, 4))
    return make


def _sam_lr_schedule(state, i):
    """example/utility/step_lr.py's ``StepLR.__call__``: the lr written into every group between
    the batches."""
    for group in state["sam"].param_groups:
        group["lr"] = 0.1 * (0.2 if i >= 1 else 1.0)


@pytest.mark.parametrize("adaptive", [False, True])
def test_sam_two_pass_step(adaptive):
    # the README's loop (no BatchNorm bypass): one program for both passes, the lr written
    # between calls a lifted input. second_step's ``p.data = self.state[p]["old_p"]`` leaves p
    # and the state's old_p on one storage, which the base step then updates in place (seen
    # through both): the program binds old_p to a new tensor per call and moves p onto it
    # (NOTE [.data set in a trace])
    run = check_compiled(_sam_program(adaptive, False), calls=4, between=_sam_lr_schedule, torch_too=True)
    st = run.step.stats
    # (the harness reads every parameter through .numpy() after each call, which shares its
    # storage with numpy: a moved parameter on such a storage is traced again, not followed;
    # test_sam_two_pass_step_one_program runs without those reads)
    assert st["graph_breaks"] == [] and st["eager_calls"] == 1, st
    model = run.state["model"]
    assert int(model[1].num_batches_tracked) == 8   # both passes count a batch
    assert all(p.grad is None for p in model.parameters())
    # eager's aliasing kept: p and old_p on one storage, holding the updated value
    sam = run.state["sam"]
    for p in model.parameters():
        old = sam.state[p]["old_p"]
        assert old.data_ptr() == p.data_ptr() and tracegrad.equal(old, p.data)


def test_sam_two_pass_step_one_program():
    # the same loop without reading the parameters between calls: after the first (eager)
    # call one program serves every call, p following old_p's new tensor each time
    runs = {}
    for name, wrap in (("eager", lambda f: f), ("compiled", tracegrad.compile)):
        tracegrad.manual_seed(0)
        step, state, batch = _sam_program(False, False)(tracegrad, wrap)
        outs = []
        for i in range(4):
            outs.append([t.detach().clone() for t in step(*batch(i))])
            _sam_lr_schedule(state, i)
        runs[name] = (step, state, outs)
    step, state, outs = runs["compiled"]
    _, e_state, e_outs = runs["eager"]
    assert step.stats["traces"] == 1 and step.stats["graph_breaks"] == [], step.stats
    for o, e in zip(outs, e_outs):
        for a, b in zip(o, e):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-5, atol=2e-6)
    sam, e_sam = state["sam"], e_state["sam"]
    for p, q in zip(state["model"].parameters(), e_state["model"].parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=2e-5, atol=2e-6)
        old = sam.state[p]["old_p"]
        assert old.data_ptr() == p.data_ptr()
        with tracegrad.no_grad():
            p.add_(1.0)       # seen through old_p, as eagerly
        assert tracegrad.equal(old, p.data)


def test_sam_step_with_bn_momentum_bypass_breaks_on_the_attribute():
    # example/train.py: ``module.momentum = 0`` inside the step. Each call after the first
    # leaves the attribute as it found it (0, backup 0.1), but a Python attribute set on a
    # module from before the call breaks the graph at once: the step runs eagerly, equal
    run = check_compiled(_sam_program(False, True), calls=3, between=_sam_lr_schedule, torch_too=True)
    st = run.step.stats
    assert st["eager_calls"] == 3, st
    assert set(break_lines(st)) == {"module.momentum = module.backup_momentum"}, st
    bn = run.state["model"][1]
    assert bn.momentum == 0 and bn.backup_momentum == 0.1


# ---- KaiyangZhou/pytorch-center-loss: center_loss.py and main.py's train() ----------------------
def _center_loss_class(mod):
    nn = mod.nn

    class CenterLoss(nn.Module):
        def __init__(self, num_classes=10, feat_dim=2, use_gpu=False):
            super().__init__()
            self.num_classes = num_classes
            self.feat_dim = feat_dim
            self.use_gpu = use_gpu
            self.centers = nn.Parameter(mod.randn(self.num_classes, self.feat_dim))

        def forward(self, x, labels):
            batch_size = x.size(0)
            distmat = mod.pow(x, 2).sum(dim=1, keepdim=True).expand(batch_size, self.num_classes) + \
                mod.pow(self.centers, 2).sum(dim=1, keepdim=True).expand(self.num_classes, batch_size).t()
            distmat.addmm_(1, -2, x, self.centers.t())
            classes = mod.arange(self.num_classes).long()
            labels = labels.unsqueeze(1).expand(batch_size, self.num_classes)
            mask = labels.eq(classes.expand(batch_size, self.num_classes))
            dist = distmat * mask.float()
            return dist.clamp(min=1e-12, max=1e+12).sum() / batch_size
    return CenterLoss


def _center_loss_program(mod, wrap):
    nn = mod.nn

    class Net(nn.Module):   # models.py's ConvNet reduced to its 2-d feature head and PReLUs
        def __init__(self, num_classes):
            super().__init__()
            self.fc0 = nn.Linear(6, 8)
            self.prelu0 = nn.PReLU()
            self.fc1 = nn.Linear(8, 2)
            self.prelu_fc1 = nn.PReLU()
            self.fc2 = nn.Linear(2, num_classes)

        def forward(self, x):
            x = self.prelu0(self.fc0(x))
            x = self.prelu_fc1(self.fc1(x))
            return x, self.fc2(x)

    weight_cent = 0.5
    model = np_init(Net(3), mod, seed=2)
    criterion_xent = nn.CrossEntropyLoss()
    criterion_cent = np_init(_center_loss_class(mod)(num_classes=3, feat_dim=2), mod, seed=3, scale=1.0)
    optimizer_model = mod.optim.RMSprop(model.parameters(), lr=0.01)
    optimizer_centloss = mod.optim.RMSprop(criterion_cent.parameters(), lr=0.05)

    def step(data, labels):
        features, outputs = model(data)
        loss_xent = criterion_xent(outputs, labels)
        loss_cent = criterion_cent(features, labels)
        loss_cent *= weight_cent
        loss = loss_xent + loss_cent
        optimizer_model.zero_grad()
        optimizer_centloss.zero_grad()
        loss.backward()
        optimizer_model.step()
        # remove the effect of weight_cent on the centres' update
        for param in criterion_cent.parameters():
            param.grad.data *= (1. / weight_cent)
        optimizer_centloss.step()
        return loss, loss_xent.detach(), loss_cent.detach()

    state = {"model": model, "cent": criterion_cent, "opt_model": optimizer_model,
             "opt_cent": optimizer_centloss}
    return wrap(step), state, lambda i: (data(mod, i, 6, 6), labels(mod, i, 6, 3))


def test_center_loss_two_rmsprop_and_grad_data_rescale():
    run = check_compiled(_center_loss_program, calls=4, torch_too=True)
    st = run.step.stats
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


# ---- huggingface transformers examples/pytorch/text-classification/run_glue_no_trainer.py ------
def _accumulation_program(mod, wrap):
    nn = mod.nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(6, 8)
            self.LayerNorm = nn.LayerNorm(8)
            self.classifier = nn.Linear(8, 3)

        def forward(self, x, labels):
            logits = self.classifier(mod.tanh(self.LayerNorm(self.dense(x))))
            return nn.functional.cross_entropy(logits, labels), logits

    model = np_init(Classifier(), mod, seed=4)
    no_decay = ["bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = mod.optim.AdamW(optimizer_grouped_parameters, lr=5e-2)
    accumulation_steps, num_warmup_steps, num_training_steps, num_batches = 2, 2, 8, 4

    def lr_lambda(current_step):   # get_linear_schedule_with_warmup's lambda
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step)
                   / float(max(1, num_training_steps - num_warmup_steps)))
    lr_scheduler = mod.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)

    def step(index, x, y):
        loss, _ = model(x, y)
        loss = loss / accumulation_steps
        loss.backward()
        grad_norm = None
        if index % accumulation_steps == 0 or index == num_batches - 1:
            # the Trainer's ``grad_norm = _grad_norm.item()``, handed to its logging
            grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
        return loss.detach(), grad_norm

    state = {"model": model, "opt": optimizer, "sched": lr_scheduler}
    return wrap(step), state, lambda i: (i, data(mod, i, 4, 6), labels(mod, i, 4, 3))


def test_gradient_accumulation_with_conditional_step_and_logged_norm():
    # the Python index is guarded (a program per value); the returned norm a deferred item()
    run = check_compiled(_accumulation_program, calls=4, torch_too=True)
    st = run.step.stats
    assert st["graph_breaks"] == [] and st["eager_calls"] == 1, st
    assert run.state["sched"].last_epoch == 3     # the last, partial accumulation steps too
    assert [type(s["out"][1]) for s in run.snaps] == [float, type(None), float, float]


# ---- CuriousAI/mean-teacher pytorch/main.py, mean_teacher/losses.py, ramps.py ------------------
NO_LABEL = -1


def _mean_teacher_program(legacy):
    """``legacy``: the losses' deprecated ``size_average=False`` as written (``mse_loss`` warns on
    every call); otherwise ``reduction="sum"``, the same numbers."""
    red = {"size_average": False} if legacy else {"reduction": "sum"}

    def make(mod, wrap):
        nn, F = mod.nn, mod.nn.functional

        def create_model(ema=False):
            model = np_init(_mlp(mod, 5, 8, 3), mod, seed=5)
            if ema:
                for param in model.parameters():
                    param.detach_()
            return model

        model, ema_model = create_model(), create_model(ema=True)
        optimizer = mod.optim.SGD(model.parameters(), 0.05, momentum=0.9, weight_decay=1e-4, nesterov=True)
        class_criterion = nn.CrossEntropyLoss(ignore_index=NO_LABEL, **red)
        ema_decay, consistency, rampup_length, minibatch_size = 0.9, 10.0, 5, 6

        def sigmoid_rampup(current, rampup_length):
            current = np.clip(current, 0.0, rampup_length)
            phase = 1.0 - current / rampup_length
            return float(np.exp(-5.0 * phase * phase))

        def softmax_mse_loss(input_logits, target_logits):
            assert input_logits.size() == target_logits.size()
            input_softmax = F.softmax(input_logits, dim=1)
            target_softmax = F.softmax(target_logits, dim=1)
            num_classes = input_logits.size()[1]
            return F.mse_loss(input_softmax, target_softmax, **red) / num_classes

        def update_ema_variables(model, ema_model, alpha, global_step):
            # the true average until the exponential average is more correct
            alpha = min(1 - 1 / (global_step + 1), alpha)
            for ema_param, param in zip(ema_model.parameters(), model.parameters()):
                ema_param.data.mul_(alpha).add_(1 - alpha, param.data)

        def step(global_step, epoch, input, ema_input, target):
            ema_model_out = ema_model(ema_input)
            model_out = model(input)
            ema_logit = ema_model_out.detach().data
            class_loss = class_criterion(model_out, target) / minibatch_size
            consistency_weight = consistency * sigmoid_rampup(epoch, rampup_length)
            consistency_loss = consistency_weight * softmax_mse_loss(model_out, ema_logit) / minibatch_size
            loss = class_loss + consistency_loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            global_step += 1
            update_ema_variables(model, ema_model, ema_decay, global_step)
            return loss, class_loss, consistency_loss

        def batch(i):
            target = labels(mod, i, minibatch_size, 3)
            target[::2] = NO_LABEL     # half the batch unlabelled
            return i, i / 2, data(mod, i, minibatch_size, 5), data(mod, i, minibatch_size, 5, seed=300), target

        return wrap(step), {"model": model, "ema": ema_model, "opt": optimizer}, batch
    return make


@pytest.mark.parametrize("legacy", [False, True])
def test_mean_teacher_ema_step(legacy):
    run = check_compiled(_mean_teacher_program(legacy), calls=4, torch_too=True)
    st = run.step.stats
    # the step index and epoch are Python numbers: a program per value, no break. Legacy: the
    # harness records warnings under an "always" filter, and mse_loss's deprecation warning
    # (size_average/reduce) comes on every call from the programs too (NOTE [warnings in a trace])
    assert st["graph_breaks"] == [] and st["traces"] == 3, st
    if legacy:
        assert sum("size_average and reduce" in w for w in run.warnings) == 4, run.warnings
    assert all(not p.requires_grad and p.grad is None for p in run.state["ema"].parameters())


# ---- michaelrzhang/lookahead lookahead_pytorch.py ------------------------------------------------
def _lookahead_class(mod):
    class Lookahead(mod.optim.Optimizer):
        def __init__(self, optimizer, la_steps=5, la_alpha=0.8, pullback_momentum="none"):
            self.optimizer = optimizer
            self._la_step = 0   # counter for inner optimizer
            self.la_alpha = la_alpha
            self._total_la_steps = la_steps
            pullback_momentum = pullback_momentum.lower()
            assert pullback_momentum in ["reset", "pullback", "none"]
            self.pullback_momentum = pullback_momentum
            self.state = defaultdict(dict)
            # cache the current optimizer parameters
            for group in optimizer.param_groups:
                for p in group["params"]:
                    param_state = self.state[p]
                    param_state["cached_params"] = mod.zeros_like(p.data)
                    param_state["cached_params"].copy_(p.data)
                    if self.pullback_momentum == "pullback":
                        param_state["cached_mom"] = mod.zeros_like(p.data)

        def zero_grad(self):
            self.optimizer.zero_grad()

        def state_dict(self):
            return self.optimizer.state_dict()

        @property
        def param_groups(self):
            return self.optimizer.param_groups

        def step(self, closure=None):
            loss = self.optimizer.step(closure)
            self._la_step += 1
            if self._la_step >= self._total_la_steps:
                self._la_step = 0
                # lookahead and cache the current optimizer parameters
                for group in self.optimizer.param_groups:
                    for p in group["params"]:
                        param_state = self.state[p]
                        p.data.mul_(self.la_alpha).add_(param_state["cached_params"], alpha=1.0 - self.la_alpha)
                        param_state["cached_params"].copy_(p.data)
                        if self.pullback_momentum == "pullback":
                            internal_momentum = self.optimizer.state[p]["momentum_buffer"]
                            self.optimizer.state[p]["momentum_buffer"] = internal_momentum.mul_(
                                self.la_alpha).add_(1.0 - self.la_alpha, param_state["cached_mom"])
                            param_state["cached_mom"] = self.optimizer.state[p]["momentum_buffer"]
                        elif self.pullback_momentum == "reset":
                            self.optimizer.state[p]["momentum_buffer"] = mod.zeros_like(p.data)
            return loss
    return Lookahead


def _lookahead_program(pullback, held=False):
    """``held``: the step reaches the optimizer as an attribute of a trainer object."""
    def make(mod, wrap):
        model = np_init(_mlp(mod, 5, 6, 2), mod, seed=6)
        base = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        optimizer = _lookahead_class(mod)(base, la_steps=2, la_alpha=0.5, pullback_momentum=pullback)
        trainer = type("Trainer", (), {})()
        trainer.optimizer = optimizer

        def train(opt, x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        if held:
            def step(x, y):
                return train(trainer.optimizer, x, y)
        else:
            def step(x, y):
                return train(optimizer, x, y)

        state = {"model": model, "opt": optimizer, "slow": [optimizer.state[p] for p in model.parameters()]}
        return wrap(step), state, lambda i: (data(mod, i, 4, 5), data(mod, i, 4, 2, seed=400))
    return make


@pytest.mark.parametrize("pullback", ["none", "pullback", "reset"])
def test_lookahead_wrapper_counter_and_pullback_momentum(pullback):
    # ``self._la_step += 1`` in a step that never reaches Optimizer.step's tracing hook (the
    # wrapper skips Optimizer.__init__): the counter's change is a graph break, and the abandoned
    # trace puts back the counter and the wrapper's own state (``cached_mom`` rebound to the
    # momentum buffer), so the eager rerun is eager's call
    run = check_compiled(_lookahead_program(pullback), calls=5, torch_too=True)
    st = run.step.stats
    assert st["eager_calls"] == 5 and st["traces"] == 0, st
    assert {why for why, _ in st["graph_breaks"]} == {
        "the function changes the Python value 'optimizer._la_step' (a counter, an append, an attribute...): "
        "the program would not repeat that on later calls"}, st
    assert run.state["opt"]._la_step == 1


def test_lookahead_held_by_a_trainer_object():
    # one level further: ``trainer.optimizer._la_step += 1``, the wrapper's state put back too
    run = check_compiled(_lookahead_program("pullback", held=True), calls=4, torch_too=True)
    st = run.step.stats
    assert st["eager_calls"] == 4 and st["traces"] == 0, st
    assert {why for why, _ in st["graph_breaks"]} == {
        "the function changes the Python value 'trainer.optimizer' (a counter, an append, an attribute...): "
        "the program would not repeat that on later calls"}, st


def test_optimizer_counter_attribute_changed_after_step_breaks():
    # the same kind of counter on a plain optimizer, bumped by the step function after
    # ``opt.step()`` (where the optimizer's own step check does not look) and deciding an
    # in-place update: a program traced at one count would replay that branch on every call
    def make(mod, wrap):
        model = np_init(_mlp(mod, 5, 6, 2), mod, seed=7)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        opt.k = 0

        def step(x, y):
            opt.zero_grad()
            mod.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            opt.k += 1
            if opt.k % 2 == 0:
                with mod.no_grad():
                    for p in model.parameters():
                        p.mul_(0.5)
            return opt.k
        return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 4, 5), data(mod, i, 4, 2, seed=400))

    run = check_compiled(make, calls=4, torch_too=True)
    st = run.step.stats
    assert st["eager_calls"] == 4 and st["traces"] == 0, st
    assert {why for why, _ in st["graph_breaks"]} == {
        "the function changes the Python value 'opt.k' (a counter, an append, an attribute...): "
        "the program would not repeat that on later calls"}, st


# ---- dropreg/R-Drop README: two dropout forward passes and the symmetric KL ------------------------
def _rdrop_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional

    class TaskModel(nn.Module):     # a token classifier: embedding, dropout, linear head
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(12, 8, padding_idx=0)
            self.drop = nn.Dropout(0.3)
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            return self.fc(self.drop(mod.tanh(self.emb(x))))

    model = np_init(TaskModel(), mod, seed=8)
    optimizer = mod.optim.Adam(model.parameters(), lr=1e-2)

    def compute_kl_loss(p, q, pad_mask=None):
        p_loss = F.kl_div(F.log_softmax(p, dim=-1), F.softmax(q, dim=-1), reduction="none")
        q_loss = F.kl_div(F.log_softmax(q, dim=-1), F.softmax(p, dim=-1), reduction="none")
        # pad_mask is for seq-level tasks
        if pad_mask is not None:
            p_loss.masked_fill_(pad_mask, 0.)
            q_loss.masked_fill_(pad_mask, 0.)
        p_loss = p_loss.sum()
        q_loss = q_loss.sum()
        return (p_loss + q_loss) / 2

    def step(x, label):
        # keep dropout and forward twice
        logits = model(x)
        logits2 = model(x)
        ce_loss = 0.5 * (F.cross_entropy(logits.view(-1, 4), label.view(-1))
                         + F.cross_entropy(logits2.view(-1, 4), label.view(-1)))
        kl_loss = compute_kl_loss(logits, logits2, pad_mask=(x == 0).unsqueeze(-1))
        loss = ce_loss + 4.0 * kl_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss, kl_loss.detach()

    def batch(i):
        tokens = np.random.RandomState(60 + i).randint(1, 12, size=(3, 5))
        tokens[:, 3 + i % 2:] = 0     # padded tails
        label = np.where(tokens == 0, -100, tokens % 4)
        return mod.tensor(tokens), mod.tensor(label)

    return wrap(step), {"model": model, "opt": optimizer}, batch


def test_rdrop_two_dropout_passes_with_pad_mask():
    # the two passes draw their dropout masks from the program's key, as eager from its generator
    # (compared with eager tracegrad, the generator state included, not with torch's stream)
    run = check_compiled(_rdrop_program, calls=3)
    st = run.step.stats
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


# ---- facebookresearch/mixup-cifar10 train.py (mixup_data, mixup_criterion, the train loop) -----------
def _mixup_program(sampler):
    """``sampler``: "numpy" (the repository's ``np.random.beta``) or "torch" (the same mixing
    weight from ``torch.distributions.Beta(alpha, alpha).sample()``, as other ports write it;
    "torch-unvalidated": built with ``validate_args=False``)."""
    def make(mod, wrap):
        model = np_init(_mlp(mod, 6, 8, 3, bn=True), mod, seed=9)
        criterion = mod.nn.CrossEntropyLoss()
        optimizer = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)

        def mixup_data(x, y, alpha=1.0):
            if alpha > 0:
                if sampler == "numpy":
                    lam = np.random.beta(alpha, alpha)
                else:
                    kw = {"validate_args": False} if sampler == "torch-unvalidated" else {}
                    lam = mod.distributions.Beta(mod.tensor(alpha), mod.tensor(alpha), **kw).sample()
            else:
                lam = 1
            batch_size = x.size()[0]
            index = mod.randperm(batch_size)
            mixed_x = lam * x + (1 - lam) * x[index, :]
            y_a, y_b = y, y[index]
            return mixed_x, y_a, y_b, lam

        def mixup_criterion(criterion, pred, y_a, y_b, lam):
            return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)

        def step(inputs, targets):
            inputs, targets_a, targets_b, lam = mixup_data(inputs, targets, 0.4)
            outputs = model(inputs)
            loss = mixup_criterion(criterion, outputs, targets_a, targets_b, lam)
            _, predicted = mod.max(outputs.data, 1)
            correct = (lam * predicted.eq(targets_a.data).cpu().sum().float()
                       + (1 - lam) * predicted.eq(targets_b.data).cpu().sum().float())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss.detach(), correct

        def batch(i):
            np.random.seed(70 + i)      # the same numpy draws in the eager and the compiled run
            return data(mod, i, 6, 6), labels(mod, i, 6, 3)

        return wrap(step), {"model": model, "opt": optimizer}, batch
    return make


def test_mixup_with_torch_beta_sample_and_randperm():
    # Beta's draw and randperm come from the program's key, as eagerly from the generator
    run = check_compiled(_mixup_program("torch-unvalidated"), calls=4)
    st = run.step.stats
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def test_mixup_with_validated_torch_beta_of_constants_compiles():
    # validate_args is on by default: the concentration check reads values in Python, here
    # those of ``tensor(0.4)``, which the trace knows (NOTE [constants in a trace]): one program
    run = check_compiled(_mixup_program("torch"), calls=3)
    st = run.step.stats
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def test_validated_beta_of_traced_values_breaks_naming_validation():
    # the same check on concentrations computed from the batch reads traced values
    def make(mod):
        def step(x):
            c = x.abs().mean() + 0.5
            return mod.distributions.Beta(c, c).mean * x
        return step
    x = tracegrad.rand(4)
    f = tracegrad.compile(make(tracegrad))
    with pytest.warns(UserWarning):
        for _ in range(3):
            np.testing.assert_allclose(f(x).numpy(), make(tracegrad)(x).numpy(), rtol=1e-6)
    (why, _), = f.stats["graph_breaks"]
    assert "checks its values in Python (validate_args" in why, f.stats
    assert f.stats["eager_calls"] == 3, f.stats


def test_mixup_with_numpy_beta_runs_eagerly():
    # np.random.beta inside the step moves numpy's global generator: the program would repeat the
    # traced draw, so every call runs eagerly, saying why
    run = check_compiled(_mixup_program("numpy"), calls=3)
    st = run.step.stats
    assert st["eager_calls"] == 3 and st["traces"] == 0, st
    assert {why for why, _ in st["graph_breaks"]} == {
        "the function changes the Python value 'numpy.random's global generator' (a counter, an append, "
        "an attribute...): the program would not repeat that on later calls"}, st


# ---- the FGM / PGD embedding attacks of Chinese NLP competition code (yangyubuaa/Adversarial_Training
# and its many copies): perturb the embedding weights along their gradient, back them up in a dict on
# the attacker, put them back with ``param.data = self.backup[name]`` --------------------------------
def _fgm_class(mod, checked, reset=True):
    class FGM:
        def __init__(self, model):
            self.model = model
            self.backup = {}

        def attack(self, epsilon=1., emb_name="emb."):
            for name, param in self.model.named_parameters():
                if param.requires_grad and emb_name in name:
                    self.backup[name] = param.data.clone()
                    norm = mod.norm(param.grad)
                    if not checked:
                        param.data.add_(epsilon * param.grad / (norm + 1e-8))
                    elif norm != 0 and not mod.isnan(norm):
                        r_at = epsilon * param.grad / norm
                        param.data.add_(r_at)

        def restore(self, emb_name="emb."):
            for name, param in self.model.named_parameters():
                if param.requires_grad and emb_name in name:
                    assert name in self.backup
                    param.data = self.backup[name]
            if reset:
                self.backup = {}
    return FGM


def _fgm_program(checked, reset=True):
    def make(mod, wrap):
        nn, F = mod.nn, mod.nn.functional

        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(10, 6)
                self.fc = nn.Linear(6, 3)

            def forward(self, x, y):
                return F.cross_entropy(self.fc(self.emb(x).mean(1)), y)

        model = np_init(Classifier(), mod, seed=10)
        optimizer = mod.optim.AdamW(model.parameters(), lr=1e-2)
        fgm = _fgm_class(mod, checked, reset)(model)

        def step(batch_input, batch_label):
            loss = model(batch_input, batch_label)
            loss.backward()
            fgm.attack()      # the embedding moves along its gradient
            loss_adv = model(batch_input, batch_label)
            loss_adv.backward()     # on top of the clean gradient
            fgm.restore()
            optimizer.step()
            model.zero_grad()
            return loss.detach(), loss_adv.detach()

        def batch(i):
            rs = np.random.RandomState(80 + i)
            return mod.tensor(rs.randint(0, 10, size=(4, 3))), mod.tensor(rs.randint(0, 3, size=4))
        return wrap(step), {"model": model, "opt": optimizer}, batch
    return make


def test_fgm_embedding_attack_as_written_breaks_on_the_norm_check():
    run = check_compiled(_fgm_program(True), calls=3, torch_too=True)
    st = run.step.stats
    assert st["eager_calls"] == 3, st
    assert set(break_lines(st)) == {"elif norm != 0 and not mod.isnan(norm):"}, st


def test_fgm_embedding_attack_with_backup_reset_breaks_on_the_new_dict():
    # without the norm check the attack traces; ``self.backup = {}`` binds a new dict on every
    # call (the old one, holding this call's backups, could be held elsewhere): a graph break
    run = check_compiled(_fgm_program(False), calls=3, torch_too=True)
    st = run.step.stats
    assert st["eager_calls"] == 3, st
    assert {why for why, _ in st["graph_breaks"]} == {
        "the function changes the Python value 'fgm.backup' (a counter, an append, an attribute...): "
        "the program would not repeat that on later calls"}, st


def test_fgm_embedding_attack_with_backup_kept_compiles():
    # ``param.data = self.backup[name]`` onto a clone the dict keeps past the call: eagerly the
    # parameter and the dict's entry share one storage after every call. The program binds the
    # entry to a new tensor per call and moves the parameter onto it (NOTE [.data set in a
    # trace]; it had stayed on the trace's storage, holding a JAX tracer, then was a graph break)
    run = check_compiled(_fgm_program(False, reset=False), calls=4, torch_too=True)
    st = run.step.stats
    assert st["graph_breaks"] == [] and st["eager_calls"] == 1, st
