"""Round 35: EMA "teacher" parameters updated under no_grad inside the step, weight tying and
untying between calls, ``weight_norm`` / ``spectral_norm`` parametrizations (power-iteration
buffers updated every forward), gradient accumulation driven by a Python counter and by a tensor
counter, GradScaler-like inf/nan skip with ``torch.where``, ``copy.deepcopy`` of a model and its
optimizer, ``state_dict()`` returned from the step, ``model.to(dtype)`` between calls, a step
summing two models' losses with two optimizers, ``p.grad`` replaced by a user tensor before
``opt.step``, in-place ops on a returned tensor, ``**kwargs`` forwards returning dict /
namedtuple, ``module.apply(init_fn)`` between calls and ``requires_grad_`` toggled between calls.
Each program is written for this file (no outside source); it runs eagerly, through
``tracegrad.compile`` from identical state and with torch, and everything observable is compared
after several calls (harness: tests/compile/_harness.py ``run_three_ways``). Changes between calls
are made after the second call where it matters (the first call runs eagerly, the second traces).

Fixes: none needed; every program here gave compiled == eager == torch.
Found and left alone (not silent: same values, eager fallback with a clear graph-break warning):
a Python counter mutated inside (``n[0] += 1``), ``register_hook`` / ``register_full_backward_pre_hook``
called inside, and ``LBFGS.step(closure)`` run eagerly; a ``torch.compile``'d module names its
parameters ``_orig_mod.*`` (as torch's does); retraces (not per call) on ``requires_grad_`` toggles,
``model.to(dtype)``, (un)tying, parametrizations added / removed and new ``**kwargs`` key sets.
"""
import collections
import copy

from ._harness import data, labels, np_init, run_three_ways, snapshot
from ._harness import small_mlp as _model

_both = run_three_ways


def _sgd_step(mod, model, opt):
    F = mod.nn.functional

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def test_ema_teacher_updated_under_no_grad_inside_the_step():
    def run(mod, wrap):
        model = _model(mod)
        ema = copy.deepcopy(model)
        for p in ema.parameters():
            p.requires_grad_(False)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        inner = _sgd_step(mod, model, opt)

        def step(x, y):
            loss = inner(x, y)
            with mod.no_grad():
                for e, p in zip(ema.parameters(), model.parameters()):
                    e.mul_(0.9).add_(p, alpha=1 - 0.9)
            return loss, ema(x)
        f = wrap(step)
        res = []
        for i in range(4):
            x, y = data(mod, i, 5, 4), labels(mod, i, 5, 3)
            res.append(snapshot(f(x, y)))
            res.append(snapshot(ema))
        return res
    _both(run)


def _tied_lm(mod):
    nn = mod.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(7, 4)
            self.head = nn.Linear(4, 7, bias=False)
            self.head.weight = self.emb.weight

        def forward(self, t):
            return self.head(mod.tanh(self.emb(t)))
    return np_init(LM(), mod)


def test_weight_tying_then_untying_between_calls():
    def run(mod, wrap):
        model = _tied_lm(mod)
        F = mod.nn.functional

        def step(t, y):
            model.zero_grad()
            loss = F.cross_entropy(model(t), y)
            loss.backward()
            with mod.no_grad():
                for p in model.parameters():
                    p.sub_(0.5 * p.grad)
            return loss
        f = wrap(step)
        res = []
        for i in range(4):
            t, y = labels(mod, i, 5, 7), labels(mod, i + 50, 5, 7)
            res.append(snapshot(f(t, y)))
            res.append(snapshot(model))
            if i == 1:
                model.head.weight = mod.nn.Parameter(model.emb.weight.detach().clone() * 2)
        return res
    _both(run)


def test_weight_norm_parametrization_trained():
    def run(mod, wrap):
        nn = mod.nn
        lin = np_init(nn.Linear(4, 3), mod)
        lin = nn.utils.parametrizations.weight_norm(lin)
        opt = mod.optim.SGD(lin.parameters(), lr=0.2)
        F = nn.functional

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(lin(x), y)
            loss.backward()
            opt.step()
            return loss, lin.weight
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append(snapshot(lin))
        return res
    _both(run)


