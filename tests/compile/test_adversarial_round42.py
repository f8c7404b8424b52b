"""Round 42: training steps from research code (GANs, contrastive, distillation, adversarial
training, regularisers drawn at random), Python generators and global modes inside the step,
hooks that come and go between calls, checkpoint-and-resume through ``save``/``load``.

pix2pix's ``set_requires_grad(D, flag)`` inside one step that updates both nets; WGAN critic
iterations with ``p.data.clamp_`` and a clip value that changes; an EMA copied with
``p.data.copy_`` and a warm-up decay from a buffer counter; CLIP's learnable ``logit_scale``
clamped in place; ``renorm_`` on embedding rows; gradient centralisation on ``p.grad``; SGLD
noise from a ``Generator``; ``autograd.backward([la, lb], [wa, wb])``; ``kl_div(log_target=True)``
distillation with a temperature argument; ``gumbel_softmax(hard=flag)``; drop-path masks from
``new_empty().bernoulli_()``; class weights from ``Counter(y.tolist())``; ``one_hot`` without
``num_classes``; ``torch.save``/``load`` to ``BytesIO`` (rollback, and resume into fresh objects
with a new compiled step); mixup with a NumPy ``RandomState`` and a ``random.Random`` held by the
trainer; ``manual_seed(seed)`` inside with a new seed per call past the cache limit;
``set_grad_enabled(False)`` called as a function and left off after the step; hooks that remove
themselves, handles used as ``with`` blocks, a hook for one call in three, a handle a deep-copied
module keeps; PGD on a perturbation made inside; accumulation with a short last batch; integer
then float batches; ``zero_grad(set_to_none=flag)``; validation (``eval()``/``no_grad``) inside the
step. Each program runs eagerly, through ``tracegrad.compile`` and (where no random numbers are
drawn) with torch from identical state, comparing everything observable after every call
(harness: tests/compile/_harness.py ``run_three_ways``); the number of programs is asserted.

Fix (``_state.py`` NOTE [hook sets come back], ``_tensor/hooks.py``, ``nn/modules/module.py``
``_add``): every hook added or removed moved one global structure counter, so a hook that came
and went (``with model.register_forward_hook(f):`` around some calls, a hook for one call in
three) sent every compiled function back to tracing on each add and on each removal, never
reusing the program for the set of hooks it had before, and after ``cache_size_limit`` such
changes the step ran eagerly for good. The structure is now a token for (layout epoch, set of
live hook ids): a removal that restores an earlier set restores its token
(test_hook_handles_used_as_context_managers_around_calls,
test_hook_registered_for_every_third_call_reuses_the_plain_program,
test_hook_toggled_between_two_functions_and_none); a handle copied with its module (same id)
still bumps (test_hook_handle_kept_by_a_deep_copied_module_removed_from_the_copy).

Fix (``_lowering/guard_code.py`` ``checker``): a step that backpropagates into the ``.grad``
tensors a call starts with and then ``zero_grad()``s them (PGD's inner loop, a probe pass)
built a second program on call 2: the first program's orphan guard found the eager first call's
``.grad`` storages held by nobody but the program and marked it dead, though the program reads
and writes the owner's ``.grad`` of the moment (NOTE [the .grad a call starts with]), never
those storages (test_pgd_adversarial_training_with_delta_made_inside,
test_backward_into_grads_of_the_eager_first_call_before_zero_grad_one_program).

Fix (``_lowering/region.py`` ``Region.grad_view``, ``_lowering/guard_code.py``): a program traced
while a parameter's ``.grad`` was a view the caller bound (``p.grad = big[1]``) passed the
``.grad`` guard (not None, not a view) once the caller bound a plain tensor again, and read it
through the old view chain: a JAX ``safe_map`` ValueError out of the compiled call. Such a
program now never runs again (test_grads_rebound_by_the_caller_between_accumulating_calls).

Not bugs (equal to eager, documented): a module hook that appends to a list or stores into a
dict, or calls ``.item()``, runs the step eagerly with the reason (and the step stays eager for
that signature after the hook is removed); ``Counter(y.tolist())`` runs eagerly with the reason;
a Python float argument (a clip value, a temperature) and a seed are constants of their program
(one program per value, eager with the reason past ``cache_size_limit``); SGD momentum's first
``opt.step()`` and later ones are two programs (the buffer exists only after the first).
"""
import io
import math
from collections import Counter

