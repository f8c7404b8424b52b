"""nn.Module API parity: registration, traversal names/order, state_dict, load_state_dict
errors, repr, train/eval, to/double, zero_grad, apply, attribute errors."""
import copy
from collections import OrderedDict

import pytest

import tracegrad
from parity import both, get_torch


def _net(mod):
    nn = mod.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.bn = nn.BatchNorm1d(3)
            self.register_buffer("stat", mod.zeros(2))
            self.register_buffer("tmp", mod.ones(1), persistent=False)
            self.scale = nn.Parameter(mod.ones(1))

        def forward(self, x):
            return self.bn(self.fc(x)) * self.scale

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Block()
            self.b = Block()
            self.shared = self.a.fc
            self.head = nn.Sequential(nn.ReLU(), nn.Linear(3, 2, bias=False))
            self.none_mod = None

        def forward(self, x):
            return self.head(self.b(self.a(x)))
    return Net()


def test_named_members_names_and_order():
    def program(mod, log):
        n = _net(mod)
        log.append([k for k, _ in n.named_parameters()])
        log.append([k for k, _ in n.named_parameters(remove_duplicate=False)])
        log.append([k for k, _ in n.named_parameters(prefix="model", recurse=True)])
        log.append([k for k, _ in n.a.named_parameters(recurse=False)])
        log.append([k for k, _ in n.named_buffers()])
        log.append([k for k, _ in n.named_children()])
        log.append([k for k, _ in n.named_modules()])
        log.append([k for k, _ in n.named_modules(remove_duplicate=False)])
        log.append([type(m).__name__ for m in n.modules()])
        log.append(len(list(n.parameters())))
        log.append(list(n.state_dict().keys()))
        log.append([type(v).__name__ for v in n.state_dict().values()][:1])
    both(program)


def test_repr_parity():
    torch = get_torch()

    def build(nn):
        return nn.Sequential(OrderedDict([
            ("conv", nn.Conv2d(1, 4, 3, stride=2, padding=1, bias=False)), ("bn", nn.BatchNorm2d(4)),
            ("act", nn.LeakyReLU(0.2, inplace=True)), ("pool", nn.MaxPool2d(2)), ("avg", nn.AvgPool2d(2)),
            ("ad", nn.AdaptiveAvgPool2d((1, 1))), ("flat", nn.Flatten()), ("drop", nn.Dropout(0.1)),
            ("fc", nn.Linear(4, 3)), ("ln", nn.LayerNorm(3)), ("gn", nn.GroupNorm(1, 3)), ("gelu", nn.GELU()),
            ("sm", nn.Softmax(dim=1)), ("lsm", nn.LogSoftmax(dim=1)), ("emb", nn.Embedding(5, 2, padding_idx=0)),
            ("ml", nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU()])),
            ("md", nn.ModuleDict({"x": nn.Tanh(), "y": nn.Sigmoid()})),
            ("ct", nn.ConvTranspose2d(2, 3, 3, stride=2, output_padding=1)), ("c1", nn.Conv1d(2, 3, 3, dilation=2)),
            ("loss", nn.CrossEntropyLoss()), ("bil", nn.Bilinear(2, 3, 4)), ("id", nn.Identity()),
            ("unf", nn.Unflatten(1, (2, 2))), ("bn1", nn.BatchNorm1d(3, momentum=None, affine=False)),
        ]))
    assert repr(build(tracegrad.nn)) == repr(build(torch.nn))