def test_spectral_norm_power_iteration_buffers_every_forward():
    def run(mod, wrap):
        nn = mod.nn
        lin = np_init(nn.Linear(4, 3), mod)
        lin = nn.utils.parametrizations.spectral_norm(lin)
        with mod.no_grad():
            pr = lin.parametrizations.weight[0]
            pr._u.copy_(mod.tensor([0.6, 0.0, 0.8]))
            pr._v.copy_(mod.tensor([0.5, 0.5, 0.5, 0.5]))

        def step(x):
            return lin(x).sum()
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 5, 4))))
            res.append(snapshot(lin))
        lin.eval()
        res.append(snapshot(f(data(mod, 9, 5, 4))))
        res.append(snapshot(lin))
        return res
    _both(run)


def test_register_parametrization_added_between_calls():
    def run(mod, wrap):
        nn = mod.nn
        lin = np_init(nn.Linear(3, 3), mod)

        class Sym(nn.Module):
            def forward(self, w):
                return w.triu() + w.triu(1).transpose(0, 1)

        def step(x):
            return lin(x)
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 2, 3))))
            if i == 1:
                nn.utils.parametrize.register_parametrization(lin, "weight", Sym())
            if i == 2:
                nn.utils.parametrize.remove_parametrizations(lin, "weight", leave_parametrized=False)
        return res
    _both(run)


def test_grad_accumulation_python_counter():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        F = mod.nn.functional
        n = [0]

        def step(x, y):
            loss = F.cross_entropy(model(x), y) / 2
            loss.backward()
            n[0] += 1
            if n[0] % 2 == 0:
                opt.step()
                opt.zero_grad()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append(snapshot(model))
            res.append(snapshot(opt))
        return res
    _both(run)


def test_grad_accumulation_tensor_counter_with_where():
    def run(mod, wrap):
        model = _model(mod)
        F = mod.nn.functional
        count = mod.zeros(())

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            count.add_(1)
            do = (count % 2) == 0
            with mod.no_grad():
                for p in model.parameters():
                    p.sub_(mod.where(do, 0.1 * p.grad, mod.zeros_like(p)))
                    p.grad.mul_(mod.where(do, 0.0, 1.0))
            return loss, count.clone()
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append(snapshot(model))
        return res
    _both(run)


def test_inf_nan_skip_with_where():
    def run(mod, wrap):
        model = _model(mod)
        F = mod.nn.functional
        scale = mod.tensor(4.0)

        def step(x, y):
            model.zero_grad()
            (F.cross_entropy(model(x), y) * scale).backward()
            finite = mod.stack([mod.isfinite(p.grad).all() for p in model.parameters()]).all()
            with mod.no_grad():
                for p in model.parameters():
                    p.sub_(mod.where(finite, 0.1 * p.grad / scale, mod.zeros_like(p)))
                scale.copy_(mod.where(finite, scale * 2, scale / 2))
            return finite
        f = wrap(step)
        res = []
        for i in range(4):
            x = data(mod, i, 5, 4)
            if i == 1:
                x[0, 0] = float("inf")
            res.append(snapshot(f(x, labels(mod, i, 5, 3))))
            res.append(snapshot(model))
            res.append(snapshot(scale))
        return res
    _both(run)


def test_deepcopy_of_model_and_optimizer_both_stepped():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        F = mod.nn.functional

        def make(m, o):
            def step(x, y):
                o.zero_grad()
                loss = F.cross_entropy(m(x), y)
                loss.backward()
                o.step()
                return loss
            return step
        f = wrap(make(model, opt))
        res = []
        for i in range(2):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
        m2 = copy.deepcopy(model)
        o2 = mod.optim.Adam(m2.parameters(), lr=0.05)
        o2.load_state_dict(copy.deepcopy(opt.state_dict()))
        g = wrap(make(m2, o2))
        for i in range(2, 5):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append(snapshot(g(data(mod, i + 10, 5, 4), labels(mod, i + 10, 5, 3))))
            res.append([snapshot(model), snapshot(m2), snapshot(opt), snapshot(o2)])
        return res
    _both(run)