import numpy as np

import tracegrad
from . import _harness as _h
from ._harness import data, labels, snapshot
from ._harness import small_mlp as _model
from ._harness import traces as _traces, small_xy as _xy, call_loop as _loop

_both = lambda run, **kw: _h.run_three_ways(run, **kw)


def _breaks(f):
    return [reason for reason, _ in f.stats["graph_breaks"]]


def _sgd(mod, model, opt):
    """The usual classification step over ``model`` with ``opt``."""
    def step(x, y):
        opt.zero_grad()
        loss = mod.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


# ---- GAN idioms: freezing the other network inside the step, WGAN weight clipping

def _gan(mod):
    nn = mod.nn
    G = _h.np_init(nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 3)), mod, seed=1)
    D = _h.np_init(nn.Sequential(nn.Linear(3, 4), nn.LeakyReLU(0.2), nn.Linear(4, 1)), mod, seed=2)
    return G, D


def test_gan_step_freezes_discriminator_inside_with_set_requires_grad():
    # pix2pix/CycleGAN's set_requires_grad(D, False) around the generator's update, inside the
    # same step as the discriminator's update: D's grads must stay what D's backward left
    def run(mod, wrap):
        G, D = _gan(mod)
        og = mod.optim.Adam(G.parameters(), lr=0.01)
        od = mod.optim.Adam(D.parameters(), lr=0.01)
        F = mod.nn.functional

        def set_requires_grad(net, flag):
            for p in net.parameters():
                p.requires_grad = flag

        def step(z, real):
            fake = G(z)
            set_requires_grad(D, True)
            od.zero_grad()
            d_real, d_fake = D(real), D(fake.detach())
            ld = F.softplus(-d_real).mean() + F.softplus(d_fake).mean()
            ld.backward()
            od.step()
            set_requires_grad(D, False)
            og.zero_grad()
            lg = F.softplus(-D(fake)).mean()
            lg.backward()
            og.step()
            return ld, lg
        f = wrap(step)
        return _loop(f, lambda i: (data(mod, i, 4, 2), data(mod, i, 4, 3, seed=50)), 4, G, D, og, od)
    made = _both(run)
    assert _traces(made[0]) == 1 and not made[0].stats["graph_breaks"], made[0].stats


def test_wgan_critic_iterations_with_weight_clipping():
    # n_critic critic updates (RMSprop, p.data.clamp_) per generator update, in a Python loop
    def run(mod, wrap):
        G, D = _gan(mod)
        og = mod.optim.RMSprop(G.parameters(), lr=0.005)
        od = mod.optim.RMSprop(D.parameters(), lr=0.005)

        def step(z, real, clip):
            for k in range(3):
                od.zero_grad()
                lossd = D(G(z[k]).detach()).mean() - D(real[k]).mean()
                lossd.backward()
                od.step()
                for p in D.parameters():
                    p.data.clamp_(-clip, clip)
            og.zero_grad()
            lossg = -D(G(z[3])).mean()
            lossg.backward()
            og.step()
            return lossd, lossg
        f = wrap(step)
        clips = [0.3, 0.3, 0.2, 0.2, 0.3]
        return _loop(f, lambda i: (data(mod, i, 4, 4, 2), data(mod, i, 3, 4, 3, seed=60), clips[i]), 5, G, D, og, od)
    made = _both(run)
    # the clip value is a Python float: one program per value, as torch.compile guards it
    assert _traces(made[0]) == 2 and not made[0].stats["graph_breaks"], made[0].stats


# ---- EMA of weights with a tensor-counted decay; CLIP's clamped temperature

def test_ema_copy_with_warmup_decay_from_a_buffer_counter():
    def run(mod, wrap):
        model = _model(mod)
        ema = _model(mod)
        for p in ema.parameters():
            p.requires_grad_(False)
        ema.register_buffer("updates", mod.zeros((), dtype=mod.int64))
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            with mod.no_grad():
                ema.updates += 1
                n = ema.updates.to(mod.float32)
                decay = mod.clamp((1 + n) / (10 + n), max=0.999)
                for pe, p in zip(ema.parameters(), model.parameters()):
                    pe.data.copy_(decay * pe + (1 - decay) * p.detach())
            return loss, decay
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 4, model, ema, opt)
    made = _both(run)
    assert _traces(made[0]) == 1 and not made[0].stats["graph_breaks"], made[0].stats


