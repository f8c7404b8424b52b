"""Round 17 of PyTorch's own tests, ported: test/nn/test_module_hooks.py (TestModuleHookNN
.test_hook_inplace: a module with full backward hooks passes its inputs and outputs through
``BackwardHookFunction``, whose outputs may not be written in place with grad on, inside
forward (``ReLU(inplace=True)``) or after it; TestStateDictHooks: load_state_dict pre-hooks),
test/nn/test_load_state_dict.py (a submodule's pre-hooks and ``_load_from_state_dict`` see only
the entries under its prefix, and what they rename there is what loads), test/test_nn.py
(TestNN.test_register_buffer_raises_error_if_not_tensor, test_buffer_bad_module_subclass: the
words of the attribute-assignment TypeErrors) and test/nn/test_parametrization.py
(register/remove, stacked right_inverse, cached(), several originals, buffers, state_dict
round trips, transfer_parametrizations_and_params). Each program runs under torch (the oracle)
and tracegrad (``run_both``): equal logs of values, dtypes, shapes and messages' gists.
Linear(3, 3) / (3,) float32 tensors only."""
import copy

import numpy as np
import pytest

from parity import run_both

torch = pytest.importorskip("torch")

W = (np.arange(9.0).reshape(3, 3) / 7 - 0.5).astype(np.float32)
B = (np.arange(3.0) / 5).astype(np.float32)


def lin(T):
    m = T.nn.Linear(3, 3)
    with T.no_grad():
        m.weight.copy_(T.tensor(W))
        m.bias.copy_(T.tensor(B))
    return m