def test_state_dict_taken_inside_and_returned():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
        inner = _sgd_step(mod, model, opt)

        def step(x, y):
            loss = inner(x, y)
            return loss, model.state_dict(), opt.state_dict()["state"]
        f = wrap(step)
        res, kept = [], []
        for i in range(3):
            out = f(data(mod, i, 5, 4), labels(mod, i, 5, 3))
            kept.append(out[1])
            res.append(snapshot(out))
        res.append(snapshot(kept))        # earlier state_dicts alias the live parameters
        return res
    _both(run)


def test_model_to_dtype_between_calls():
    def run(mod, wrap):
        model = _model(mod)
        F = mod.nn.functional

        def step(x, y):
            model.zero_grad()
            loss = F.cross_entropy(model(x.to(model[0].weight.dtype)), y)
            loss.backward()
            with mod.no_grad():
                for p in model.parameters():
                    p.sub_(0.1 * p.grad)
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append(snapshot(model))
            if i == 1:
                model.to(mod.float64)
            if i == 3:
                model.to(mod.float32)
        return res
    _both(run)


def test_two_models_two_optimizers_summed_loss():
    def run(mod, wrap):
        a, b = _model(mod), np_init(mod.nn.Linear(3, 3), mod, seed=3)
        oa = mod.optim.SGD(a.parameters(), lr=0.1)
        ob = mod.optim.Adam(b.parameters(), lr=0.05)
        F = mod.nn.functional

        def step(x, y):
            oa.zero_grad()
            ob.zero_grad()
            h = a(x)
            loss = F.cross_entropy(h, y) + F.cross_entropy(b(h), y)
            loss.backward()
            oa.step()
            ob.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append([snapshot(a), snapshot(b), snapshot(ob)])
        return res
    _both(run)


def test_grad_replaced_by_user_tensor_before_step():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        F = mod.nn.functional

        def step(x, y):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            model[0].weight.grad = mod.zeros_like(model[0].weight)
            model[2].bias.grad = model[2].bias.grad * 3
            opt.step()
            return model[2].bias.grad
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append(snapshot(model))
            res.append(snapshot(opt))
        return res
    _both(run)


def test_inplace_on_returned_tensor_after_call():
    def run(mod, wrap):
        acc = mod.zeros(3)

        def step(x):
            acc.add_(x.sum(0))
            return acc, acc * 1, acc.view(3)
        f = wrap(step)
        res = []
        for i in range(4):
            a, b, v = f(data(mod, i, 2, 3))
            res.append(snapshot([a, b, v]))
            if i == 1:
                a.mul_(2)
            if i == 2:
                v.add_(10)
                b.add_(5)
            res.append(snapshot(acc))
        return res
    _both(run)


Out = collections.namedtuple("Out", "logits loss")


def test_kwargs_forward_returning_dict_and_namedtuple():
    def run(mod, wrap):
        nn = mod.nn
        F = nn.functional

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 3)

            def forward(self, x, **kw):
                logits = self.lin(x) * kw.get("temp", 1.0)
                out = {"logits": logits}
                if "labels" in kw:
                    out["loss"] = F.cross_entropy(logits, kw["labels"])
                return out
        m = np_init(M(), mod)
        cm = wrap(m)

        def nt(x, y):
            o = cm(x, labels=y, temp=2.0)
            return Out(o["logits"], o["loss"])
        g = wrap(nt)
        res = []
        for i in range(3):
            x, y = data(mod, i, 5, 4), labels(mod, i, 5, 3)
            o = cm(x, labels=y) if i != 1 else cm(x, temp=0.5)
            res.append(snapshot(o))
            r = g(x, y)
            assert type(r).__name__ == "Out"
            res.append(snapshot(tuple(r)))
        return res
    _both(run)