def test_clip_contrastive_step_with_learnable_logit_scale_clamped():
    def run(mod, wrap):
        nn = mod.nn
        img = _h.np_init(nn.Linear(4, 3), mod, seed=3)
        txt = _h.np_init(nn.Linear(5, 3), mod, seed=4)
        logit_scale = nn.Parameter(mod.tensor(math.log(1 / 0.07)))
        params = list(img.parameters()) + list(txt.parameters()) + [logit_scale]
        opt = mod.optim.AdamW(params, lr=0.5, weight_decay=0.1)
        F = nn.functional

        def step(a, b):
            opt.zero_grad()
            u = F.normalize(img(a), dim=-1)
            v = F.normalize(txt(b), dim=-1)
            logits = logit_scale.exp() * u @ v.t()
            target = mod.arange(a.shape[0])
            loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target)) / 2
            loss.backward()
            opt.step()
            with mod.no_grad():
                logit_scale.clamp_(0, math.log(20.0))     # the 100x cap of CLIP, lowered to bite
            return loss, logit_scale
        f = wrap(step)
        return _loop(f, lambda i: (data(mod, i, 4, 4), data(mod, i, 4, 5, seed=70)), 4, img, txt, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_embedding_rows_renormed_in_place_after_each_step():
    def run(mod, wrap):
        nn = mod.nn
        emb = _h.np_init(nn.Embedding(6, 3), mod, seed=5, scale=2.0)
        head = _h.np_init(nn.Linear(3, 2), mod, seed=6)
        opt = mod.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.5)

        def step(idx, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(head(emb(idx).mean(1)), y)
            loss.backward()
            opt.step()
            emb.weight.data.renorm_(2, 0, 1.0)
            return loss
        f = wrap(step)
        return _loop(f, lambda i: (labels(mod, i, 12, 6).reshape(4, 3), labels(mod, i, 4, 2, seed=80)), 4, emb, head, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


# ---- gradient surgery between backward and step

def test_gradient_centralization_and_decoupled_noise_free_sgld_update():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2, momentum=0.5, nesterov=True)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            for p in model.parameters():
                if p.grad.dim() > 1:
                    p.grad.sub_(p.grad.mean(dim=1, keepdim=True))
            opt.step()
            return loss
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 4, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1 and not made[0].stats["graph_breaks"], made[0].stats


def test_sgld_noise_added_to_params_from_a_generator_after_the_step():
    # compiled against eager only: the two libraries' random streams differ
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        g = mod.Generator().manual_seed(7)

        def step(x, y, sigma):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            with mod.no_grad():
                for p in model.parameters():
                    p.add_(mod.randn(p.shape, generator=g) * sigma)
            return loss
        f = wrap(step)
        res = _loop(f, lambda i: _xy(mod, i) + (0.01,), 4, model, opt)
        return res + [snapshot(g.get_state())]
    made = _both(run, torch_too=False)
    assert _traces(made[0]) == 1, made[0].stats


def test_multi_task_losses_backward_with_grad_tensors_weights():
    def run(mod, wrap):
        nn = mod.nn
        body = _h.np_init(nn.Linear(4, 6), mod, seed=8)
        ha = _h.np_init(nn.Linear(6, 3), mod, seed=9)
        hb = _h.np_init(nn.Linear(6, 1), mod, seed=10)
        opt = mod.optim.Adam(list(body.parameters()) + list(ha.parameters()) + list(hb.parameters()), lr=0.05)

        def step(x, y, wa, wb):
            opt.zero_grad()
            h = body(x).relu()
            la = nn.functional.cross_entropy(ha(h), y)
            lb = hb(h).pow(2).mean()
            mod.autograd.backward([la, lb], [wa, wb])
            opt.step()
            return la, lb
        f = wrap(step)
        w = lambda i: (mod.tensor(1.0 + 0.5 * i), mod.tensor(2.0 - 0.5 * i))
        return _loop(f, lambda i: _xy(mod, i) + w(i), 4, body, ha, hb, opt)
    made = _both(run)
    assert _traces(made[0]) == 1 and not made[0].stats["graph_breaks"], made[0].stats


# ---- distillation with a temperature argument; a teacher in eval under no_grad

def test_distillation_kl_div_log_target_with_temperature_argument():
    def run(mod, wrap):
        nn = mod.nn
        F = nn.functional
        teacher = _h.np_init(nn.Sequential(nn.Linear(4, 6), nn.Dropout(0.5), nn.Linear(6, 3)), mod, seed=11).eval()
        student = _model(mod)
        opt = mod.optim.SGD(student.parameters(), lr=0.3)

        def step(x, y, T):
            with mod.no_grad():
                t = F.log_softmax(teacher(x) / T, dim=-1)
            s = F.log_softmax(student(x) / T, dim=-1)
            kd = F.kl_div(s, t, reduction="batchmean", log_target=True) * T * T
            loss = kd + F.cross_entropy(student(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss, kd
        f = wrap(step)
        temps = [2.0, 2.0, 4.0, 4.0, 2.0]
        return _loop(f, lambda i: _xy(mod, i) + (temps[i],), 5, student, teacher, opt)
    made = _both(run)
    # one program per temperature (a Python float is a constant of its program)
    assert _traces(made[0]) == 2, made[0].stats


# ---- random regularisers: gumbel-softmax, drop path

def test_gumbel_softmax_hard_straight_through_in_step():
    def run(mod, wrap):
        mod.manual_seed(0)
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        code = mod.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])

        def step(x, hard):
            opt.zero_grad()
            z = mod.nn.functional.gumbel_softmax(model(x), tau=0.5, hard=hard)
            loss = (z @ code).pow(2).sum() + z.max(-1).values.sum()
            loss.backward()
            opt.step()
            return z, loss
        f = wrap(step)
        flags = [True, True, False, True]
        return _loop(f, lambda i: (data(mod, i, 5, 4), flags[i]), 4, model, opt)
    made = _both(run, torch_too=False)
    assert _traces(made[0]) == 2, made[0].stats


def test_drop_path_mask_from_new_empty_bernoulli_in_place():
    def run(mod, wrap):
        mod.manual_seed(0)
        nn = mod.nn

        class Block(nn.Module):
            def __init__(self, p):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.p = p

            def forward(self, x):
                if not self.training or self.p == 0.0:
                    return x + self.fc(x)
                keep = 1 - self.p
                mask = x.new_empty((x.shape[0], 1)).bernoulli_(keep).div_(keep)
                return x + self.fc(x) * mask
        model = _h.np_init(nn.Sequential(Block(0.3), Block(0.5), nn.Linear(4, 3)), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        f = wrap(_sgd(mod, model, opt))
        res = []
        for i in range(5):
            if i == 3:
                model.eval()
            res.append([snapshot(f(*_xy(mod, i))), snapshot(model), snapshot(opt)])
        return res
    made = _both(run, torch_too=False)
    assert _traces(made[0]) == 2 and not made[0].stats["graph_breaks"], made[0].stats


# ---- Python control flow on values read back: tolist(), one_hot without num_classes

def test_class_weights_from_tolist_counter_run_eagerly_equal():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            counts = Counter(y.tolist())
            w = mod.tensor([len(y) / (3 * counts.get(c, 1)) for c in range(3)])
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y, weight=w)
            loss.backward()
            opt.step()
            return loss, sorted(counts.items())
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 4, model, opt)
    made = _both(run)
    assert made[0].stats["graph_breaks"] and "tolist" in _breaks(made[0])[0], made[0].stats