def err(fn):
    """The message of what ``fn()`` raises (None when it does not raise)."""
    try:
        fn()
    except (RuntimeError, TypeError, ValueError, KeyError, AttributeError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def gist(msg, *words):
    """Whether ``msg`` holds every one of ``words`` (the gist both libraries must share)."""
    return msg is not None and all(w in msg for w in words)


def test_full_backward_hook_identity_outputs_refuse_inplace():
    # TestModuleHookNN.test_hook_inplace, and ReLU(inplace=True) under a full backward hook
    def program(T, log):
        class Keep(T.nn.Module):
            def forward(self, inp, do_inplace):
                self.inp = inp
                if do_inplace:
                    inp += 1
                return inp.clone()

        calls = []
        for register in ("register_full_backward_hook", "register_full_backward_pre_hook"):
            mod = Keep()
            h = getattr(mod, register)(lambda m, *g: calls.append(register))
            inp = T.tensor(B, requires_grad=True)
            mod(inp, False).sum().backward()
            log("no inplace: hook ran, grad", (len(calls), inp.grad))
            log("input inplace in forward", gist(err(lambda: mod(inp.clone(), True)),
                                                 "Output 0 of BackwardHookFunction is a view and is being modified inplace"))
            out = mod(inp, False)
            log("output inplace", gist(err(lambda: out.add_(1)), "BackwardHookFunction is a view", "clon"))
            with T.no_grad():
                out.add_(1)      # no autograd check in no_grad
            log("output inplace under no_grad", out)
            h.remove()
            inp.grad = None
            o2 = mod(inp, False)
            o2 += 1              # hooks removed: a plain tensor again
            log("no hook: inplace is fine", o2)

        relu = T.nn.ReLU(inplace=True)
        relu.register_full_backward_hook(lambda *a: calls.append("relu"))
        x = T.tensor(B - 0.2, requires_grad=True)
        log("ReLU(inplace) on a non-leaf", gist(err(lambda: relu(x * 1)), "BackwardHookFunction is a view"))
        log("ReLU(inplace) without grad", relu(T.tensor(B - 0.2)))
        # a hooked Linear feeding an in-place ReLU: the ReLU writes the hooked output
        seq = T.nn.Sequential(lin(T), T.nn.ReLU(inplace=True))
        seq[0].register_full_backward_hook(lambda m, gi, go: calls.append("lin"))
        log("Linear -> ReLU(inplace)", gist(err(lambda: seq(x.unsqueeze(0))), "BackwardHookFunction is a view"))
        y = T.nn.Sequential(lin(T), T.nn.ReLU())(x.unsqueeze(0))
        log("out-of-place ReLU works", y)
        log("calls", calls)

    run_both(program)


@pytest.mark.xfail(strict=True, reason=(
    "autograd core: the identity node a module's full backward hooks put on its inputs does not "
    "make its outputs views of the inputs, so writing the input after forward does not make a "
    "later use of the hooked tensor raise torch's 'its base or another view of its base has been "
    "modified inplace' error (the read succeeds)"))
def test_full_backward_hook_view_base_modified_after_forward():
    # TestModuleHookNN.test_hook_inplace: re-using the hooked input after its base changed
    def program(T, log):
        class Keep(T.nn.Module):
            def forward(self, inp):
                self.inp = inp
                return inp.clone()

        mod = Keep()
        mod.register_full_backward_hook(lambda *a: None)
        local = T.tensor(B, requires_grad=True).clone()
        mod(local)
        local[0] *= 1
        log("use after base modified", gist(err(lambda: mod.inp + 2), "its base or another view of its base"))

    run_both(program)


def test_load_state_dict_hooks_see_their_prefix_only():
    # TestStateDictHooks / test_load_state_dict: each submodule's pre-hooks and loader get the
    # entries under its own prefix; a pre-hook renaming an old key makes it load
    def program(T, log):
        seen = []

        class Legacy(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lin(T)
                self.register_buffer("scale", T.ones(3))

            def _load_from_state_dict(self, sd, prefix, meta, strict, missing, unexpected, errors):
                seen.append(("loader", prefix, sorted(sd)))
                old = prefix + "old_scale"
                if old in sd:
                    sd[prefix + "scale"] = sd.pop(old)
                super()._load_from_state_dict(sd, prefix, meta, strict, missing, unexpected, errors)

        net = T.nn.Sequential(Legacy(), lin(T))

        def rename(sd, prefix, meta, strict, missing, unexpected, errors):
            seen.append(("pre", prefix, sorted(sd)))
            for k in [k for k in sd if k.endswith("w_old")]:
                sd[k[:-5] + "weight"] = sd.pop(k)

        net[0].lin._register_load_state_dict_pre_hook(rename)
        net[1]._register_load_state_dict_pre_hook(rename)
        sd = {k: v * 2 for k, v in net.state_dict().items()}
        sd["0.old_scale"] = sd.pop("0.scale")
        sd["0.lin.w_old"] = sd.pop("0.lin.weight")
        res = net.load_state_dict(sd)
        log("result", (sorted(res.missing_keys), sorted(res.unexpected_keys)))
        log("seen", seen)
        log("loaded", [net[0].scale, net[0].lin.weight, net[1].weight])
        log("caller's dict untouched", sorted(sd))

        seen.clear()
        extra = dict(net.state_dict())
        extra["0.lin.stray"] = T.zeros(1)
        extra["top"] = T.zeros(1)
        log("strict", gist(err(lambda: net.load_state_dict(extra)), 'Unexpected key(s) in state_dict: "0.lin.stray", "top"'))
        res = net.load_state_dict(extra, strict=False)
        log("non-strict", (sorted(res.missing_keys), sorted(res.unexpected_keys)))

        # a pre-hook that drops one of its own entries: that key goes missing
        def drop(sd, prefix, *rest):
            sd.pop(prefix + "bias", None)

        net[1]._register_load_state_dict_pre_hook(drop)
        log("dropped key", gist(err(lambda: net.load_state_dict(net.state_dict())), 'Missing key(s) in state_dict: "1.bias"'))

    run_both(program)


def test_module_attribute_assignment_errors():
    # TestNN.test_register_buffer_raises_error_if_not_tensor / test_buffer_bad_module_subclass
    def program(T, log):
        m = lin(T)
        m.register_buffer("buf", T.zeros(3))
        m.sub = T.nn.ReLU()
        log("buffer <- int", gist(err(lambda: setattr(m, "buf", 3)),
                                  "cannot assign 'int' as buffer 'buf' (torch.nn.Buffer, torch.Tensor or None expected)"))
        log("parameter <- tensor", gist(err(lambda: setattr(m, "weight", T.zeros(3, 3))),
                                        "cannot assign 'torch.FloatTensor' as parameter 'weight'"))
        log("module <- int", gist(err(lambda: setattr(m, "sub", 3)), "cannot assign 'int' as child module 'sub'"))
        m.buf = None
        m.weight = None
        m.buf2 = T.nn.Buffer(T.ones(1), persistent=False)
        log("after None / Buffer", (sorted(m.state_dict()), [n for n, _ in m.named_buffers()]))
        log("register_buffer errors", [err(lambda: m.register_buffer("x", 3)) is not None,
                                       gist(err(lambda: m.register_buffer("a.b", T.ones(1))), "can't contain \".\""),
                                       gist(err(lambda: m.register_buffer("bias", T.ones(1))), "attribute 'bias' already exists")])

    run_both(program)


def test_parametrization_api():
    # test/nn/test_parametrization.py: test_register_and_remove_parametrization,
    # test_initialization_parametrization, test_caching_parametrization,
    # test_multiple_inputs_parametrization, test_register_and_remove_buffer_parametrization,
    # test_serialization_parametrization, test_errors_unparametrized_tensor_parametrization,
    # test_transfer_parametrizations_and_params
    def program(T, log):
        P = T.nn.utils.parametrize

        class Symmetric(T.nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(-1, -2)

        class Double(T.nn.Module):
            def forward(self, x):
                return 2 * x

            def right_inverse(self, x):
                return x / 2

        class Split(T.nn.Module):
            def forward(self, a, b):
                return a + b

            def right_inverse(self, w):
                return w, T.zeros_like(w)

        m = lin(T)
        log("remove unparametrized", gist(err(lambda: P.remove_parametrizations(m, "weight")), "does not have a parametrization"))
        P.register_parametrization(m, "weight", Symmetric())
        log("registered", [P.is_parametrized(m), P.is_parametrized(m, "bias"), type(m).__name__,
                           P.type_before_parametrizations(m).__name__, sorted(n for n, _ in m.named_parameters()),
                           list(m.state_dict()), m.weight])
        sd = m.state_dict()
        m2 = lin(T)
        P.register_parametrization(m2, "weight", Symmetric())
        with T.no_grad():
            m2.parametrizations.weight.original.zero_()
        m2.load_state_dict(sd)
        log("state_dict round trip", m2.weight)
        log("plain module refuses it", gist(err(lambda: lin(T).load_state_dict(sd)), "Missing key(s)", '"weight"'))
        m3 = copy.deepcopy(m)
        log("deepcopy", [type(m3).__name__, m3.weight])
        log("transfer", P.transfer_parametrizations_and_params(m, lin(T)).weight)
        P.remove_parametrizations(m, "weight", leave_parametrized=True)
        log("removed, kept value", [P.is_parametrized(m), type(m).__name__, m.weight])

        d = lin(T)
        P.register_parametrization(d, "weight", Double())
        P.register_parametrization(d, "weight", Double())
        with T.no_grad():
            d.weight = T.ones(3, 3)          # right_inverse of both, newest first
        log("stacked right_inverse", [len(d.parametrizations.weight), d.parametrizations.weight.original, d.weight])
        P.remove_parametrizations(d, "weight", leave_parametrized=False)
        log("removed, original kept", d.weight)

        calls = []

        class Count(T.nn.Module):
            def forward(self, x):
                calls.append(1)
                return x

        c = lin(T)
        P.register_parametrization(c, "bias", Count())
        x = T.ones(2, 3)
        c(x), c(x)
        n = len(calls)
        with P.cached():
            c(x), c(x), c.bias
        log("cached", (n, len(calls) - n))

        s = lin(T)
        P.register_parametrization(s, "weight", Split())
        s.weight.sum().backward()
        log("two originals", [sorted(n for n, _ in s.named_parameters()), s.parametrizations.weight.original0.grad,
                              s.parametrizations.weight.original1.grad])

        b = lin(T)
        b.register_buffer("buf", T.ones(3))
        P.register_parametrization(b, "buf", Double())
        log("buffer", [b.buf, sorted(n for n, _ in b.named_buffers()), sorted(n for n, _ in b.named_parameters())])

        bad = lin(T)
        log("no right_inverse", err(lambda: P.register_parametrization(bad, "weight", Count()) or setattr(bad, "weight", T.ones(3, 3))) is not None)
        log("missing tensor", err(lambda: P.register_parametrization(lin(T), "nope", T.nn.Identity())) is not None)

    run_both(program)


def test_init_error_inputs():
    # test/nn/test_init.py: TestNNInit.test_trunc_normal (an empty [a, b] range),
    # test_calculate_gain_*, test_xavier_*_errors_on_inputs_smaller_than_2d, test_dirac_*
    def program(T, log):
        I = T.nn.init
        cases = {
            "trunc_normal_ a > b": lambda: I.trunc_normal_(T.ones(3), a=2, b=-2),
            "xavier on 1-d": lambda: I.xavier_uniform_(T.ones(3)),
            "kaiming mode": lambda: I.kaiming_normal_(T.ones(3, 3), mode="x"),
            "orthogonal on 1-d": lambda: I.orthogonal_(T.ones(3)),
            "sparse on 3-d": lambda: I.sparse_(T.ones(3, 3, 3), 0.1),
            "eye on 3-d": lambda: I.eye_(T.ones(3, 3, 3)),
            "dirac on 2-d": lambda: I.dirac_(T.ones(3, 3)),
            "dirac groups": lambda: I.dirac_(T.ones(3, 3, 3), groups=2),
            "gain name": lambda: I.calculate_gain("x"),
            "gain param": lambda: I.calculate_gain("leaky_relu", "a"),
            "gain bool param": lambda: I.calculate_gain("leaky_relu", True),
        }
        log("errors", {k: (err(f) or "").split(";")[0] for k, f in cases.items()})
        log("gains", [I.calculate_gain(n) for n in ("tanh", "selu", "relu", "sigmoid")] +
            [I.calculate_gain("leaky_relu", 0.2), I.calculate_gain("leaky_relu", 1), I.calculate_gain("leaky_relu")])
        log("fan in/out", [I._calculate_fan_in_and_fan_out(T.ones(3, 4, 5)), I.trunc_normal_(T.ones(3), a=1, b=1)])

    run_both(program)
