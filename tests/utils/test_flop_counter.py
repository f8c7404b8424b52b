"""``tracegrad.utils.flop_counter.FlopCounterMode`` against torch's: the same programs counted
under both, the per-module, per-kernel counts equal (matrix products folded or batched as torch
decides, einsum's contraction order, convolutions forward and backward, module attribution of
backward ops), plus custom formulas, the table, compiled functions and a profiler around it."""
import numpy as np
import pytest

import tracegrad
from tracegrad.utils.flop_counter import FlopCounterMode, register_flop_formula

torch = pytest.importorskip("torch")
from torch.utils.flop_counter import FlopCounterMode as TorchFlopCounterMode  # noqa: E402


class _Net:
    """A module class for either library: fc1 (bias) -> relu -> seq[0] (no bias)."""

    @staticmethod
    def make(mod):
        nn = mod.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.act, self.seq = nn.Linear(8, 16), nn.ReLU(), nn.Sequential(nn.Linear(16, 4, bias=False))

            def forward(self, x):
                return self.seq(self.act(self.fc1(x)))
        return Net()


def _programs(mod):
    nn, F = mod.nn, mod.nn.functional
    rng = np.random.default_rng(0)

    def r(*shape, rg=True):
        return mod.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=rg)

    return {
        "mlp forward": lambda: _Net.make(mod)(r(5, 8, rg=False)),
        "mlp forward+backward": lambda: _Net.make(mod)(r(5, 8, rg=False)).sum().backward(),
        "mlp on 3-d input": lambda: _Net.make(mod)(r(2, 5, 8)).sum().backward(),
        "bmm": lambda: (r(3, 4, 5) @ r(3, 5, 6)).sum().backward(),
        "3d@2d": lambda: (r(3, 4, 5) @ r(5, 6)).sum().backward(),
        "2d@3d": lambda: (r(4, 5) @ r(3, 5, 6)).sum().backward(),
        "2d@3d first without grad": lambda: (r(4, 5, rg=False) @ r(3, 5, 6)).sum().backward(),
        "1d@3d first without grad": lambda: (r(5, rg=False) @ r(3, 5, 6)).sum().backward(),
        "1d@3d": lambda: (r(5) @ r(3, 5, 6)).sum().backward(),
        "3d@1d": lambda: (r(3, 4, 5) @ r(5)).sum().backward(),
        "1d@2d": lambda: (r(5) @ r(5, 6)).sum().backward(),
        "mv and dot": lambda: ((r(4, 5) @ r(5)) @ r(4)).backward(),
        "broadcast 4d@4d": lambda: (r(2, 1, 4, 5) @ r(1, 3, 5, 6)).sum().backward(),
        "4d@2d": lambda: (r(2, 3, 4, 5) @ r(5, 6)).sum().backward(),
        "transposed 3d@2d": lambda: (r(3, 5, 4).transpose(1, 2) @ r(5, 6, rg=False)).sum().backward(),
        "mm, one side needs grad": lambda: mod.mm(r(3, 4), r(4, 5, rg=False)).sum().backward(),
        "einsum batched": lambda: mod.einsum("bij,bjk->bik", r(3, 4, 5), r(3, 5, 6)).sum().backward(),
        "einsum three operands": lambda: mod.einsum("ij,jk,kl->il", r(2, 3), r(3, 4), r(4, 5)).sum().backward(),
        "einsum three, first needs grad": lambda: mod.einsum("ij,jk,kl->il", r(2, 3), r(3, 4, rg=False),
                                                             r(4, 5, rg=False)).sum().backward(),
        "einsum summed label": lambda: mod.einsum("ij,jk->i", r(2, 3), r(3, 4)).sum().backward(),
        "einsum without contraction": lambda: (mod.einsum("ij,ij->ij", r(2, 3), r(2, 3)).sum()
                                               + mod.einsum("i,j->ij", r(2), r(3)).sum()).backward(),
        "einsum ellipsis": lambda: mod.einsum("...ij,...jk->...ik", r(2, 3, 4), r(2, 4, 5)).sum().backward(),
        "einsum implicit output": lambda: mod.einsum("ij,jk", r(2, 3), r(3, 4)).sum().backward(),
        "linear, bias needs grad": lambda: F.linear(r(4, 3, rg=False), r(5, 3, rg=False), r(5)).sum().backward(),
        "conv2d": lambda: nn.Conv2d(3, 4, 3, padding=1)(r(2, 3, 8, 8, rg=False)).sum().backward(),
        "conv2d input needs grad": lambda: nn.Conv2d(3, 4, 3, padding=1)(r(2, 3, 8, 8)).sum().backward(),
        "conv transpose": lambda: nn.ConvTranspose2d(3, 4, 3, stride=2)(r(2, 3, 8, 8)).sum().backward(),
        "conv groups": lambda: nn.Conv2d(4, 8, 3, groups=2)(r(1, 4, 6, 6)).sum().backward(),
        "conv1d strided": lambda: F.conv1d(r(2, 3, 10), r(4, 3, 3), stride=2, padding=1).sum().backward(),
        "conv transpose groups": lambda: F.conv_transpose2d(r(1, 4, 5, 5), r(4, 3, 3, 3), stride=2,
                                                            groups=2).sum().backward(),
        "conv3d dilated": lambda: F.conv3d(r(1, 2, 6, 6, 6), r(2, 2, 2, 2, 2), dilation=2).sum().backward(),
        "elementwise only": lambda: (r(3, 3) * 2).tanh().sum().backward(),
        "under no_grad": lambda: _no_grad(mod, lambda: _Net.make(mod)(r(5, 8))),
    }