def test_one_hot_width_read_from_the_labels():
    # F.one_hot(y) without num_classes: its width is y.max() + 1, different per batch
    def run(mod, wrap):
        w = mod.tensor([[0.5, -1.0, 2.0, 0.1]], requires_grad=True)

        def step(y):
            oh = mod.nn.functional.one_hot(y).float()
            loss = (oh * w[:, :oh.shape[1]]).sum()
            loss.backward()
            return oh, loss, w.grad.clone()
        f = wrap(step)
        ys = [[0, 2, 1], [1, 1, 0], [3, 0, 0], [2, 2, 2]]
        return [[snapshot(f(mod.tensor(y)))] for y in ys]
    _both(run)


# ---- checkpoint and resume through torch.save / torch.load

def test_save_and_resume_from_bytes_between_calls():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        sched = mod.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

        f = wrap(_sgd(mod, model, opt))
        res, buf = [], None
        for i in range(6):
            if i == 2:
                buf = io.BytesIO()
                mod.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict()}, buf)
            if i == 4:     # roll back to the checkpoint taken before call 2
                buf.seek(0)
                ck = mod.load(buf)
                model.load_state_dict(ck["model"])
                opt.load_state_dict(ck["opt"])
                sched.load_state_dict(ck["sched"])
            res.append([snapshot(f(*_xy(mod, i))), snapshot(model), snapshot(opt)])
            sched.step()
        return res
    made = _both(run)
    assert _traces(made[0]) <= 2 and not made[0].stats["graph_breaks"], made[0].stats