def test_module_apply_init_fn_between_calls():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        f = wrap(_sgd_step(mod, model, opt))

        def init(m):
            if isinstance(m, mod.nn.Linear):
                with mod.no_grad():
                    m.weight.fill_(0.05)
                    m.bias.zero_()
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append(snapshot(model))
            if i == 1:
                model.apply(init)
        return res
    _both(run)


def test_requires_grad_toggled_between_calls_optimizer_over_all():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.AdamW(model.parameters(), lr=0.05)
        f = wrap(_sgd_step(mod, model, opt))
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append([snapshot(model), snapshot(opt)])
            if i == 0:
                model[0].requires_grad_(False)
            if i == 2:
                model[0].requires_grad_(True)
        return res
    _both(run)


def test_autocast_region_inside():
    def run(mod, wrap):
        model = _model(mod)

        def step(x):
            with mod.autocast("cpu", dtype=mod.bfloat16):
                h = model(x)
            return h.float().sum(1), str(h.dtype).split(".")[-1]
        f = wrap(step)
        return [snapshot(f(data(mod, i, 5, 4))) for i in range(3)]
    _both(run, torch_rtol=2e-2)


def test_lbfgs_closure_inside_compile():
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(3, 1), mod)
        opt = mod.optim.LBFGS(lin.parameters(), lr=0.5, max_iter=3)

        def step(x, y):
            def closure():
                opt.zero_grad()
                loss = ((lin(x) - y) ** 2).mean()
                loss.backward()
                return loss
            return opt.step(closure)
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 6, 3), data(mod, i + 20, 6, 1))))
            res.append(snapshot(lin))
        return res
    _both(run, torch_rtol=1e-3)


def test_full_backward_pre_hook_scales_grad_output():
    def run(mod, wrap):
        model = _model(mod)
        calls = []

        def hook(m, gout):
            calls.append(1)
            return (gout[0] * 2,)
        model[2].register_full_backward_pre_hook(hook)

        def step(x):
            model.zero_grad()
            model(x).pow(2).sum().backward()
            return model[0].weight.grad.clone()
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 5, 4))))
            res.append(len(calls))
        return res
    _both(run)


def test_deepcopy_of_a_compiled_module_then_both_trained():
    def run(mod, wrap):
        model = _model(mod)
        cm = wrap(model)
        F = mod.nn.functional
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def train(m, o, i):
            o.zero_grad()
            loss = F.cross_entropy(m(data(mod, i, 5, 4)), labels(mod, i, 5, 3))
            loss.backward()
            o.step()
            return snapshot(loss)
        res = [train(cm, opt, 0), train(cm, opt, 5)]     # traced before the copy
        cm2 = copy.deepcopy(cm)
        opt2 = mod.optim.SGD(cm2.parameters(), lr=0.1)
        for i in range(1, 4):
            res.append(train(cm, opt, i))
            res.append(train(cm2, opt2, i + 10))
            # a compiled module names its parameters "_orig_mod.*" (as torch.compile's): compare the inner ones
            res.append([snapshot(model), snapshot(getattr(cm2, "_orig_mod", cm2))])
            assert cm2(data(mod, 0, 2, 4)).shape == (2, 3)
        return res
    _both(run)


def test_ema_of_batchnorm_buffers_and_params_inside():
    def run(mod, wrap):
        nn = mod.nn
        model = np_init(nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)), mod)
        ema = copy.deepcopy(model).eval()
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
            with mod.no_grad():
                for e, p in zip(ema.state_dict().values(), model.state_dict().values()):
                    if e.dtype.is_floating_point:
                        e.lerp_(p, 0.3)
                    else:
                        e.copy_(p)
            return ema(x)
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 5, 4))))
            res.append(snapshot(ema))
        return res
    _both(run)


