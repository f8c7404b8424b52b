"""Round-25 ports of PyTorch's torch.compile tests as compiled-vs-eager checks, from the
pytorch/pytorch repository's test/dynamo/test_modules.py: the NNModuleTests and
OptimizedModuleTest cases earlier rounds did not take -- a compiled module's type, ``dir`` and
attribute writes (``compiled.x = ...`` reaching the module), submodules compiled one by one
inside an eager parent (no recompiles, shapes changing), a new module per call, ModuleDict
iterated by keys and values, a ``training`` flag written inside the compiled function, a
buffer reassigned by ``.to(x)`` in forward (dtype changing between calls, a ``__setattr__``
override), a parameter that is also an argument, plain tensor attributes and buffers replaced
between calls, an int attribute changed after many calls, globals of another module written by
the compiled function, a compiled module pickled and loaded, ``forward`` monkeypatched, Conv2d
subclasses with different strides, an overridden ``__call__``, ``requires_grad`` of parameters
flipped between training steps, a conv's ``forward``/``_conv_forward`` called directly (no
hooks), lazy modules (keyword arguments, a module that never becomes another class, a
LazyLinear behind a graph break), a forward hook removed after the first compiled calls.

Each program runs under torch eager, tracegrad eager and ``tracegrad.compile`` on several calls
with fresh inputs (``_dynamo_port.compare``): outputs, the inputs' and parameters' grads after
``backward`` and the module state the program changes must agree on every call. Each test names
the torch test it ports (``test_modules.py::NNModuleTests::<name>``); the programs are written
here in their own code, at tiny shapes, and keep the construct the torch test checks. Adapted:
torch's tests count frames, read graph placeholders' metadata or export graphs; here only what
a user observes is compared, plus the number of programs traced where the original's point is
"no recompile" (checked loosely: at most what torch builds).

Fixed here (nn/modules/module.py ``OptimizedModule``, ``Module.__getstate__``): ``dir()`` of a
compiled module listed only the wrapper's names (torch's adds the original module's: test_dir);
``torch.save`` of a compiled module failed to pickle its compiled call (torch pickles the
original module and how it was compiled, and compiles again on load:
test_save_and_load_all_backends); a module compiled in place by ``Module.compile()`` pickled
and deep-copied its compiled call, where torch drops it (the copy runs eagerly).
Calls that run eagerly (correct, not compiled; torch compiles them): the module's buffer also
passed as an argument (test_mark_static_previously_seen_tensor), a ``torch._dynamo.disable``d
callee (test_module_forward_has_graph_break). An int argument alternating between values traces
one program per value (torch makes it dynamic): test_guard_on_torch_nn_modules allows that.
"""
import copy
import io
import types

import pytest

import tracegrad
from ._dynamo_port import compare, rand, same
from ._harness import np_init

torch = pytest.importorskip("torch")

W = 4


def _stats(f):
    """The compile stats of a compiled function or module."""
    return f.__dict__["_compiled_call"].stats if isinstance(f, tracegrad.nn.Module) else f.stats


def _grads(m):
    return {n: p.grad for n, p in m.named_parameters()}


def _train_run(T, wrap, m, calls_between=None, rg=True, shape=(W, W)):
    """``run(i)`` of a compiled-or-eager ``m``: output, input grad and parameter grads."""
    np_init(m, T, seed=25)
    f = wrap(m)

    def run(i):
        if calls_between is not None:
            calls_between(m, i)
        x = rand(T, i, *shape, rg=rg)
        out = f(x)
        out.sum().backward()
        seen = [out, x.grad if rg else None, _grads(m)]
        m.zero_grad()
        return seen
    return run, f