def test_resume_into_fresh_model_and_optimizer_with_a_new_compiled_step():
    def run(mod, wrap):
        def build():
            model = _model(mod)
            return model, mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def make_step(model, opt):
            def step(x, y):
                opt.zero_grad()
                loss = mod.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                return loss
            return wrap(step)
        model, opt = build()
        f = make_step(model, opt)
        res = _loop(f, lambda i: _xy(mod, i), 3, model, opt)
        buf = io.BytesIO()
        mod.save([model.state_dict(), opt.state_dict()], buf)
        buf.seek(0)
        model2, opt2 = build()
        sd, osd = mod.load(buf)
        model2.load_state_dict(sd)
        opt2.load_state_dict(osd)
        g = make_step(model2, opt2)
        res += _loop(g, lambda i: _xy(mod, i + 3), 3, model2, opt2)
        # the first model is left where it was
        res.append(snapshot(model))
        return res
    _both(run)


# ---- Python random generators held by the trainer

def test_mixup_lambda_from_a_numpy_randomstate_object_each_call():
    import random

    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        nrng, prng = np.random.RandomState(3), random.Random(4)
        F = mod.nn.functional

        def step(x, y):
            lam = float(nrng.beta(0.4, 0.4))
            if prng.random() < 0.5:
                x = x.flip(0)
                y = y.flip(0)
            xm = lam * x + (1 - lam) * x.roll(1, 0)
            out = model(xm)
            loss = lam * F.cross_entropy(out, y) + (1 - lam) * F.cross_entropy(out, y.roll(1, 0))
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss, lam
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 5, model, opt) + [nrng.randint(1000), prng.random()]
    _both(run)


def test_manual_seed_from_an_argument_past_the_cache_limit():
    # torch.manual_seed(seed) inside the step with a new seed every call: each seed must give
    # its own draws (a program per seed up to the cache limit, eager after it with a warning)
    def run(mod, wrap):
        model = _h.np_init(mod.nn.Sequential(mod.nn.Linear(4, 6), mod.nn.Dropout(0.5), mod.nn.Linear(6, 3)), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y, seed):
            mod.manual_seed(seed)
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss, mod.rand(2)
        f = wrap(step)
        seeds = [5, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 5]
        return [[snapshot(f(*_xy(mod, 0), s)), snapshot(model)] for s in seeds]
    made = _both(run, torch_too=False)
    # seeds 5..12 fill the 8 programs; 13 and 14 run eagerly with the reason; 5 finds its program
    assert _traces(made[0]) == 8 and made[0].stats["eager_calls"] == 3, made[0].stats
    assert "cache_size_limit" in _breaks(made[0])[0] and "args[2]" in _breaks(made[0])[0], made[0].stats


# ---- global grad mode switched by a function call inside the step and left switched

def test_set_grad_enabled_called_as_a_function_and_left_off_after_the_step():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y, leave_off):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            mod.set_grad_enabled(False)
            probe = model(x).sum()
            if not leave_off:
                mod.set_grad_enabled(True)
            return loss, probe
        f = wrap(step)
        res = []
        for i, off in enumerate([False, False, True, False, True, True]):
            out = f(*_xy(mod, i), off)
            res.append([snapshot(out), mod.is_grad_enabled(), snapshot(model)])
            mod.set_grad_enabled(True)
        return res
    made = _both(run)
    assert _traces(made[0]) <= 2, made[0].stats


# ---- hooks that remove themselves, or are removed through a context manager