def _no_grad(mod, fn):
    with mod.no_grad():
        return fn()


def _counts(mod, counter_cls, fn):
    mod.manual_seed(0)
    with counter_cls(display=False) as fc:
        fn()
    return fc.get_total_flops(), {name: {str(k).replace("aten.", ""): v for k, v in d.items()}
                                  for name, d in fc.get_flop_counts().items() if d}


@pytest.mark.parametrize("name", sorted(_programs(tracegrad)))
def test_counts_equal_torch(name):
    t_total, t_counts = _counts(torch, TorchFlopCounterMode, _programs(torch)[name])
    g_total, g_counts = _counts(tracegrad, FlopCounterMode, _programs(tracegrad)[name])
    assert g_counts == t_counts
    assert g_total == t_total


def test_keys_are_the_ops_namespace():
    x = tracegrad.randn(4, 5, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        (x @ tracegrad.randn(5, 6)).sum().backward()
    assert fc.get_flop_counts()["Global"][tracegrad.ops.aten.mm] == 2 * (2 * 4 * 5 * 6)
    assert fc.get_total_flops() == 480


def test_counts_reset_on_enter_and_outside_not_counted():
    fc = FlopCounterMode(display=False)
    a = tracegrad.randn(3, 3)
    with fc:
        a @ a
    assert fc.get_total_flops() == 54
    a @ a
    with fc:
        pass
    assert fc.get_total_flops() == 0


def test_table_and_display(capsys):
    net = _Net.make(tracegrad)
    with FlopCounterMode(depth=1) as fc:
        net(tracegrad.randn(5, 8)).sum().backward()
    printed = capsys.readouterr().out
    assert printed.strip() == fc.get_table(1).strip()
    lines = printed.strip().splitlines()
    assert lines[0].split() == ["Module", "FLOP", "%", "Total"]
    rows = {line.split()[0] if not line.strip().startswith("-") else line.split()[1]: line.split()
            for line in lines[2:]}
    # forward 1920 (addmm 1280, mm 640) + backward 2560 (fc1's weight, seq[0]'s weight and input:
    # mm 1280 each); torch's suffix for 4 digits is none
    assert rows["Net"][1:] == ["4480.000", "100.00%"]
    assert rows["aten.mm"][2:] == ["3200.000", "71.43%"]
    assert rows["aten.addmm"][2:] == ["1280.000", "28.57%"]
    assert "Net.fc1" not in printed                     # depth 1
    assert "Net.fc1" in fc.get_table(2)


def test_custom_formula_and_register():
    @tracegrad.library.custom_op("fcmode::twice", mutates_args=())
    def twice(x: tracegrad.Tensor) -> tracegrad.Tensor:
        return x * 2
    seen = []

    def formula(x_shape, out_shape=None):
        seen.append((x_shape, out_shape))
        return 7
    with FlopCounterMode(display=False, custom_mapping={tracegrad.ops.fcmode.twice: formula}) as fc:
        twice(tracegrad.ones(2, 3))
        twice(tracegrad.ones(4, requires_grad=True))     # through its autograd Function too
    assert fc.get_total_flops() == 14 and seen == [((2, 3), (2, 3)), ((4,), (4,))]
    with FlopCounterMode(display=False) as fc:           # no formula: not counted
        twice(tracegrad.ones(2, 3))
    assert fc.get_total_flops() == 0


def test_register_flop_formula_refuses_duplicates():
    from tracegrad.utils import flop_counter
    name = "fcmode_dup_test"
    try:
        register_flop_formula(tracegrad.library.AtenOp(name, None))(lambda *a, **k: 1)
        with pytest.raises(RuntimeError, match="duplicate"):
            register_flop_formula(tracegrad.library.AtenOp(name, None))(lambda *a, **k: 1)
    finally:
        flop_counter.flop_registry.pop(name, None)


def test_compiled_function_counts_as_eager():
    net = _Net.make(tracegrad)
    step = tracegrad.compile(lambda x: net(x).sum())
    x = tracegrad.randn(5, 8)
    for _ in range(3):
        step(x)            # compiled
    with FlopCounterMode(display=False) as fc:
        out = step(x)
    assert fc.get_total_flops() == 1920
    np.testing.assert_allclose(out.item(), net(x).sum().item(), rtol=1e-6)


def test_mode_entered_inside_a_compiled_function_counts_every_call():
    a = tracegrad.randn(4, 4)
    totals = []

    @tracegrad.compile
    def f(x):
        with FlopCounterMode(display=False) as fc:
            y = x @ x
        totals.append(fc.get_total_flops())
        return y
    for _ in range(4):
        np.testing.assert_allclose(f(a).numpy(), (a @ a).numpy(), rtol=1e-6)
    assert totals == [128] * 4
    assert any("FlopCounterMode" in reason for reason, _ in f.stats["graph_breaks"])


def test_profiler_inside_and_outside_keeps_recording():
    a = tracegrad.randn(4, 4, requires_grad=True)
    with tracegrad.profiler.profile() as prof:
        with FlopCounterMode(display=False) as fc:
            (a @ a).sum().backward()
        a @ a
    names = [e.name for e in prof.events()]
    assert names.count("aten::mm") + names.count("aten::matmul") >= 2
    assert fc.get_total_flops() == 3 * 128
    with FlopCounterMode(display=False) as fc2:
        with tracegrad.profiler.profile() as prof2:
            (a @ a).sum().backward()
        a @ a
    assert fc2.get_total_flops() == 4 * 128
    assert any("mm" in e.name or "matmul" in e.name for e in prof2.events())