def test_repr_blank_extra_repr_lines_stay_empty_when_indented():
    """An ``extra_repr`` with blank lines (or ending in a newline, as MAML-Pytorch's Learner
    builds it) nested in another module: torch indents only the non-blank lines."""
    torch = get_torch()
    reprs = []
    for mod in (torch, tracegrad):
        class Learner(mod.nn.Module):
            def extra_repr(self):
                return "conv2d:(ch_in:1)\n\nrelu:(True,)\n"

        class Meta(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = Learner()
                self.seq = mod.nn.Sequential(Learner())
        reprs.append(repr(Meta()))
    assert reprs[1] == reprs[0]
    assert "\n\n" in reprs[1] and "\n    \n" not in reprs[1]


def test_parameter_repr_and_type():
    torch = get_torch()
    for mod in (torch, tracegrad):
        p = mod.nn.Parameter(mod.tensor([1.0, 2.0]))
        assert p.requires_grad and p.is_leaf
        assert isinstance(p, mod.Tensor)
        assert type(p * 2) is mod.Tensor
    a = repr(tracegrad.nn.Parameter(tracegrad.tensor([1.0, 2.0])))
    b = repr(torch.nn.Parameter(torch.tensor([1.0, 2.0])))
    assert a == b


def test_state_dict_round_trip_and_strict_errors():
    def program(mod, log):
        n1, n2 = _net(mod), _net(mod)
        sd = n1.state_dict()
        r = n2.load_state_dict(sd)
        log.append(repr(r))
        log.append(all(bool((a == b).all()) for a, b in zip(n1.state_dict().values(), n2.state_dict().values())))
        bad = OrderedDict(sd)
        del bad["a.fc.bias"]
        bad["extra.weight"] = mod.zeros(1)
        try:
            n2.load_state_dict(bad)
        except RuntimeError as e:
            log.append(str(e).split("\n\t")[:3])
        r = n2.load_state_dict(bad, strict=False)
        log.append((r.missing_keys, r.unexpected_keys))
        wrong = OrderedDict(sd)
        wrong["head.1.weight"] = mod.zeros(5, 5)
        try:
            n2.load_state_dict(wrong)
        except RuntimeError as e:
            log.append(str(e).split("size mismatch for ")[1].split(":")[0])
    both(program)


def test_load_state_dict_is_atomic():
    n1, n2 = _net(tracegrad), _net(tracegrad)
    before = {k: v.clone() for k, v in n2.state_dict().items()}
    sd = n1.state_dict()
    sd["head.1.weight"] = tracegrad.zeros(9, 9)
    with pytest.raises(RuntimeError, match="size mismatch"):
        n2.load_state_dict(sd)
    for k, v in n2.state_dict().items():
        assert bool((v == before[k]).all()), k


def test_modes_zero_grad_apply_to():
    def program(mod, log):
        n = _net(mod)
        n.eval()
        log.append([m.training for m in n.modules()])
        n.train()
        log.append(n.a.bn.training)
        x = mod.ones(4, 3)
        n(x).sum().backward()
        log.append([p.grad is None for p in n.parameters()])
        n.zero_grad(set_to_none=False)
        log.append([float(p.grad.abs().sum()) for p in n.parameters()])
        n.zero_grad()
        log.append([p.grad is None for p in n.parameters()])
        seen = []
        n.apply(lambda m: seen.append(type(m).__name__))
        log.append(seen)
        w = n.a.fc.weight
        n.double()
        log.append((n.a.fc.weight is w, str(w.dtype).split(".")[1], str(n.a.bn.num_batches_tracked.dtype).split(".")[1],
                    str(n.a.stat.dtype).split(".")[1]))
        n.to(mod.float32)
        log.append(str(w.dtype).split(".")[1])
        try:
            n.to(mod.int64)
        except TypeError:
            log.append("TypeError")
        n.requires_grad_(False)
        log.append([p.requires_grad for p in n.parameters()])
        try:
            n.train("yes")
        except ValueError:
            log.append("ValueError")
    both(program)


def test_attribute_registration_rules():
    def program(mod, log):
        nn = mod.nn
        m = nn.Module()
        m.w = nn.Parameter(mod.ones(1))
        m.sub = nn.Linear(1, 1)
        m.register_buffer("buf", mod.zeros(1))
        m.plain = 3
        log.append((list(m._parameters), list(m._modules), list(m._buffers)))
        for action in [lambda: setattr(m, "w", mod.ones(1)), lambda: setattr(m, "sub", 3),
                       lambda: setattr(m, "buf", 3), lambda: m.register_buffer("a.b", None),
                       lambda: m.register_buffer("plain", None), lambda: m.register_parameter("p", mod.ones(1)),
                       lambda: m.add_module("x", 3), lambda: m.missing,
                       lambda: m.register_parameter("q", nn.Parameter(mod.ones(1)) * 2),
                       lambda: m.get_submodule("sub.nope"), lambda: m.get_parameter("sub.nope"),
                       lambda: m.get_parameter("buf")]:
            try:
                action()
                log.append("ok")
            except Exception as e:  # noqa: BLE001
                log.append(type(e).__name__)
        m.w = None
        log.append(("w" in m._parameters, m.w))
        m.buf = mod.ones(2)
        log.append(tuple(m.buf.shape))
        m.sub = nn.Tanh()
        del m.sub
        del m.buf
        del m.w
        log.append((list(m._parameters), list(m._modules), list(m._buffers)))
        m.x = nn.Linear(2, 2)
        log.append((m.get_submodule("x") is m.x, m.get_parameter("x.bias") is m.x.bias))
        m.x = nn.Parameter(mod.ones(1))   # a Parameter replaces a module of that name
        log.append((list(m._parameters), list(m._modules)))
    both(program)


def test_deepcopy_and_not_implemented_forward():
    n = _net(tracegrad)
    c = copy.deepcopy(n)
    assert c.a.fc.weight is not n.a.fc.weight
    assert c.shared is c.a.fc
    assert bool((c.a.fc.weight == n.a.fc.weight).all())
    with pytest.raises(NotImplementedError):
        tracegrad.nn.Module()(1)


def test_sequential_ordereddict_modulelist_moduledict():
    def program(mod, log):
        nn = mod.nn
        ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
        ml.append(nn.ReLU())
        ml.extend([nn.Tanh()])
        ml.insert(1, nn.Sigmoid())
        log.append([type(m).__name__ for m in ml])
        log.append(type(ml[1:3]).__name__)
        del ml[0]
        log.append([k for k, _ in ml.named_children()])
        md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
        md["c"] = nn.Identity()
        log.append((list(md.keys()), "a" in md, len(md)))
        md.pop("b")
        log.append(list(md))
        pl = nn.ParameterList([nn.Parameter(mod.ones(2)), mod.zeros(3)])
        log.append([(k, tuple(p.shape), type(p).__name__) for k, p in pl.named_parameters()])
        pd = nn.ParameterDict({"x": nn.Parameter(mod.ones(1))})
        log.append([k for k, _ in pd.named_parameters()])
    both(program)


def test_buffer_assignment_semantics():
    # a registered Buffer keeps its mark (``self.b2 = self.b1`` registers a second buffer);
    # assigning a Buffer over a plain attribute is a KeyError; a subclass's register_buffer
    # without ``persistent`` is called with two arguments (RuntimeError for a non-persistent one)
    def program(mod, log):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.b1 = nn.Buffer(mod.zeros(2))
                self.b2 = self.b1

        m = M()
        log.append([k for k, _ in m.named_buffers(remove_duplicate=False)])
        log.append(list(m.state_dict().keys()))
        p = nn.Module()
        p.attr = 5
        try:
            p.attr = nn.Buffer(mod.zeros(2))
        except KeyError as e:
            log.append(("KeyError", str(e)))
        log.append(p.attr)

        class Old(nn.Linear):
            def __init__(self):
                super().__init__(2, 2)
                self.bar = nn.Buffer(mod.ones(2))

            def register_buffer(self, name, value):
                super().register_buffer(name, value, True)

        o = Old()
        log.append([k for k, _ in o.named_buffers()])
        # Buffer(...) is a marked plain tensor, registered as that very object
        buf = nn.Buffer(mod.ones(2, requires_grad=True))
        log.append((type(buf).__name__, isinstance(buf, nn.Buffer), isinstance(mod.ones(1), nn.Buffer),
                    buf.requires_grad))
        q = nn.Module()
        q.b = buf
        log.append(q.b is buf)
        q.register_buffer("c", nn.Buffer(mod.ones(1), persistent=False))   # the argument decides
        log.append(list(q.state_dict().keys()))
        try:
            o.baz = nn.Buffer(mod.ones(2), persistent=False)
        except RuntimeError as e:
            log.append(("RuntimeError", "without the persistent" in str(e)))
    both(program)


def test_call_super_init_passes_arguments_on():
    def program(mod, log):
        nn = mod.nn

        class Mixin:
            def __init__(self, *a, **kw):
                super().__init__(*a, **kw)
                self.mixin_init = True

        class After(nn.Module, Mixin):
            pass

        log.append(hasattr(After(), "mixin_init"))
        After.call_super_init = True
        log.append(hasattr(After(), "mixin_init"))
        try:
            nn.Module(1)
        except TypeError:
            log.append("TypeError")
    both(program)


def test_source_change_warning_is_a_warning():
    torch = get_torch()
    assert issubclass(torch.serialization.SourceChangeWarning, Warning)
    assert issubclass(tracegrad.serialization.SourceChangeWarning, Warning)


def test_replicate_for_data_parallel():
    # the replica has no own parameters; views of the originals set on it carry gradients back
    def program(mod, log):
        nn = mod.nn
        mod.manual_seed(0)
        pl = nn.ParameterList([nn.Parameter(mod.ones(2) * 2), nn.Parameter(mod.ones(2) * 3)])
        lin = nn.Sequential(nn.Linear(2, 2))
        for m in (pl, lin):
            r = m._replicate_for_data_parallel()
            log.append((type(r).__name__, r._is_replica, len(list(r.parameters(recurse=False))),
                        [k for k, _ in r.named_children()]))
        r = pl._replicate_for_data_parallel()
        for n, p in pl.named_parameters():
            setattr(r, n, p.view_as(p))
        log.append([(q._base is p, q.grad_fn is not None) for p, q in zip(pl, r)])
        sum(q.sum() * (i + 1) for i, q in enumerate(r)).backward()
        log.append([p.grad.tolist() for p in pl])
    both(program)


def test_data_parallel_without_a_gpu():
    # torch's DataParallel on a machine without an accelerator keeps the module and no device
    # ids (even ones passed: BERT-pytorch's ``DataParallel(model, device_ids=cuda_devices)``) and
    # returns from ``__init__`` before setting ``output_device``/``dim``
    if tracegrad.cuda.is_available() or get_torch().cuda.is_available():
        pytest.skip("the CPU behaviour: torch and tracegrad both without a GPU")

    def program(mod, log):
        nn = mod.nn
        lin = nn.Linear(2, 3)
        for kw in ({}, {"device_ids": [0]}, {"device_ids": [0, 1], "output_device": 1, "dim": 1}):
            dp = nn.DataParallel(lin, **kw)
            log.append((dp.device_ids, hasattr(dp, "output_device"), hasattr(dp, "dim"), dp.module is lin,
                        list(dp.state_dict()), tuple(dp(mod.ones(4, 2)).shape)))
    both(program)