def test_forward_hook_that_removes_itself_after_three_records():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        seen = []

        def hook(m, args, out):
            seen.append(out.detach().abs().sum())
            if len(seen) == 3:
                handle.remove()
        handle = model[0].register_forward_hook(hook)

        f = wrap(_sgd(mod, model, opt))
        return [[snapshot(f(*_xy(mod, i))), snapshot(list(seen)), snapshot(model)] for i in range(6)]
    made = _both(run)
    # the hook's list grows on every call: eager, with the reason
    assert "'seen'" in _breaks(made[0])[0], made[0].stats


def test_grad_hook_on_a_parameter_removing_itself_mid_run():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        fired = []
        w = model[2].weight

        def hook(g):
            fired.append(len(fired))
            if len(fired) == 2:
                handle.remove()
            return g * 10
        handle = w.register_hook(hook)

        f = wrap(_sgd(mod, model, opt))
        return [[snapshot(f(*_xy(mod, i))), list(fired), snapshot(model)] for i in range(5)]
    _both(run)


def test_hook_handles_used_as_context_managers_around_calls():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        f = wrap(_sgd(mod, model, opt))

        def double(p):
            p.grad.mul_(2)

        def halve(m, args, out):
            return out * 0.5
        res = []
        for i in range(5):
            if i in (1, 3):
                with model[0].register_forward_hook(halve), \
                        model[2].weight.register_post_accumulate_grad_hook(double):
                    out = f(*_xy(mod, i))
            else:
                out = f(*_xy(mod, i))
            res.append([snapshot(out), snapshot(model)])
        return res
    made = _both(run)
    # calls 1 and 3 register new hooks (new handles: a program each); call 4 has the hooks of
    # call 2 again and runs its program (NOTE [hook sets come back] in _state.py)
    assert _traces(made[0]) == 3, made[0].stats


# ---- adversarial training: PGD on a perturbation made inside the step

def test_pgd_adversarial_training_with_delta_made_inside():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        F = mod.nn.functional

        def step(x, y, eps, steps):
            delta = mod.zeros_like(x, requires_grad=True)
            for _ in range(steps):
                loss = F.cross_entropy(model(x + delta), y)
                loss.backward()
                delta.data = (delta + 0.1 * delta.grad.detach().sign()).clamp(-eps, eps)
                delta.grad.zero_()
            opt.zero_grad()
            adv = F.cross_entropy(model(x + delta.detach()), y)
            adv.backward()
            opt.step()
            return adv, delta.detach()
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i) + (0.25, 3), 4, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


# ---- one step, two input dtypes / a last short batch scaled by its size

def test_accumulation_with_a_short_last_batch_scaled_by_its_size():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        F = mod.nn.functional

        def step(x, y, total, last):
            loss = F.cross_entropy(model(x), y, reduction="sum") / total
            loss.backward()
            if last:
                opt.step()
                opt.zero_grad(set_to_none=True)
            return loss
        f = wrap(step)
        sizes = [5, 5, 2, 5, 5, 2]      # two epochs of 12 samples
        res = []
        for i, n in enumerate(sizes):
            x, y = data(mod, i, n, 4), labels(mod, i, n, 3)
            res.append([snapshot(f(x, y, 12, i % 3 == 2)), snapshot(model), snapshot(opt)])
        return res
    made = _both(run)
    # (5, grads set), (5, grads None), (2, last, no momentum buffer yet), (2, last, a buffer):
    # four programs, call 0 (5, grads None) eager
    assert _traces(made[0]) == 4 and not made[0].stats["graph_breaks"], made[0].stats


def test_integer_then_float_inputs_cast_inside():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.05)

        def step(x, y):
            x = x.float() / 4
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss, str(x.dtype).split(".")[-1]
        f = wrap(step)
        xs = lambda i: labels(mod, i, 20, 9).reshape(5, 4) if i % 2 == 0 else data(mod, i, 5, 4) * 4
        return _loop(f, lambda i: (xs(i), labels(mod, i, 5, 3)), 5, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 2, made[0].stats


# ---- optimizer flag arguments: zero_grad(set_to_none=flag), train(flag) inside

def test_zero_grad_set_to_none_chosen_by_an_argument():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)

        def step(x, y, to_none):
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=to_none)
            return loss
        f = wrap(step)
        flags = [True, False, False, True, False, True]
        return _loop(f, lambda i: _xy(mod, i) + (flags[i],), 6, model, opt)
    _both(run)