def _mock_module(T):
    """OptimizedModuleTest's MockModule idea: relu(linear(x) + buffer)."""
    class Mock(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = T.nn.ReLU()
            self.linear = T.nn.Linear(W, W)
            self.register_buffer("buf0", rand(T, 0, W, W, seed=500))

        def forward(self, x):
            return self.relu(self.linear(x) + self.buf0)
    return Mock()


# ---- OptimizedModuleTest -------------------------------------------------------------------------

def test_nn_module():
    # test_modules.py::OptimizedModuleTest::test_nn_module: a compiled module is an
    # OptimizedModule (torch._dynamo's) and equals the module; one program
    made = []

    def build(T, wrap):
        run, f = _train_run(T, wrap, _mock_module(T))
        made.append(f)
        return run
    compare(build)
    assert isinstance(torch.compile(made[0], backend="eager"), torch._dynamo.OptimizedModule)
    assert isinstance(made[2], tracegrad._dynamo.OptimizedModule)
    st = _stats(made[2])
    assert st["traces"] == 1 and st["graph_breaks"] == [], st


def test_dir():
    # test_modules.py::OptimizedModuleTest::test_dir: dir() of the compiled module lists the
    # module's attributes, parameters and buffers
    for T in (torch, tracegrad):
        m = _mock_module(T)
        m.register_parameter("param0", T.nn.Parameter(T.ones(2)))
        compiled = T.compile(m) if T is tracegrad else T.compile(m, backend="eager")
        keys = dir(compiled)
        assert {"linear", "buf0", "param0"} <= set(keys), T.__name__
        assert set(dir(m)) <= set(keys), (T.__name__, set(dir(m)) - set(keys))


def test_setattr_on_compiled_module():
    # test_modules.py::OptimizedModuleTest::test_setattr_on_compiled_module: ``compiled.x = t``
    # sets the module's attribute, and forward overwriting ``self.x`` is seen through both
    def build(T, wrap):
        class Replay(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.l1 = T.nn.Linear(2, W)
                self.l2 = T.nn.Linear(W, 2)
                self.x = None

            def forward(self, inp):
                res = self.l1(inp)
                self.x = res
                return self.l2(res)
        m = np_init(Replay(), T, seed=3)
        f = wrap(m)

        def run(i):
            f.x = T.full((2, W), 100.0 + i)
            before = (f.x, m.x)
            out = f(rand(T, i, 2, 2))
            return out, before, m.x, f.x, f.x is m.x
        return run
    compare(build)


def _chain(T, wrap, n=4, relu=False):
    """MockModule of test_no_recompile_on_nn_guarded_modules: ``n`` submodules, each compiled on
    its own, called in turn by an eager parent."""
    class Sub(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.act = T.nn.ReLU() if relu else T.nn.Linear(W, W)

        def forward(self, x):
            return self.act(T.sin(T.cos(x)))

    class Parent(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.subs = T.nn.ModuleList([Sub() for _ in range(n)])
            self.compiled = [wrap(s) for s in self.subs]

        def forward(self, x):
            for c in self.compiled:
                x = c(x)
            return x
    return Parent()


def test_no_recompile_on_nn_guarded_modules():
    # test_modules.py::OptimizedModuleTest::test_no_recompile_on_nn_guarded_modules (and
    # test_inline_inbuilt_nn_modules): four submodules compiled separately, each one program
    parents = []

    def build(T, wrap):
        p = _chain(T, wrap)
        parents.append(p)
        run, _ = _train_run(T, lambda m: m, p)
        return run
    compare(build)
    for c in parents[2].compiled:
        st = _stats(c)
        assert st["traces"] == 1 and st["graph_breaks"] == [], st


def test_recompile_limit_on_guarded_nn_modules():
    # test_modules.py::OptimizedModuleTest::test_recompile_limit_on_guarded_nn_modules: the
    # input's rank changes between calls (torch: one program per rank, up to the limit)
    parents = []
    shapes = [(W,), (W, W), (W, W, W), (W,), (W, W, W)]

    def build(T, wrap):
        p = _chain(T, wrap, relu=True)
        parents.append(p)
        return lambda i: p(rand(T, i, *shapes[i]))
    compare(build, calls=len(shapes))
    for c in parents[2].compiled:
        assert _stats(c)["traces"] <= 3, _stats(c)


def test_recompile_limit_on_freed_module():
    # test_modules.py::OptimizedModuleTest::test_recompile_limit_on_freed_module: a new module
    # per call, the old one freed; every call equals eager (torch compiles twice, then falls
    # back at its limit)
    def build(T, wrap):
        f = wrap(lambda x, mod: mod(x))

        def run(i):
            mod = np_init(T.nn.Linear(W, W), T, seed=i)
            out = f(rand(T, i, W, W), mod)
            return out
        return run
    compare(build, calls=6)


def test_hooks_skip_guards():
    # test_modules.py::OptimizedModuleTest::test_hooks_skip_guards: torch with hook guards
    # skipped misses the removed forward hook (its own documented trade-off); tracegrad follows
    # eager: once the hook's handle is removed the compiled function stops running it
    def build(T, wrap):
        class Affine(T.nn.Module):
            def forward(self, x):
                return 2 * x + 1
        m = Affine()
        handle = m.register_forward_hook(lambda mod, inp, out: 2 * out + 1)
        f = wrap(lambda t: m(t * 2 + 1))

        def run(i):
            if i == 2:
                handle.remove()
            x = T.tensor(1.0 + i, requires_grad=True)
            out = f(x)
            out.backward()
            return out, x.grad
        return run
    compare(build)


# ---- NNModuleTests -------------------------------------------------------------------------------

def _activations(T, how):
    class Acts(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.activations = T.nn.ModuleDict([["lrelu", T.nn.LeakyReLU()],
                                                ["prelu", T.nn.PReLU()]])

        def forward(self, x):
            if how == "keys":
                for name in self.activations.keys():
                    x = self.activations[name](x)
            else:
                for act in self.activations.values():
                    x = act(x)
            return x
    return Acts()


@pytest.mark.parametrize("how", ["keys", "values"])
def test_module_dict_iter_keys_values(how):
    # test_modules.py::NNModuleTests::test_module_dict_iter_keys and
    # test_module_dict_iter_values: a ModuleDict walked by keys()/values() (PReLU's weight
    # gets its grad)
    made = []

    def build(T, wrap):
        run, f = _train_run(T, wrap, _activations(T, how))
        made.append(f)
        return run
    compare(build)
    assert _stats(made[2])["traces"] == 1


def test_unspecialized_seq():
    # test_modules.py::NNModuleTests::test_unspecialized_seq: the function writes a submodule's
    # ``training`` flag before calling the Sequential; a BatchNorm makes the flag observable
    # (batch statistics in training, running ones in eval), the flag put back between calls
    def build(T, wrap):
        seq = np_init(T.nn.Sequential(T.nn.Linear(W, W), T.nn.BatchNorm1d(W)), T, seed=4)

        def fn(x):
            seq[1].training = False
            return seq(x)
        f = wrap(fn)

        def run(i):
            seq[1].training = i % 2 == 0
            x = rand(T, i, 3, W, rg=True)
            out = f(x)
            out.sum().backward()
            seen = [out, x.grad, seq[1].training, seq[1].running_mean, _grads(seq)]
            seq.zero_grad()
            return seen
        return run
    compare(build)


@pytest.mark.parametrize("own_setattr", [False, True])
def test_no_op_assignment(own_setattr):
    # test_modules.py::NNModuleTests::test_no_op_assignment: forward reassigns a plain tensor
    # attribute with ``self.buffer.to(x)`` (a no-op in float32, a cast for a float16 input);
    # Mod2 of the original overrides ``__setattr__``
    dtypes = ["float32", "float32", "float16", "float16", "float32"]

    def build(T, wrap):
        class Mod(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.buffer = rand(T, 0, W, seed=77)

            def forward(self, x):
                x = x + 1
                self.buffer = self.buffer.to(x)
                return self.buffer + x

        class Mod2(Mod):
            def __setattr__(self, name, value):
                return super().__setattr__(name, value)
        mod = (Mod2 if own_setattr else Mod)()
        f = wrap(lambda m, x: m(x))

        def run(i):
            x = rand(T, i, W).to(getattr(T, dtypes[i]))
            out = f(mod, x)
            return out, mod.buffer, str(mod.buffer.dtype).split(".")[-1]
        return run
    compare(build, calls=len(dtypes))


def test_mark_static_previously_seen_tensor():
    # test_modules.py::NNModuleTests::test_mark_static_previously_seen_tensor: the module's
    # buffer is also passed as an argument; the buffer is written in place between calls.
    # torch compiles it; tracegrad runs it eagerly (an argument that is a tensor the function
    # also reads from outside: one program would give them two copies), with a warning
    made = []

    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self, buf):
                super().__init__()
                self.register_buffer("buf", buf)

            def forward(self, x):
                return self.buf * x
        buf = T.ones(2, 2)
        mod = M(buf)
        f = wrap(lambda x, b, m: (b + 1) * m(x))
        made.append(f)

        def run(i):
            with T.no_grad():
                buf.fill_(1.0 + i)
            return f(rand(T, i, 2), buf, mod)
        return run
    compare(build)
    reasons = [r for r, _ in _stats(made[2])["graph_breaks"]]
    assert reasons and "shares memory" in reasons[0], reasons


@pytest.mark.parametrize("kind", ["plain", "buffer"])
def test_mark_static_nn_module_tensor(kind):
    # test_modules.py::NNModuleTests::test_mark_static_nn_module_tensor (a plain tensor
    # attribute) and test_mark_static_with_freezing (a buffer, under no_grad): the module's
    # tensor replaced by a new one after the first calls is the one read
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                if kind == "buffer":
                    self.register_buffer("buf", T.ones(2, 2))
                else:
                    self.buf = T.ones(2, 2)

            def forward(self, x):
                return self.buf * x
        mod = M()
        f = wrap(lambda x: x * mod(x))

        def run(i):
            if i >= 2:
                mod.buf = rand(T, i, 2, 2, seed=40)
            with T.no_grad():
                return f(rand(T, i, 2))
        return run
    compare(build)


def test_guard_on_torch_nn_modules():
    # test_modules.py::NNModuleTests::test_guard_on_torch_nn_modules: a global module's int
    # attribute changed after many calls (and an int argument alternating) is read anew
    made = []

    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = np_init(T.nn.Linear(W, W), T, seed=8)
                self.multiplier = 10

            def forward(self, x):
                return self.linear(x) * self.multiplier
        mod = M()
        f = wrap(lambda x, c: mod(x) + c)
        made.append(f)

        def run(i):
            if i == 6:
                mod.multiplier = 11
            return f(rand(T, i, 2, W), i % 2)
        return run
    compare(build, calls=8)
    # one program per (c, multiplier): (0, 10), (1, 10), (0, 11), (1, 11); torch makes ``c``
    # dynamic instead of tracing per value
    assert _stats(made[2])["traces"] <= 4, _stats(made[2])


GLOBAL_A = 0
GLOBAL_B = 0


def _bump_globals():
    global GLOBAL_A, GLOBAL_B
    GLOBAL_A += 1
    GLOBAL_B += 1


def _other_module():
    """A module of its own (another file's globals, as test_functions.py is to the original)."""
    other = types.ModuleType("round25_other")
    exec("value = 0\n"
         "def call(f):\n    f()\n"
         "def update(x):\n    global value\n    value += 1\n    return x * value\n",
         other.__dict__)
    return other


def test_globals_change_in_other_file():
    # test_modules.py::NNModuleTests::test_globals_change_in_other_file: the compiled function
    # bumps this file's globals through a callee and another module's global; it reads the new
    # values afterwards, on every call. The three runs share this file's globals: each run's
    # values are put in place around its calls.
    def build(T, wrap):
        other = _other_module()
        mine = {"GLOBAL_A": 0, "GLOBAL_B": 0}

        def fn(x):
            other.call(_bump_globals)
            a = other.update(x)
            return x * a * (GLOBAL_A + GLOBAL_B + other.value)
        f = wrap(fn)

        def run(i):
            globals().update(mine)
            out = f(T.ones(3))
            mine.update(GLOBAL_A=GLOBAL_A, GLOBAL_B=GLOBAL_B)
            return out, GLOBAL_A, GLOBAL_B, other.value
        return run
    compare(build)


_MOCKS = {}


def _picklable_mock(T):
    """``_mock_module``'s class made once per library and bound at module level under its own
    name, so that pickling the whole module finds it."""
    if T not in _MOCKS:
        cls = type(_mock_module(T))
        cls.__qualname__ = cls.__name__ = f"_Mock_{T.__name__}"
        globals()[cls.__name__] = cls
        _MOCKS[T] = cls
    return _MOCKS[T]()


def test_save_and_load_all_backends():
    # test_modules.py::NNModuleTests::test_save_and_load_inductor / _all_backends: a compiled
    # module saved whole and loaded again computes the module's result
    def build(T, wrap):
        mod = _picklable_mock(T)
        np_init(mod, T, seed=12)
        compiled = wrap(mod)

        def run(i):
            x = rand(T, i, W, W)
            first = compiled(x)
            buf = io.BytesIO()
            T.save(compiled, buf)
            buf.seek(0)
            loaded = T.load(buf, weights_only=False)
            return first, loaded(x), mod(x)
        return run
    compare(build, calls=3)


def test_monkeypatching_forward():
    # test_modules.py::NNModuleTests::test_monkeypatching_forward: ``mod.forward`` replaced by
    # another class's forward (types.MethodType) after two compiled calls
    def build(T, wrap):
        class Fake(T.nn.Module):
            def forward(self, x):
                return T.sin(x)

        class Mine(T.nn.Module):
            def forward(self, x):
                return T.cos(x)
        mod = Mine()
        f = wrap(lambda x: mod(x))

        def run(i):
            if i == 2:
                mod.forward = types.MethodType(Fake.forward, mod)
            x = rand(T, i, W, rg=True)
            out = f(x)
            out.sum().backward()
            return out, x.grad
        return run
    compare(build)


def test_user_defined_nn_module_dynamic():
    # test_modules.py::NNModuleTests::test_user_defined_nn_module_dynamic: one Conv2d subclass
    # (forward calls F.conv2d with its own stride) at three strides, each compiled
    def build(T, wrap):
        class Conv(T.nn.Conv2d):
            def forward(self, x):
                return T.nn.functional.conv2d(x, self.weight, self.bias, self.stride,
                                              self.padding, self.dilation, self.groups)
        mods = [np_init(Conv(2, 3, kernel_size=2, stride=s), T, seed=s) for s in (1, 2, 3)]
        fs = [wrap(m) for m in mods]

        def run(i):
            x = rand(T, i, 1, 2, 7, 7, rg=True)
            outs = [f(x) for f in fs]
            sum(o.sum() for o in outs).backward()
            seen = [outs, x.grad, [_grads(m) for m in mods]]
            for m in mods:
                m.zero_grad()
            return seen
        return run
    compare(build)


def test_overridden_call():
    # test_modules.py::NNModuleTests::test_overridden_call: a module whose class overrides
    # ``__call__`` (no hooks, 5 * forward)
    def build(T, wrap):
        class Over(T.nn.Module):
            def __call__(self, x):
                return 5 * self.forward(x)

            def forward(self, x):
                return x * 3
        m = Over()
        f = wrap(lambda x: m(x))

        def run(i):
            x = rand(T, i, W, rg=True)
            out = f(x)
            out.sum().backward()
            return out, x.grad
        return run
    compare(build)


def test_param_requires_grad():
    # test_modules.py::NNModuleTests::test_param_requires_grad: a training step whose layer2
    # parameters are frozen and unfrozen on alternate steps; forward bumps an int attribute
    made = []

    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.layer1 = T.nn.Linear(W, W)
                self.layer2 = T.nn.Linear(W, W)
                self.num_iter = 0

            def forward(self, x):
                x = self.layer2(x + self.layer1.bias)
                self.num_iter += 1
                return x
        model = np_init(M(), T, seed=6)
        f = wrap(model)
        made.append(f)

        def run(i):
            model.zero_grad(True)
            for p in model.layer2.parameters():
                p.requires_grad = model.num_iter % 2 != 0
            out = f(rand(T, i, 3, W))
            out.sum().backward()
            return out, _grads(model), model.num_iter
        return run
    compare(build, calls=6)


def _conv_direct(T, transpose):
    """ConvCallForwardDirectly's idea: a conv with a forward hook whose ``forward`` is called
    directly (the hook must not run)."""
    class Direct(T.nn.Module):
        def __init__(self):
            super().__init__()
            cls = T.nn.ConvTranspose2d if transpose else T.nn.Conv2d
            self.layer = cls(2, 3, kernel_size=2)
            self.layer.register_forward_hook(lambda m, inp, out: out * 100)

        def forward(self, x):
            return self.layer.forward(x)
    return Direct()


@pytest.mark.parametrize("transpose", [False, True], ids=["conv", "conv_transpose"])
def test_conv_call_forward_directly(transpose):
    # test_modules.py::NNModuleTests::test_conv_call_forward_directly and
    # test_conv_transpose_call_forward_directly
    def build(T, wrap):
        run, _ = _train_run(T, wrap, _conv_direct(T, transpose), shape=(1, 2, 4, 4))
        return run
    compare(build)


def test_call_fn_with_non_const_inputs_safe():
    # test_modules.py::NNModuleTests::test_call_fn_with_non_const_inputs_safe: a module whose
    # forward calls its conv's ``_conv_forward(x, weight, bias)`` (compiled here; torch exports)
    def build(T, wrap):
        class Special(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = T.nn.Conv2d(2, 3, kernel_size=(2, 2))

            def forward(self, x):
                return self.conv._conv_forward(x, self.conv.weight, self.conv.bias)
        run, _ = _train_run(T, wrap, Special(), shape=(2, 4, 4))
        return run
    compare(build)


def _lazy_kwargs(T):
    """LazyModuleKwArgs' idea: a lazy module whose forward and initialize_parameters take a
    positional and a keyword list."""
    class LazyKw(T.nn.modules.lazy.LazyModuleMixin, T.nn.Module):
        def initialize_parameters(self, *args, **kwargs):
            with T.no_grad():
                self.scale = T.nn.Parameter(T.full(args[0][0].shape, 0.5))

        def forward(self, xs, ys=()):
            out = self.scale * 1.0
            for t in list(xs) + list(ys):
                out = out + t * self.scale
            return out
    return LazyKw()


def test_lazy_module_kwargs():
    # test_modules.py::NNModuleTests::test_lazy_module_kwargs: the first (compiled) call
    # materializes the parameter; later calls train it
    def build(T, wrap):
        m = _lazy_kwargs(T)
        f = wrap(m)

        def run(i):
            xs = [rand(T, i, 2, 2, seed=s) for s in (1, 2, 3)]
            ys = [rand(T, i, 2, 2, seed=s) for s in (4, 5)]
            out = f(xs, ys=ys)
            out.sum().backward()
            seen = [out, type(m).__name__, m.scale.grad]
            m.zero_grad()
            return seen
        return run
    compare(build)


def test_lazy_module_no_cls_to_become():
    # test_modules.py::NNModuleTests::test_lazy_module_no_cls_to_become: a lazy module with
    # ``cls_to_become = None`` calling ``super().forward`` keeps its class after materializing
    def build(T, wrap):
        class Base(T.nn.Module):
            def forward(self, x):
                return x + self.w

        class LazyChild(T.nn.modules.lazy.LazyModuleMixin, Base):
            cls_to_become = None

            def initialize_parameters(self, x):
                with T.no_grad():
                    self.w = T.nn.Parameter(T.full(x.shape[-1:], 0.25))

            def forward(self, x):
                return super().forward(x) * 2
        m = LazyChild()
        f = wrap(m)

        def run(i):
            x = rand(T, i, 2, 3, rg=True)
            out = f(x)
            out.sum().backward()
            seen = [out, x.grad, m.w.grad, type(m).__name__]
            m.zero_grad()
            return seen
        return run
    compare(build)


def test_lazy_module_speculation_log_divergence():
    # test_modules.py::NNModuleTests::test_lazy_module_speculation_log_divergence: a LazyLinear
    # materialized inside the compiled function, whose result then passes a graph break
    def build(T, wrap):
        class One(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = T.nn.LazyLinear(3)

            def forward(self, x):
                return self.layer(x)

        def passthrough(x):
            T._dynamo.graph_break()
            return x

        def fn(mod, x):
            res = mod(x)
            passthrough(res)
            return res
        mod = One()
        f = wrap(fn)

        def run(i):
            x = rand(T, i, 2, 5)
            out = f(mod, x)
            if i == 0:       # the weights a LazyLinear draws differ: set them equal once
                np_init(mod, T, seed=9)
                out = mod(x)
            out.sum().backward()
            seen = [out, type(mod.layer).__name__, _grads(mod)]
            mod.zero_grad()
            return seen
        return run
    compare(build)


def test_save_and_load_after_module_compile():
    # test_modules.py::NNModuleTests::test_save_and_load_all_backends, for ``Module.compile()``
    # (test_hooks.py::HooksTests::test_wrap_top_frame_with_hooks' second case): the module
    # compiled in place pickles as the module (torch drops its compiled call), and loads equal
    def build(T, wrap):
        mod = _picklable_mock(T)
        np_init(mod, T, seed=13)
        if wrap(_noop) is not _noop:     # the compiled run: compiled in place
            mod.compile()

        def run(i):
            x = rand(T, i, W, W)
            first = mod(x)
            buf = io.BytesIO()
            T.save(mod, buf)
            buf.seek(0)
            loaded = T.load(buf, weights_only=False)
            return first, loaded(x), type(loaded) is type(mod), "_compiled_call" in vars(loaded)
        return run
    compare(build, calls=3)


def _noop():
    pass


def test_inject_module_parameters():
    # test_modules.py::NNModuleTests::test_inject_module_parameters: every submodule's
    # ``_parameters`` replaced by an OrderedDict subclass that keeps its parent module, then
    # the model compiled and trained
    def build(T, wrap):
        import collections

        class ZeRODict(collections.OrderedDict):
            def __init__(self, parent_module=None, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self._parent_module = parent_module

            def __getitem__(self, key):
                return super().__getitem__(key)
        model = T.nn.Sequential(T.nn.Linear(W, W), T.nn.ReLU(), T.nn.Linear(W, 2))
        for m in model.modules():
            new = ZeRODict(parent_module=m)
            for k, p in m._parameters.items():
                new[k] = p
            m._parameters = new
        run, _ = _train_run(T, wrap, model)
        return run
    compare(build)


def _breaking(T):
    """``unsupported`` of the original: a callee the compiler must not trace (disabled)."""
    @T._dynamo.disable
    def unsupported(a, b):
        return a + b
    return unsupported


def test_module_forward_has_graph_break():
    # test_modules.py::NNModuleTests::test_module_forward_has_graph_break (and
    # test_unsupportedmethod / test_unsupportedmodule): forward calls, through a method and a
    # submodule, a function the compiler leaves to eager (torch._dynamo.disable), between
    # traced work
    def build(T, wrap):
        unsupported = _breaking(T)

        class Inner(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = T.nn.Linear(W, W)
                self.scale = rand(T, 0, 1, W, seed=31)

            def forward(self, x):
                x = self.lin(x) * self.scale
                return unsupported(x, x)

        class Outer(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Inner()
                self.lin = T.nn.Linear(W, W)

            def call_and_scale(self, x):
                return unsupported(self.lin(x), x) * 2

            def forward(self, x):
                return 1 + self.inner(x * 1.5) + self.call_and_scale(x).sigmoid()
        run, _ = _train_run(T, wrap, Outer())
        return run
    compare(build)


def _proxy_class(T, seen=None):
    """temporary_tensor_subclass' idea: a Tensor subclass whose ``__torch_function__`` only
    passes through (calling ``seen`` first, a read of a closure cell in the original)."""
    class Proxy(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if seen is not None:
                seen()
            return super().__torch_function__(func, types, args, kwargs or {})
    return Proxy


@pytest.mark.parametrize("closure", [False, True])
def test_simple_torch_function(closure):
    # test_modules.py::NNModuleTests::test_simple_torch_function (and
    # test_torch_function_with_closure): F.sigmoid and .sigmoid twice each on a pass-through
    # subclass; the result keeps the subclass
    def build(T, wrap):
        counter = [0]

        def function():
            counter[0] + 1      # a read only, as the original
        proxy = _proxy_class(T, function if closure else None)

        def foo(x):
            x = T.nn.functional.sigmoid(x)
            x = T.nn.functional.sigmoid(x)
            x = x.sigmoid()
            return x.sigmoid()
        f = wrap(foo)

        def run(i):
            out = f(rand(T, i, 3).as_subclass(proxy))
            return out, type(out).__name__
        return run
    compare(build)


def _lazy_materialized(T):
    """MaterializedModule / LazyModule of the original: an UninitializedParameter materialized
    from the first input's shape, after which the module becomes ``cls_to_become``."""
    class Materialized(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_parameter("param", None)

        def forward(self, x):
            return x * 1.0

    class Lazy(T.nn.modules.lazy.LazyModuleMixin, Materialized):
        cls_to_become = Materialized

        def __init__(self):
            super().__init__()
            self.param = T.nn.UninitializedParameter()

        def initialize_parameters(self, x):
            self.param.materialize(x.shape)
    return Lazy()


def test_lazy_module1():
    # test_modules.py::NNModuleTests::test_lazy_module1: a lazy module materialized by the
    # compiled function's first call becomes its cls_to_become with the input's shape; a
    # LazyBatchNorm1d without affine/running stats likewise becomes a BatchNorm1d
    def build(T, wrap):
        module = _lazy_materialized(T)
        bn = T.nn.LazyBatchNorm1d(affine=False, track_running_stats=False)

        def fn(x):
            return module(x), bn(x)
        f = wrap(fn)

        def run(i):
            out = f(rand(T, i, 3, 2, 4))
            return (out, type(module).__name__, tuple(module.param.shape), type(bn).__name__)
        return run
    compare(build)


def _lazy_mlp(T):
    class LazyMLP(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = T.nn.LazyLinear(W)
            self.fc2 = T.nn.LazyLinear(1)

        def forward(self, x):
            return T.relu(self.fc2(T.relu(self.fc1(x))))
    return LazyMLP()


def test_lazy_module2_and_4():
    # test_modules.py::NNModuleTests::test_lazy_module2 (a compiled LazyMLP materialized by its
    # first call, equal to eager after) and test_lazy_module4 (then an input of another width:
    # the same RuntimeError as eager)
    def build(T, wrap):
        m = _lazy_mlp(T)
        f = wrap(m)

        def run(i):
            if i == 0:
                f(rand(T, 0, 3, 5))            # materializes; torch and tracegrad draw apart
                np_init(m, T, seed=14)
            if i == 3:
                with pytest.raises(RuntimeError) as err:
                    f(rand(T, i, 3, 7))
                return "RuntimeError", "shape" in str(err.value) or "mat" in str(err.value)
            x = rand(T, i, 3, 5, rg=True)
            out = f(x)
            out.sum().backward()
            seen = [out, x.grad, _grads(m), type(m.fc1).__name__]
            m.zero_grad()
            return seen
        return run
    compare(build)


def test_lazy_module5_6_7():
    # test_modules.py::NNModuleTests::test_lazy_module5 (a list input with a None),
    # test_lazy_module6 (a lazy submodule made in initialize_parameters) and test_lazy_module7
    # (a namedtuple holding a dict of lists): compiled from the first call
    import collections

    def build(T, wrap):
        Inp = collections.namedtuple("Inp", "x y")

        class LazyList(T.nn.modules.lazy.LazyModuleMixin, T.nn.Module):
            def initialize_parameters(self, xs):
                with T.no_grad():
                    self._param = T.nn.Parameter(T.full(xs[0].shape, 0.5))
                    self.sub = T.nn.LazyLinear(2)

            def forward(self, xs):
                out = 0
                for t in xs:
                    if t is not None:
                        out = out + t * self._param
                return self.sub(out)

        class LazyTuple(T.nn.modules.lazy.LazyModuleMixin, T.nn.Module):
            def initialize_parameters(self, inp):
                with T.no_grad():
                    self._param = T.nn.Parameter(T.full(inp.x["a"][0].shape, 0.5))

            def forward(self, inp):
                out = 0
                for t in inp.x["a"]:
                    out = out + t * self._param
                return out + inp.y
        lst, tup = LazyList(), LazyTuple()
        fl, ft = wrap(lst), wrap(tup)

        def run(i):
            xs = [rand(T, i, 2, 3, seed=s) for s in (1, 2, 3)] + [None]
            a = fl(xs)
            if i == 0:
                np_init(lst, T, seed=15)
                a = lst(xs)
            inp = Inp({"a": xs[:3], "b": xs[0]}, rand(T, i, 2, 3, seed=9))
            b = ft(inp)
            (a.sum() + b.sum()).backward()
            seen = [a, b, _grads(lst), _grads(tup), type(lst.sub).__name__]
            lst.zero_grad()
            tup.zero_grad()
            return seen
        return run
    compare(build)
