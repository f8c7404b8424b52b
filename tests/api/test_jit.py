"""``tracegrad.jit``: scripted and traced functions and modules compute what torch's do (the
objects come back unchanged), the decorators leave functions callable, and TorchScript
archives are refused with a RuntimeError that names the alternative."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _program(mod):
    @mod.jit.script
    def fused_gelu(x):
        return x * 0.5 * (1.0 + mod.erf(x / 1.41421))

    class Net(mod.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = mod.nn.Linear(3, 2)

        def forward(self, x):
            return fused_gelu(self.lin(x)) + self.helper(x)

        @mod.jit.ignore
        def helper(self, x):
            return x.sum(1, keepdim=True)

        @mod.jit.unused
        def debug(self):
            return 1

        @mod.jit.export
        def scale(self):
            return 2.0

    mod.manual_seed(0)
    net = Net()
    with mod.no_grad():
        for i, p in enumerate(net.parameters()):
            p.copy_(mod.tensor(np.linspace(-1, 1, p.numel()).reshape(p.shape).astype("float32") * (i + 1)))
    x = mod.tensor(np.arange(6, dtype="float32").reshape(2, 3) / 4, requires_grad=True)
    scripted = mod.jit.script(net)
    traced = mod.jit.trace(net, (x.detach(),))
    out = scripted(x) + traced(x) * scripted.scale()
    out.sum().backward()
    return out.detach().numpy(), x.grad.numpy(), mod.jit.is_scripting(), mod.jit.is_tracing(), \
        mod.jit.annotate(list, [1]), mod.jit.wait(mod.jit.fork(lambda a: a + 1, 2))


def test_script_and_trace_compute_as_torch():
    a, b = _program(torch), _program(tracegrad)
    np.testing.assert_allclose(b[0], a[0], rtol=1e-5)
    np.testing.assert_allclose(b[1], a[1], rtol=1e-5)
    assert a[2:] == b[2:] == (False, False, [1], 3)


def test_ignore_with_drop_keyword_and_final():
    @tracegrad.jit.ignore(drop=True)
    def f(x):
        return x + 1
    assert f(1) == 2
    assert tracegrad.jit.Final is not None


def test_torchscript_archives_are_refused(tmp_path):
    m = tracegrad.jit.script(tracegrad.nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="tracegrad.save"):
        tracegrad.jit.save(m, tmp_path / "m.pt")
    with pytest.raises(ValueError, match="does not exist"):       # torch checks the path first
        tracegrad.jit.load(tmp_path / "m.pt")
    (tmp_path / "m.pt").write_bytes(b"PK\x03\x04")
    with pytest.raises(RuntimeError, match="tracegrad.load"):
        tracegrad.jit.load(tmp_path / "m.pt")


def _script_module_program(mod):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        class Head(mod.jit.ScriptModule):
            def __init__(self):
                super().__init__()
                self.fc = mod.nn.Linear(3, 2)

            @mod.jit.script_method
            def forward(self, x):
                return self.fc(x).clamp(min=0.0)   # no closure names: torch compiles this

    head = Head()
    with mod.no_grad():
        head.fc.weight.copy_(mod.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 10 - 0.2))
        head.fc.bias.fill_(0.1)
    out = head(mod.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)))
    return (out.detach().numpy(), isinstance(head, mod.nn.Module), [n for n, _ in head.named_parameters()],
            sorted({w.category.__name__ for w in caught}))


def test_script_module_subclass_is_a_module():
    """Old TorchScript code subclasses ``jit.ScriptModule`` with ``@jit.script_method``
    forwards (PlaNet): an ``nn.Module`` whose parameters register and train; script_method warns
    its deprecation as torch does."""
    got, want = _script_module_program(tracegrad), _script_module_program(torch)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert got[1:] == want[1:]


def _lazy_programs(mod):
    class Lazy(mod.nn.modules.lazy.LazyModuleMixin, mod.nn.Module):
        pass

    class Outer(mod.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = mod.nn.LazyLinear(3)

        def forward(self, x):
            return self.inner(x)

    with_param, with_buffer = Lazy(), Lazy()
    with_param.register_parameter("p", mod.nn.parameter.UninitializedParameter())
    with_buffer.register_buffer("b", mod.nn.parameter.UninitializedBuffer())
    return with_param, with_buffer, Outer()


def test_script_refuses_uninitialized_lazy_modules():
    # torch checks each module it scripts (the root and every submodule) for lazy parameters or
    # buffers and raises RuntimeError asking for a forward pass first
    msgs = []
    for mod in (torch, tracegrad):
        out = []
        for m in _lazy_programs(mod):
            with pytest.raises(RuntimeError, match="Did you forget to run a forward pass") as e:
                mod.jit.script(m)
            out.append(str(e.value).split("'", 2)[2])      # the message without the class's module path
        msgs.append(out)
    assert msgs[0] == msgs[1]