def test_validation_inside_the_step_with_train_flag_argument():
    def run(mod, wrap):
        mod.manual_seed(0)
        nn = mod.nn
        model = _h.np_init(nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Dropout(0.3), nn.Linear(6, 3)), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y, xv, yv):
            model.train()
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            model.eval()
            with mod.no_grad():
                val = nn.functional.cross_entropy(model(xv), yv)
            model.train()
            return {"loss": loss, "val": val}
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i) + _xy(mod, i + 50), 4, model, opt)
    made = _both(run, torch_too=False)
    assert _traces(made[0]) == 1, made[0].stats


def test_hook_registered_for_every_third_call_reuses_the_plain_program():
    # a hook for one call in three (register, call, remove: feature noise, a probe): the calls
    # without it run the one program traced without it (NOTE [hook sets come back] in _state.py)
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        f = wrap(_sgd(mod, model, opt))

        def damp(m, args, out):
            return out * 0.5 + 0.1
        res = []
        for i in range(10):
            if i % 3 == 2:
                h = model[1].register_forward_hook(damp)
                out = f(*_xy(mod, i))
                h.remove()
            else:
                out = f(*_xy(mod, i))
            res.append([snapshot(out), snapshot(model)])
        return res
    made = _both(run)
    # the plain program (call 1) and one per registration (calls 2, 5, 8)
    assert _traces(made[0]) == 4 and not made[0].stats["graph_breaks"], made[0].stats


def test_hook_handle_kept_by_a_deep_copied_module_removed_from_the_copy():
    # the copy's handle has the original's id: removing it from the copy leaves the original's
    # hook in place, and the program traced before that hook existed must not run again
    import copy

    def run(mod, wrap):
        nn = mod.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)

            def forward(self, x):
                return self.fc(x)
        model = _h.np_init(Net(), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        f = wrap(_sgd(mod, model, opt))
        res = []
        for i in range(6):
            if i == 2:
                model.h = model.fc.register_forward_hook(lambda m, a, o: o * 3)
            if i == 4:
                twin = copy.deepcopy(model)
                twin.h.remove()
                res.append([snapshot(twin(data(mod, i, 2, 4)))])
            res.append([snapshot(f(*_xy(mod, i))), snapshot(model)])
        return res
    _both(run)


def test_hook_toggled_between_two_functions_and_none():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        f = wrap(_sgd(mod, model, opt))

        def double(m, a, o):
            return o * 2

        def neg(m, a, o):
            return -o
        res = []
        for i, hook in enumerate([None, double, None, neg, None, double, neg]):
            h = model[2].register_forward_hook(hook) if hook is not None else None
            res.append([snapshot(f(*_xy(mod, i))), snapshot(model)])
            if h is not None:
                h.remove()
        return res
    made = _both(run)
    # no hook: call 2's program, reused at call 4; a program per registration (1, 3, 5, 6)
    assert _traces(made[0]) == 5, made[0].stats


def test_backward_into_grads_of_the_eager_first_call_before_zero_grad_one_program():
    # the probe pass accumulates into the .grad the eager first call made; zero_grad() drops
    # them: the program reads the .grad of the moment, so the eager ones going is no retrace
    model = _model(tracegrad)
    opt = tracegrad.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        tracegrad.nn.functional.cross_entropy(model(x), y).backward()    # a probe pass
        opt.zero_grad()
        loss = tracegrad.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    f = tracegrad.compile(step)
    for i in range(4):
        f(*_xy(tracegrad, i))
    assert _traces(f) == 1, f.stats


def test_grads_rebound_by_the_caller_between_accumulating_calls():
    # the .grad a call starts with is the owner's of the moment: rebinding it to a new tensor
    # (the old one dropped), to one kept from earlier, or to a view, between calls
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.05)

        def step(x, y):
            mod.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            return model[0].weight.grad
        f = wrap(step)
        w = model[0].weight
        kept, res = None, []
        for i in range(7):
            out = f(*_xy(mod, i))
            res.append([snapshot(out), snapshot(model)])
            if i == 1:
                kept = w.grad
                w.grad = w.grad * 0.5
            if i == 3:
                w.grad = kept
            if i == 4:
                big = mod.zeros(2, *w.shape)
                w.grad = big[1]
            if i == 5:
                w.grad = w.grad.clone()
        return res
    _both(run)