def test_spectral_norm_trained_with_optimizer():
    def run(mod, wrap):
        nn = mod.nn
        lin = nn.utils.parametrizations.spectral_norm(np_init(nn.Linear(4, 3), mod))
        with mod.no_grad():
            pr = lin.parametrizations.weight[0]
            pr._u.copy_(mod.tensor([0.6, 0.0, 0.8]))
            pr._v.copy_(mod.tensor([0.5, 0.5, 0.5, 0.5]))
        opt = mod.optim.Adam(lin.parameters(), lr=0.05)
        F = nn.functional

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(lin(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append(snapshot(lin))
        return res
    _both(run, torch_rtol=5e-4)


def test_parametrization_cached_context_inside():
    def run(mod, wrap):
        nn = mod.nn
        lin = nn.utils.parametrizations.weight_norm(np_init(nn.Linear(3, 3), mod))

        def step(x):
            with nn.utils.parametrize.cached():
                return lin(lin(x)) + lin.weight.sum()
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 2, 3))))
            with mod.no_grad():
                lin.parametrizations.weight.original0.mul_(1.5)
        return res
    _both(run)


def test_tying_added_between_calls_and_load_state_dict_of_optimizer():
    def run(mod, wrap):
        nn = mod.nn
        emb = np_init(nn.Embedding(5, 3), mod)
        head = np_init(nn.Linear(3, 5, bias=False), mod, seed=4)
        model = nn.ModuleDict({"emb": emb, "head": head})
        F = nn.functional

        def step(t, y):
            model.zero_grad()
            loss = F.cross_entropy(model["head"](model["emb"](t)), y)
            loss.backward()
            with mod.no_grad():
                for p in model.parameters():
                    p.sub_(0.3 * p.grad)
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(labels(mod, i, 4, 5), labels(mod, i + 9, 4, 5))))
            res.append(snapshot(model))
            if i == 1:      # (the first call runs eagerly, the second traces)
                head.weight = emb.weight
        return res
    _both(run)


def test_compiled_module_to_float64_between_calls():
    def run(mod, wrap):
        model = _model(mod)
        cm = wrap(model)
        res = []
        for i in range(4):
            x = data(mod, i, 2, 4)
            out = cm(x.to(model[0].weight.dtype))
            res.append([snapshot(out), str(out.dtype).split(".")[-1]])
            if i == 1:
                model.double()
        return res
    _both(run)


def test_lr_changed_through_load_state_dict_between_calls():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        f = wrap(_sgd_step(mod, model, opt))
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append([snapshot(model), snapshot(opt)])
            if i == 1:
                sd = copy.deepcopy(opt.state_dict())
                sd["param_groups"][0]["lr"] = 0.5
                sd["param_groups"][0]["momentum"] = 0.0
                opt.load_state_dict(sd)
        return res
    _both(run)


def test_dataclass_output_and_kwargs_key_sets_vary():
    import dataclasses

    @dataclasses.dataclass
    class Res:
        y: object
        extra: object = None

    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(3, 2), mod)

        def step(x, **kw):
            y = lin(x)
            for k in sorted(kw):
                y = y * kw[k] if k.startswith("s") else y + kw[k]
            return Res(y, kw.get("b"))
        f = wrap(step)
        res = []
        for i in range(4):
            kw = [{}, {"s": data(mod, i, 2)}, {"b": data(mod, i, 2), "s2": 3.0}, {"s": 2.0}][i]
            r = f(data(mod, i, 4, 3), **kw)
            assert type(r).__name__ == "Res"
            res.append(snapshot([r.y, r.extra]))
        return res
    _both(run)


def test_weight_norm_removed_between_calls():
    def run(mod, wrap):
        nn = mod.nn
        lin = nn.utils.parametrizations.weight_norm(np_init(nn.Linear(3, 2), mod))
        holder = [lin]

        def step(x):
            holder[0].zero_grad()
            out = holder[0](x).sum()
            out.backward()
            return out, [p.grad for p in holder[0].parameters()]
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 4, 3))))
            if i == 1:
                nn.utils.parametrize.remove_parametrizations(lin, "weight")
        return res
    _both(run)


def test_clip_grad_norm_returned_and_hook_registered_each_call():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        F = mod.nn.functional
        seen = []

        def step(x, y):
            opt.zero_grad()
            h = model[0](x)
            h.register_hook(lambda g: seen.append(float(g.abs().sum())) or g * 0.5)
            F.cross_entropy(model[2](model[1](h)), y).backward()
            n = mod.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            return n
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append([snapshot(model), len(seen)])
        res.append([round(s, 4) for s in seen])
        return res
    _both(run)


def test_ambient_autocast_toggled_around_the_calls():
    def run(mod, wrap):
        model = _model(mod)

        def step(x):
            h = model(x)
            return h.float().sum(1), str(h.dtype).split(".")[-1]
        f = wrap(step)
        res = []
        for i in range(5):
            if i in (2, 3):
                with mod.autocast("cpu", dtype=mod.bfloat16):
                    res.append(snapshot(f(data(mod, i, 5, 4))))
            else:
                res.append(snapshot(f(data(mod, i, 5, 4))))
        return res
    _both(run, torch_rtol=2e-2)


def test_ambient_no_grad_and_inference_mode_around_the_calls():
    def run(mod, wrap):
        model = _model(mod)

        def step(x):
            out = model(x).sum()
            return out, out.requires_grad
        f = wrap(step)
        res = []
        for i in range(5):
            if i == 2:
                with mod.no_grad():
                    res.append(snapshot(f(data(mod, i, 5, 4))))
            elif i == 3:
                with mod.inference_mode():
                    res.append(snapshot(f(data(mod, i, 5, 4))))
            else:
                res.append(snapshot(f(data(mod, i, 5, 4))))
        return res
    _both(run)


def test_ema_decay_attribute_and_warmup_schedule_changed_between_calls():
    class EMA:
        def __init__(self, model):
            self.shadow = [p.detach().clone() for p in model.parameters()]
            self.decay = 0.5
            self.updates = 0

    def run(mod, wrap):
        model = _model(mod)
        ema = EMA(model)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        inner = _sgd_step(mod, model, opt)

        def step(x, y):
            loss = inner(x, y)
            with mod.no_grad():
                for s, p in zip(ema.shadow, model.parameters()):
                    s.mul_(ema.decay).add_(p, alpha=1 - ema.decay)
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append(snapshot(ema.shadow))
            ema.decay = [0.5, 0.5, 0.9, 0.9, 0.99][i]
        return res
    _both(run)


def test_grad_set_on_a_frozen_param_before_step():
    def run(mod, wrap):
        model = _model(mod)
        model[0].bias.requires_grad_(False)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, weight_decay=0.1)
        F = mod.nn.functional

        def step(x, y):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            b = model[0].bias
            b.grad = mod.ones_like(b) * 0.5
            opt.step()
            return b.grad
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append(snapshot(model))
        return res
    _both(run)


def test_deepcopy_of_model_and_optimizer_together_after_tracing():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        step = wrap(_sgd_step(mod, model, opt))
        res = [snapshot(step(data(mod, i, 5, 4), labels(mod, i, 5, 3))) for i in range(2)]
        m2, o2 = copy.deepcopy((model, opt))     # the copied optimizer refers to the copied params
        step2 = wrap(_sgd_step(mod, m2, o2))
        for i in range(2, 4):
            res.append(snapshot(step(data(mod, i, 5, 4), labels(mod, i, 5, 3))))
            res.append(snapshot(step2(data(mod, i + 7, 5, 4), labels(mod, i + 7, 5, 3))))
            res.append([snapshot(model), snapshot(m2), snapshot(opt), snapshot(o2)])
        return res
    _both(run)
