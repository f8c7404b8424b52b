"""Round-19 ports of PyTorch's torch.compile tests as compiled-vs-eager checks, from the
pytorch/pytorch repository: test/dynamo/test_modules.py (NNModuleTests: the ``make_test``
module programs -- Sequential/ModuleList/ModuleDict/ParameterDict containers and their custom
``__getitem__`` wrappers, plain Python lists and tuples of layers or tensors, functions and config
objects stored as module attributes, ``training``-dependent branches, static/class methods,
properties, ``super().forward``, ``parameters()``/``children()`` iteration, attribute precedence,
duplicated submodules, and modules whose Python attributes change between or during calls;
module hooks, parameter/buffer/module order, ``.to``, nested compiled modules),
test_hooks.py (HooksTests: tensor hooks registered inside the compiled function),
test_optimizers.py (OptimizerTests' compiled ``step`` per optimizer, End2EndTests) and
test_autograd_function.py (AutogradFunctionTests: ctx attributes, setup_context,
set_materialize_grads, enum arguments, classmethods, mark_non_differentiable/mark_dirty).
Each test names the torch test it ports (``test_modules.py::NNModuleTests::<name>``); every module
is written here in its own code (nothing copied) and keeps the construct the torch test checks.

Each program runs under torch eager, tracegrad eager and ``tracegrad.compile`` (a module itself
compiled, as ``torch.compile(module)``) on several calls with fresh inputs
(``_dynamo_port.compare``): the output, the input's grad and every parameter's grad after
``out.sum().backward()`` (and what hooks recorded, optimizer state) must agree on every call. Parameters are filled from a seeded numpy stream (``_harness.np_init``) and plain
tensor attributes are seeded numpy draws, so the three runs start equal.
Adapted: torch's ``standard_test`` counts frames and ops and runs the module in eval mode; here
only what a user observes is compared, in the mode the case names.

tracegrad fix made: a module's hook tables (``_forward_hooks`` and the others) were plain
OrderedDicts, so a hook replaced, deleted, reordered or cleared by writing the table directly
(``m._forward_hooks[h.id] = new_hook`` as test_hooks_inner does; ``del``/``pop``/``clear``/
``move_to_end``) left compiled programs running the old hooks: only ``register_*`` and
``handle.remove()`` told them. The tables are now ``_HookDict``s (nn/modules/module.py) that
report such writes as ``_Registry`` does for ``_parameters`` (test_hooks_outer_inner,
test_hook_table_edited_directly_between_calls); they pickle as plain OrderedDicts.
Found and left alone: the gradient an autograd.Function's backward gets from
``out.sum().backward()`` is an expanded tensor with strides (0, 0) in torch and a contiguous
one in tracegrad (eager and compiled alike), so ``g.stride()`` read in a backward differs;
test_stride_in_bwd's own contiguous gradient is used here. Calls that run eagerly (a graph
break, correct but not compiled; torch's dynamo compiles them): a module with
``register_full_backward_hook`` ("a hook is registered inside the compiled function": the
backward-hook wrapping registers tensor hooks in every forward, test_backward_hooks), tensor
hooks registered inside the function (the test_hooks.py cases), hooks or forwards that append
or count (test_self_mutating1, test_hooks_allowed_modules), a set_materialize_grads(False) or
mark_dirty Function, and an optimizer built inside the compiled function."""
import collections

import pytest

from ._dynamo_port import compare, rand
from ._harness import np_init

torch = pytest.importorskip("torch")

W = 4       # every Linear is W -> W and every input is (W, W): tiny, and ``mm`` works on it


def _tensor_attr(T, seed, *shape):
    """A plain (non-parameter) tensor attribute, equal in torch and tracegrad."""
    return rand(T, 0, *shape, seed=1000 + seed)


def _run_module(make, train=False, backward=True, calls=4, call=None, between=None):
    """``make(T)`` -> a module; compares torch eager, tracegrad eager and the compiled module
    over ``calls`` calls on fresh (W, W) inputs: output, input grad and every parameter's grad
    (by name). ``call(f, x, i)`` replaces ``f(x)``; ``between(m, i)`` runs before call ``i``."""
    def build(T, wrap):
        m = make(T)
        np_init(m, T, seed=19)
        m.train(train)
        f = wrap(m)

        def run(i):
            if between is not None:
                between(m, i)
            x = rand(T, i, W, W, rg=backward)
            out = call(f, x, i) if call is not None else f(x)
            seen = [out]
            if backward:
                out.sum().backward()
                seen.append(x.grad)
                seen.append({n: p.grad for n, p in m.named_parameters()})
                m.zero_grad()
            return seen
        return run
    return compare(build, calls=calls)


def _lin(T):
    return T.nn.Linear(W, W)


def _basic(T, seed=0):
    """test_modules.py's BasicModule idea: relu(linear(x)) times a plain tensor attribute."""
    class Basic(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = _lin(T)
            self.scale = _tensor_attr(T, seed, 1, W)

        def forward(self, x):
            return T.nn.functional.relu(self.lin(x)) * self.scale
    return Basic()


# ---- NNModuleTests make_test programs ----------------------------------------------------------

def test_seq():                       # test_modules.py::NNModuleTests::test_seq
    def make(T):
        nn = T.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(_lin(T), nn.ReLU(), _lin(T), nn.Tanh())

            def forward(self, x):
                return self.body(x)
        return M()
    _run_module(make)


def test_basicmodule1():              # test_modules.py::NNModuleTests::test_basicmodule1
    _run_module(_basic)


def test_submodules1():               # test_modules.py::NNModuleTests::test_submodules1
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.first = _basic(T, 1)
                self.second = _basic(T, 2)
                self.scale = _tensor_attr(T, 3, 1, W)

            def forward(self, x):
                return self.second(self.first(x)) * self.scale
        return M()
    _run_module(make)


def test_modulemethod1():             # test_modules.py::NNModuleTests::test_modulemethod1
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = _basic(T, 1)
                self.b = _basic(T, 2)
                self.scale = _tensor_attr(T, 3, 1, W)

            def apply_scaled(self, mod, x):
                return mod(x) * self.scale

            def forward(self, x):
                return self.apply_scaled(self.a, x) - self.apply_scaled(self.b, x)
        return M()
    _run_module(make)


# test_modules.py::NNModuleTests::test_module_call_module_with_static_forward
def test_module_call_module_with_static_forward():
    def make(T):
        class Swish(T.nn.Module):
            @staticmethod
            def forward(x):
                return x * T.sigmoid(x)

        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.act = Swish()
                self.lin = _lin(T)

            def forward(self, x):
                return self.act(self.lin(x))
        return M()
    _run_module(make)


@pytest.mark.parametrize("kind", ["static", "class"])
def test_module_static_and_class_method(kind):
    # test_modules.py::NNModuleTests::test_module_static_method (kind="static") and
    # test_modules.py::NNModuleTests::test_module_class_method (kind="class")
    def make(T):
        def helper(scale, mod, x):
            return mod(x) * scale

        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = _basic(T, 1)
                self.b = _basic(T, 2)
                self.scale = _tensor_attr(T, 3, 1, W)

            if kind == "static":
                scaled = staticmethod(helper)
            else:
                @classmethod
                def scaled(cls, scale, mod, x):
                    assert cls is M
                    return helper(scale, mod, x)

            def forward(self, x):
                return self.scaled(self.scale, self.a, x) + self.scaled(self.scale, self.b, x)
        return M()
    _run_module(make)


def test_fnmember():                  # test_modules.py::NNModuleTests::test_fnmember
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _lin(T)
                self.activation = T.nn.functional.gelu

            def forward(self, x):
                x = self.lin(x)
                if self.activation:
                    x = self.activation(x)
                return x
        return M()
    _run_module(make)


@pytest.mark.parametrize("act", ["relu", None])
def test_fnmembercmp(act):
    # test_modules.py::NNModuleTests::test_fnmembercmp1 (act="relu") / test_fnmembercmp2 (None)
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _lin(T)
                self.activation = None if act is None else getattr(T.nn.functional, act)

            def forward(self, x):
                x = self.lin(x)
                if self.activation is not None:
                    x = self.activation(x)
                if self.activation is None:
                    x = T.sigmoid(x)
                return x
        return M()
    _run_module(make)


def test_constloop():                 # test_modules.py::NNModuleTests::test_constloop
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _lin(T)
                self.repeats = 3

            def forward(self, x):
                for _ in range(self.repeats):
                    x = T.sigmoid(self.lin(x))
                return x
        return M()
    _run_module(make)


def _train_switch(T):
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.on_train = _lin(T)
            self.on_eval = _lin(T)

        def forward(self, x):
            mod = self.on_train if self.training else self.on_eval
            return T.nn.functional.relu(mod(x))
    return M()


@pytest.mark.parametrize("train", [True, False], ids=["istraining1", "iseval1"])
def test_istraining_iseval(train):
    # test_modules.py::NNModuleTests::test_istraining1 / test_iseval1
    _run_module(_train_switch, train=train)


def test_istraining_flipped_between_calls():
    # test_modules.py::NNModuleTests::test_istraining2 / test_iseval2 on one module: the mode
    # set between calls picks the layer (the compiled module must not keep the first mode's
    # program)
    _run_module(_train_switch, calls=5, between=lambda m, i: m.train(i % 2 == 0))


def test_viamodulecall():             # test_modules.py::NNModuleTests::test_viamodulecall
    def combine(a, b):                # a module-level helper the forward calls
        return (a - b) * 3

    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _lin(T)

            def forward(self, x):
                return combine(T.sigmoid(self.lin(x)), x)
        return M()
    _run_module(make)


def test_isnonelayer():               # test_modules.py::NNModuleTests::test_isnonelayer
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.first = _lin(T)
                self.second = None

            def forward(self, x):
                if self.first is not None:
                    x = self.first(x)
                if self.second is not None:
                    x = self.second(x)
                return x
        return M()
    _run_module(make)


def test_layerlist():                 # test_modules.py::NNModuleTests::test_layerlist
    # layers kept in a plain Python list: not registered, so not in named_parameters; their
    # weights are seeded by hand and their grads compared too
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = [_lin(T), T.nn.ReLU(), _lin(T)]

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
        m = M()
        for k, layer in enumerate(m.layers):
            np_init(layer, T, seed=50 + k)
        return m

    def build(T, wrap):
        m = make(T)
        f = wrap(m)

        def run(i):
            x = rand(T, i, W, W, rg=True)
            out = f(x)
            out.sum().backward()
            grads = [p.grad for layer in m.layers for p in layer.parameters()]
            for layer in m.layers:
                layer.zero_grad()
            return out, x.grad, grads
        return run
    compare(build)


def test_tensorlist():                # test_modules.py::NNModuleTests::test_tensorlist
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.factors = (_tensor_attr(T, 1, 1, W), _tensor_attr(T, 2, W, 1),
                                _tensor_attr(T, 3, 1, W), _tensor_attr(T, 4, W, 1))

            def forward(self, x):
                for f in self.factors:
                    x = x * f
                return x
        return M()
    _run_module(make)


def test_intarg():                    # test_modules.py::NNModuleTests::test_intarg
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _lin(T)

            def forward(self, x, offset=1):
                return T.nn.functional.relu(self.lin(x)) + offset
        return M()
    # the default on even calls, an explicit (changing) offset on odd ones
    _run_module(make, calls=5, call=lambda f, x, i: f(x) if i % 2 == 0 else f(x, offset=i))


def test_cfgmod():                    # test_modules.py::NNModuleTests::test_cfgmod
    class Cfg:
        def __init__(self):
            self.shift = 0.5
            self.steps = 3

    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.cfg = Cfg()
                self.lin = _lin(T)

            def forward(self, x):
                for _ in range(self.cfg.steps):
                    x = self.lin(x + self.cfg.shift)
                return x
        return M()
    _run_module(make)


def test_stringmember():              # test_modules.py::NNModuleTests::test_stringmember
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _lin(T)
                self.mode = "gated"

            def forward(self, x):
                if self.mode == "gated":
                    return T.nn.functional.relu(self.lin(x))
                return x
        return M()
    _run_module(make)


def test_modulelist():                # test_modules.py::NNModuleTests::test_modulelist
    def make(T):
        nn = T.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([_lin(T), nn.Tanh(), _lin(T), nn.Tanh()])

            def forward(self, x):
                for k in range(len(self.layers)):
                    x = self.layers[k](x)
                for layer, extra in zip(self.layers, (x, x, x, x)):
                    x = layer(x) + extra
                for layer, c in zip(self.layers, (1, 2, 3, 4)):
                    x = layer(x) + c
                for k, layer in enumerate(self.layers[::-1]):
                    x = layer(x) * (k + 1)
                return x
        return M()
    _run_module(make)


def test_modulelist_nested():         # test_modules.py::NNModuleTests::test_modulelist_nested
    def make(T):
        nn = T.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList(
                    nn.ModuleList([_lin(T), nn.ReLU()]) for _ in range(3))

            def forward(self, x):
                for lin, act in self.blocks:
                    x = act(lin(x))
                return x
        return M()
    _run_module(make)


def test_modulelist_custom():         # test_modules.py::NNModuleTests::test_modulelist_custom
    def make(T):
        nn = T.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([_lin(T), nn.ReLU(), _lin(T), nn.Tanh()])

            def __getitem__(self, k):
                return self.layers[k]

            def __len__(self):
                return len(self.layers)

            def forward(self, x):
                for k in range(len(self)):
                    x = self[k](x)
                return x
        return M()
    _run_module(make)


@pytest.mark.parametrize("custom", [False, True], ids=["plain", "custom"])
def test_moduledict_and_parameterdict(custom):
    # test_modules.py::NNModuleTests::test_moduledict_custom, test_parameterdict and
    # test_parameterdict_custom (custom=True goes through the module's own __getitem__)
    def make(T):
        nn = T.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.mods = nn.ModuleDict({"0": _lin(T), "act": nn.ReLU()})
                self.params = nn.ParameterDict({"w": nn.Parameter(T.zeros(W, W))})

            def __getitem__(self, key):
                return self.mods[key] if key in self.mods else self.params[key]

            def forward(self, x):
                if custom:
                    return self["act"](self["0"](x)).mm(self["w"])
                return self.mods["act"](self.mods["0"](x)).mm(self.params["w"])
        return M()
    _run_module(make)


def test_super1_super2():
    # test_modules.py::NNModuleTests::test_super1 (super().forward) and test_super2
    # (Base.forward(self, x)) in one module
    def make(T):
        base_cls = type(_basic(T))

        class Sub(base_cls):
            def forward(self, x):
                return super().forward(x) + 10.0 + base_cls.forward(self, x * 2)
        return Sub()
    _run_module(make)


def test_super_class_method():        # test_modules.py::NNModuleTests::test_super_class_method
    def make(T):
        class Parent(T.nn.Module):
            @classmethod
            def double(cls, x):
                return x + x

        class Child(Parent):
            def __init__(self):
                super().__init__()
                self.lin = _lin(T)

            @classmethod
            def twice(cls, x):
                return super().double(x) * 1.5

            def forward(self, x):
                return self.twice(self.lin(x))
        return Child()
    _run_module(make)


@pytest.mark.parametrize("named", [False, True], ids=["children", "named_children"])
def test_named_children(named):       # test_modules.py::NNModuleTests::test_named_children
    def make(T):
        nn = T.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.l1, self.l2, self.l3, self.l4 = _lin(T), nn.ReLU(), _lin(T), nn.Sigmoid()

            def forward(self, x):
                blocks = [b for _, b in self.named_children()] if named else self.children()
                for b in blocks:
                    x = b(x)
                return x
        return M()
    _run_module(make)


def _catblock(T):
    class CatBlock(T.nn.Module):
        def forward(self, feats):
            return 1.5 * T.cat(feats, 1)
    return CatBlock()


@pytest.mark.parametrize("how", ["values", "enumerate", "keys"])
def test_densenet(how):
    # test_modules.py::NNModuleTests::test_densenet (how="values"), test_enumvalues
    # ("enumerate") and test_access_by_keys ("keys"): a ModuleDict subclass whose forward walks
    # its own entries, feeding the growing list of features to each
    def make(T):
        class Dense(T.nn.ModuleDict):
            def __init__(self):
                super().__init__()
                for k in range(3):
                    self.add_module(f"block{k + 1:d}", _catblock(T))

            def forward(self, x):
                feats = [x]
                if how == "values":
                    layers = list(self.values())
                elif how == "enumerate":
                    layers = [layer for _, layer in enumerate(self.values())]
                else:
                    layers = [self[k] for k in self.keys()]
                for layer in layers:
                    feats.append(layer(feats))
                return T.cat(feats, 1)

        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _lin(T)
                self.dense = Dense()

            def forward(self, x):
                return self.dense(self.lin(x))
        return M()
    _run_module(make)


def _params_module(T, variant):
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = _lin(T)
            self.scale = T.nn.Parameter(T.zeros(1, W))
            self.scale_alias = self.scale       # the same parameter under a second name

        def forward(self, x):
            if variant == "requires_grad":      # a Python bool from parameters()
                if not any(p.requires_grad for p in self.parameters(recurse=False)):
                    return T.nn.functional.relu(self.lin(x)) * self.scale
                return x + 1 + self.scale
            if variant == "dtype":              # next(parameters()).dtype builds a tensor
                ones = T.ones(W, dtype=next(self.parameters(recurse=False)).dtype)
                return T.nn.functional.relu(self.lin(x)) * self.scale + ones
            n = sum(1 for _ in self.parameters())   # the alias is counted once
            return x * self.scale_alias * n
    return M()


@pytest.mark.parametrize("variant", ["requires_grad", "dtype", "count"])
def test_parameters(variant):
    # test_modules.py::NNModuleTests::test_parameters1 ("requires_grad"), test_parameters4
    # ("dtype") and test_parameters5 ("count", a parameter registered under two names)
    _run_module(lambda T: _params_module(T, variant))


def test_parameters_requires_grad_toggled_between_calls():
    # test_modules.py::NNModuleTests::test_parameters1 with the branch flipped: the module's
    # parameters stop (and start again) requiring grad between calls
    def flip(m, i):
        for p in m.parameters(recurse=False):
            p.requires_grad_(i % 2 == 0)

    def make(T):
        return _params_module(T, "requires_grad")

    def build(T, wrap):
        m = make(T)
        np_init(m, T, seed=19)
        f = wrap(m)

        def run(i):
            flip(m, i)
            x = rand(T, i, W, W, rg=True)
            out = f(x)
            out.sum().backward()
            seen = [out, x.grad, {n: p.grad for n, p in m.named_parameters()}]
            m.zero_grad()
            return seen
        return run
    compare(build, calls=4)


def test_hasattr():                   # test_modules.py::NNModuleTests::test_hasattr
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = T.nn.Parameter(T.zeros(1, W))

            def forward(self, x):
                x = T.nn.functional.relu(x)
                if hasattr(self, "scale"):
                    x *= self.scale
                if hasattr(self, "scale2"):
                    x *= self.scale2
                return x
        return M()
    # the input does not require grad: relu's result is then free to be scaled in place
    _run_module(make, backward=False)

    def build(T, wrap):
        m = make(T)
        np_init(m, T, seed=19)
        f = wrap(m)

        def run(i):
            out = f(rand(T, i, W, W))
            out.sum().backward()
            g = m.scale.grad
            m.zero_grad()
            return out, g
        return run
    compare(build)


def test_module_property():           # test_modules.py::NNModuleTests::test_module_property
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _lin(T)
                self.scale = _tensor_attr(T, 1, 1, W)

            @property
            def scale_alias(self):
                return self.scale

            def forward(self, x):
                return self.lin(x) * self.scale_alias
        return M()
    _run_module(make)


def test_module_name_string():        # test_modules.py::NNModuleTests::test_module_name_string
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _lin(T)

            def forward(self, x):
                if type(self).__name__ == "Other":
                    return x * 0
                if self.lin.__class__.__name__ == "Linear":
                    return T.nn.functional.relu(self.lin(x) + 10)
                return x * 11
        return M()
    _run_module(make)


def test_module_attribute_precedence():
    # test_modules.py::NNModuleTests::test_module_attribute_precedence: an instance attribute
    # (a submodule, a tensor, a float) shadows a method of the same name on the class
    def make(T):
        class Base(T.nn.Module):
            def lin(self, x):
                return x * 2.0

        class M(Base):
            def __init__(self):
                super().__init__()
                self.act = T.nn.Tanh()
                self.lin = _lin(T)
                self.init = T.ones(W, W)
                self.scale = 0.5

            def act(self, x):                   # shadowed by the Tanh submodule
                return x * 1.2

            def init(self):                     # shadowed by the tensor
                return T.zeros(W, W)

            def scale(self):                    # shadowed by the float
                return 2.0

            def forward(self, x):
                return self.act(self.lin(self.init + x)) * self.scale
        return M()
    _run_module(make)


def test_module_guard_name_is_valid():
    # test_modules.py::NNModuleTests::test_module_guard_name_is_valid: submodules registered
    # under names that are not Python identifiers
    def make(T):
        class M(T.nn.ModuleDict):
            def __init__(self):
                super().__init__()
                for k in range(2):
                    self.add_module(f"l@yer-{k + 1:d}", _basic(T, k))

            def forward(self, x):
                for layer in self.values():
                    x = layer(x)
                return x
        return M()
    _run_module(make)


@pytest.mark.parametrize("ordered", [False, True], ids=["module", "module2"])
def test_sequential_with_duplicated_module(ordered):
    # test_modules.py::NNModuleTests::test_sequential_with_duplicated_module (ordered=False)
    # and test_sequential_with_duplicated_module2 (built from an OrderedDict)
    def make(T):
        nn = T.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = nn.ReLU()
                layers = [("lin1", nn.Linear(W, 6)), ("act1", self.act),
                          ("lin2", nn.Linear(6, 6)), ("act2", self.act),
                          ("lin3", nn.Linear(6, W)), ("act3", self.act)]
                self.body = (nn.Sequential(collections.OrderedDict(layers)) if ordered
                             else nn.Sequential(*[mod for _, mod in layers]))

            def forward(self, x):
                return self.body(x)
        return M()
    _run_module(make)


def test_module_comparison():         # test_modules.py::NNModuleTests::test_module_comparison
    def make(T):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.layer0, self.layer1, self.layer2 = _lin(T), _lin(T), _lin(T)

            @property
            def encoder_layers(self):
                return [self.layer0, self.layer1, self.layer2]

            def forward(self, x):
                outs = []
                for layer in self.encoder_layers:
                    y = layer(x)
                    if layer is None or layer == self.layer0:
                        outs.append(T.nn.functional.relu6(y * 4))
                    else:
                        outs.append(T.nn.functional.relu(y))
                return T.stack(outs)
        return M()
    _run_module(make)


# ---- NNModuleTests tests written out -----------------------------------------------------------

def test_self_mutating1():            # test_modules.py::NNModuleTests::test_self_mutating1
    # two wrappers around one shared Linear, each counting its own calls in a Python int that
    # its forward reads and then bumps
    def build(T, wrap):
        shared = np_init(_lin(T), T, seed=19)

        class Counting(T.nn.Module):
            def __init__(self, layer):
                super().__init__()
                self.layer = layer
                self.counter = 0

            def forward(self, x):
                out = self.layer(x) + self.counter
                self.counter += 1
                return T.nn.functional.relu(out)
        m1, m2 = Counting(shared), Counting(shared)
        f1, f2 = wrap(m1), wrap(m2)

        def run(i):
            x = rand(T, i, W, W, rg=True)
            outs = [f1(x), f1(x), f2(x)]
            sum(o.sum() for o in outs).backward()
            g = shared.weight.grad
            shared.zero_grad()
            return outs, x.grad, g, m1.counter, m2.counter
        return run
    compare(build)


def test_nn_module_setattr():         # test_modules.py::NNModuleTests::test_nn_module_setattr
    # a compiled function reads a module's int attribute; setting it between calls changes
    # the result
    def build(T, wrap):
        class Holder(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.var = 0

        m = Holder()
        f = wrap(lambda x, mod: x + mod.var)

        def run(i):
            out = f(rand(T, i, 3), m)
            m.var = i + 1
            return out
        return run
    compare(build)


def test_nn_moduledict_contains():    # test_modules.py::NNModuleTests::test_nn_moduledict_contains
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self, mods):
                super().__init__()
                self.mods = mods

            def forward(self, x):
                if "foo" in self.mods:
                    x = T.mul(x, 2.0)
                return T.add(x, 1.0)
        with_foo = M(T.nn.ModuleDict({"foo": T.nn.Identity()}))
        with_bar = M(T.nn.ModuleDict({"bar": T.nn.Identity()}))
        f_foo, f_bar = wrap(with_foo), wrap(with_bar)

        def run(i):
            x = rand(T, i, 3)
            return f_foo(x), f_bar(x)
        return run
    compare(build)


# ---- order of parameters/buffers/modules read inside a compiled function -----------------------

@pytest.mark.parametrize("what", ["param", "buffer", "module"])
def test_param_buffer_module_order(what):
    # test_modules.py::NNModuleTests::test_param_order / test_buffer_order / test_module_order:
    # a compiled function weights each parameter (buffer, submodule) by its position in
    # parameters()/named_parameters() (buffers()..., modules()/children()...); re-inserting the
    # first entry at the end of the module's registry between calls changes that order
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                if what == "param":
                    self.p1 = T.nn.Parameter(T.ones(1))
                    self.p2 = T.nn.Parameter(T.ones(2) * 2)
                elif what == "buffer":
                    self.register_buffer("b1", T.ones(1))
                    self.register_buffer("b2", T.ones(2) * 2)
                else:
                    self.lin1 = T.nn.Linear(3, 3)
                    self.lin2 = T.nn.Linear(5, 5)
        mod = M()
        weight_of = {mod: 10}
        if what == "module":
            weight_of.update({mod.lin1: 20, mod.lin2: 30})
        coeffs = [2, 3, 4]

        def fn(x):
            if what == "param":
                entries = [list(mod.parameters()), [p for _, p in mod.named_parameters()]]
            elif what == "buffer":
                entries = [list(mod.buffers()), [b for _, b in mod.named_buffers()]]
            else:
                entries = [list(mod.modules()), [m for _, m in mod.named_modules()],
                           list(mod.children()), [m for _, m in mod.named_children()]]
            for seq in entries:
                for k, e in enumerate(seq):
                    v = weight_of[e] if what == "module" else e.sum()
                    x = x + v * coeffs[k]
            return x
        f = wrap(fn)
        registry = {"param": "_parameters", "buffer": "_buffers", "module": "_modules"}[what]
        first = {"param": "p1", "buffer": "b1", "module": "lin1"}[what]

        def run(i):
            if i == 2:
                reg = getattr(mod, registry)
                reg[first] = reg.pop(first)
            return f(T.ones(1))
        return run
    compare(build)


def test_to():                        # test_modules.py::NNModuleTests::test_to
    # the module moved to float64 between calls: the compiled module follows (new dtype out)
    def build(T, wrap):
        m = np_init(T.nn.Sequential(_lin(T), T.nn.ReLU(), _lin(T)), T, seed=19)
        f = wrap(m)

        def run(i):
            if i == 2:
                m.to(dtype=T.float64)
            dt = T.float64 if i >= 2 else T.float32
            x = rand(T, i, W, W).to(dt).requires_grad_()
            out = f(x)
            out.sum().backward()
            seen = [out, x.grad, {n: p.grad for n, p in m.named_parameters()}]
            m.zero_grad()
            return seen
        return run
    compare(build)


def test_attr():                      # test_modules.py::NNModuleTests::test_attr
    # the compiled module shares the module's parameters and buffers (same objects), and a
    # compiled function returns the dtype of the first of parameters() + buffers()
    import itertools

    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _lin(T)
                self.register_buffer("buf0", _tensor_attr(T, 1, W, W))

            def forward(self, x):
                return self.lin(T.sin(x)) + self.buf0
        m = np_init(M(), T, seed=19)
        opt = wrap(m)
        same_params = [a is b for a, b in zip(m.parameters(), opt.parameters())]
        same_bufs = [a is b for a, b in zip(m.buffers(), opt.buffers())]
        first_dtype = wrap(lambda mod: next(itertools.chain(mod.parameters(), mod.buffers())).dtype)

        def run(i):
            return (opt(rand(T, i, W, W)), str(first_dtype(m)).split(".")[-1],
                    same_params, same_bufs)
        return run
    compare(build)


@pytest.mark.parametrize("inner_compiled", [False, True], ids=["plain", "with_opt_mod"])
def test_composition(inner_compiled):
    # test_modules.py::NNModuleTests::test_composition / test_composition_with_opt_mod: a
    # compiled outer module whose submodule is a plain (or an already compiled) module
    def build(T, wrap):
        class Inner(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.act = T.nn.ReLU()

            def forward(self, x):
                return self.act(T.sin(x))

        class Outer(T.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.mod = inner

            def forward(self, x):
                return self.mod(T.cos(x)) * 2
        inner = Inner()
        f = wrap(Outer(wrap(inner) if inner_compiled else inner))

        def run(i):
            x = rand(T, i, 4, rg=True)
            out = f(x)
            out.sum().backward()
            return out, x.grad
        return run
    compare(build)


def test_module_patch():              # test_modules.py::NNModuleTests::test_module_patch
    # a module whose forward is replaced on the instance by another class's forward
    import types

    def build(T, wrap):
        class Empty(T.nn.Module):
            pass

        class Other(T.nn.Module):
            def forward(self, x):
                return x - 1

        m = Empty()
        m.forward = types.MethodType(Other.forward, m)
        f = wrap(lambda x: m(x))

        def run(i):
            return f(rand(T, i, 4))
        return run
    compare(build)


# ---- module hooks --------------------------------------------------------------------------------

def _affine(T):
    class Affine(T.nn.Module):
        def forward(self, x):
            return 2 * x + 1
    return Affine()


@pytest.mark.parametrize("where", ["outer", "inner"])
def test_hooks_outer_inner(where):
    # test_modules.py::NNModuleTests::test_hooks_outer ("outer": the hooked module compiled) and
    # test_hooks_inner ("inner": a compiled function calls the hooked module): a forward hook
    # that changes the output is honoured, then replaced in _forward_hooks, then removed
    def build(T, wrap):
        m = _affine(T)
        handle = m.register_forward_hook(lambda mod, inp, out: 2 * out + 1)
        f = wrap(m) if where == "outer" else wrap(lambda t: m(t * 2 + 1))

        def run(i):
            if i == 2:
                m._forward_hooks[handle.id] = lambda mod, inp, out: 2 * out + 2
            if i == 3:
                handle.remove()
            x = rand(T, i, 2, rg=True)
            out = f(x)
            out.sum().backward()
            return out, x.grad
        return run
    compare(build, calls=5)


def _toy(T, width=6):
    nn = T.nn
    return np_init(nn.Sequential(nn.Linear(W, width), nn.ReLU(), nn.Linear(width, 3), nn.ReLU()),
                   T, seed=19)


@pytest.mark.parametrize("explicit_call", [False, True], ids=["allowed_modules", "dunder_call"])
def test_hooks_allowed_modules(explicit_call):
    # test_modules.py::NNModuleTests::test_hooks_allowed_modules and test_dunder_call_explicitly
    # (the child called as ``layer.__call__(x)``): a forward hook on every module records
    # (name, input shapes) on every call of the compiled model, then backward runs
    import functools

    def build(T, wrap):
        if explicit_call:
            class Model(T.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = _lin(T)

                def forward(self, x):
                    return self.lin.__call__(x)
            model = np_init(Model(), T, seed=19)
        else:
            model = _toy(T)
        seen = []

        def record(name, mod, inp, out):
            seen.append((name, [tuple(t.shape) for t in inp], tuple(out.shape)))
        for name, sub in model.named_modules():
            sub.register_forward_hook(functools.partial(record, name))
        f = wrap(model)

        def run(i):
            seen.clear()
            x = rand(T, i, 5, W)
            out = f(x)
            out.sum().backward()
            grads = {n: p.grad for n, p in model.named_parameters()}
            model.zero_grad()
            return out, list(seen), grads
        return run
    compare(build)


def test_hooks_allowed_modules_compiles_self_contained():
    # test_modules.py::NNModuleTests::test_hooks_allowed_modules_compiles_self_contained: a hook
    # rewriting every module's output, a model that runs its Sequential twice, then backward;
    # then an input of another rank
    def build(T, wrap):
        class Model(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = _toy(T)

            def forward(self, x):
                return self.net(x) * self.net(x)
        model = Model()
        for _, sub in model.named_modules():
            sub.register_forward_hook(lambda mod, inp, out: 2 * out + 1)
        f = wrap(model)

        def run(i):
            x = rand(T, i, *((5, W) if i < 2 else (2, 3, W)))
            out = f(x)
            out.sum().backward()
            grads = {n: p.grad for n, p in model.named_parameters()}
            model.zero_grad()
            return out, grads
        return run
    compare(build)


def test_backward_hooks():            # test_modules.py::NNModuleTests::test_backward_hooks
    # full backward hooks and backward pre-hooks on every module (custom mm layers in a
    # Sequential) record the grad shapes they see; the same names, order and shapes each call
    import functools

    def build(T, wrap):
        class MatLayer(T.nn.Module):
            def __init__(self, a, b):
                super().__init__()
                self.weight = T.nn.Parameter(T.zeros(a, b))

            def forward(self, x):
                return T.mm(x, self.weight)

        class Model(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = T.nn.Sequential(MatLayer(W, W), MatLayer(W, 6), MatLayer(6, 3))

            def forward(self, x):
                return self.net(x)
        model = np_init(Model(), T, seed=19)
        log = []

        def bwd(name, mod, gin, gout):
            log.append(("post", name, [None if g is None else tuple(g.shape) for g in gin],
                        [tuple(g.shape) for g in gout]))

        def pre(name, mod, gout):
            log.append(("pre", name, [tuple(g.shape) for g in gout]))
        for name, sub in model.named_modules():
            sub.register_full_backward_hook(functools.partial(bwd, name))
            sub.register_full_backward_pre_hook(functools.partial(pre, name))
        f = wrap(model)

        def run(i):
            log.clear()
            x = rand(T, i, 5, W, rg=True)
            out = f(x)
            out.sum().backward()
            grads = {n: p.grad for n, p in model.named_parameters()}
            model.zero_grad()
            return out, x.grad, grads, list(log)
        return run
    compare(build)


def test_udo_instance_method_as_hook():
    # test_modules.py::NNModuleTests::test_udo_instance_method_as_hook: a plain object's bound
    # method registered as a prepended forward pre-hook with kwargs; the object (callable) is
    # what gets compiled
    def build(T, wrap):
        class Square(T.nn.Module):
            def forward(self, x):
                return x * x

        class Holder:
            def __init__(self, module):
                self.module = module
                self.handle = module.register_forward_pre_hook(
                    self.shift, prepend=True, with_kwargs=True)

            def shift(self, module, args, kwargs):
                return (args[0] + 1,), kwargs

            def __call__(self, x):
                return self.module(x)
        f = wrap(Holder(Square()))

        def run(i):
            return f(rand(T, i, 3, 4))
        return run
    compare(build)


@pytest.mark.parametrize("how", ["name", "keys", "values"])
def test_module_dict_iter(how):
    # test_modules.py::NNModuleTests::test_module_dict_iter_name / _keys / _values: a
    # ModuleDict of activations (one with a parameter, PReLU) walked three ways
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.acts = T.nn.ModuleDict([["lrelu", T.nn.LeakyReLU()], ["prelu", T.nn.PReLU()]])

            def forward(self, x):
                if how == "values":
                    for act in self.acts.values():
                        x = act(x)
                    return x
                names = self.acts if how == "name" else self.acts.keys()
                for name in names:
                    x = self.acts[name](x)
                return x
        m = M()
        f = wrap(m)

        def run(i):
            x = rand(T, i, 3, 3, rg=True)
            out = f(x)
            out.sum().backward()
            g = m.acts["prelu"].weight.grad
            m.zero_grad()
            return out, x.grad, g
        return run
    compare(build)


def test_module_setattr():            # test_modules.py::NNModuleTests::test_module_setattr
    # a compiled function sets a Python attribute on a submodule before calling the model
    def build(T, wrap):
        model = np_init(T.nn.Sequential(T.nn.Linear(3, 3)), T, seed=19)
        model[0].flag = False

        def fn(x):
            model[0].flag = True
            return model(x)
        f = wrap(fn)

        def run(i):
            model[0].flag = False
            out = f(rand(T, i, 1, 3))
            return out, model[0].flag
        return run
    compare(build)


def test_assign_does_not_exist():     # test_modules.py::NNModuleTests::test_assign_does_not_exist
    # forward stores a new tensor attribute and returns it: the attribute is the returned tensor
    def build(T, wrap):
        class M(T.nn.Module):
            def forward(self, x):
                self.encoding = x + 1
                return self.encoding
        m = M()
        f = wrap(m)

        def run(i):
            out = f(rand(T, i, 4))
            return out, m.encoding is out, m.encoding
        return run
    compare(build)


@pytest.mark.parametrize("edit", ["del", "clear", "move_to_end", "pop"])
def test_hook_table_edited_directly_between_calls(edit):
    # test_modules.py::NNModuleTests::test_hooks_inner's direct write to ``_forward_hooks``,
    # widened to the other ways code edits a hook table without a handle (as prune and
    # weight_norm delete their pre-hooks): the compiled module runs the hooks the table holds
    def build(T, wrap):
        m = _affine(T)
        h1 = m.register_forward_hook(lambda mod, inp, out: out * 3)
        h2 = m.register_forward_hook(lambda mod, inp, out: out + 1)
        f = wrap(m)

        def run(i):
            if i == 2:
                table = m._forward_hooks
                if edit == "del":
                    del table[h1.id]
                elif edit == "clear":
                    table.clear()
                elif edit == "pop":
                    table.pop(h2.id)
                else:
                    table.move_to_end(h1.id)
            x = rand(T, i, 2, rg=True)
            out = f(x)
            out.sum().backward()
            return out, x.grad
        return run
    compare(build)


def _doubled(mod, inp, out):
    return out * 2


def test_hook_tables_pickle_with_their_handles():
    # the change-reporting hook tables pickle as themselves, so a handle pickled with the module
    # (a lazy module's initialize hook) still removes from the loaded module's table, and they
    # come back reporting changes
    import pickle
    import tracegrad as tg
    m = tg.nn.Linear(2, 2)
    m.handle = m.register_forward_hook(_doubled)
    m2 = pickle.loads(pickle.dumps(m))
    m2.handle.remove()
    assert len(m2._forward_hooks) == 0 and type(m2._forward_hooks).__name__ == "_HookDict"
    back = pickle.loads(pickle.dumps(tg.nn.Linear(2, 2)))
    f = tg.compile(back)
    x = tg.ones(1, 2)
    first = [f(x) for _ in range(3)]
    h = back.register_forward_hook(lambda mod, inp, out: out * 0)
    back._forward_hooks[h.id] = lambda mod, inp, out: out * 5
    assert type(back._forward_hooks).__name__ == "_HookDict"
    np_out = f(x).detach().numpy()
    assert (abs(np_out - first[0].detach().numpy() * 5) < 1e-5).all()


# ---- test_hooks.py: tensor hooks registered inside the compiled function -----------------------

def _times4(grad):
    return grad * 4


def _halve(grad):
    return grad / 2


def _times3(grad):
    return grad * 3


_HANDLE = [None]        # a module-level slot a compiled function stores a handle in


@pytest.mark.parametrize("case", [
    "in_graph_lambda",            # test_hooks.py::HooksTests::test_tensor_register_hook_in_graph_lambda
    "local_inner",                # ...::test_tensor_only_register_hook_in_graph_local_inner
    "global_hook",                # ...::test_tensor_register_global_hook
    "handles_in_list",            # ...::test_tensor_register_multiple_hooks_handles_in_list
    "global_handle",              # ...::test_tensor_register_global_hooks_handles_in_list
    "used_before_and_after",      # ...::test_hook_on_intermediate_used_before_and_after
    "returns_none",               # ...::test_hook_on_intermediate_returns_none
])
def test_tensor_hooks_registered_inside(case):
    # each call: the compiled function registers hooks on its input (or an intermediate), the
    # caller runs backward with a fixed gradient; the grads, and after removing any returned
    # handles a second backward's accumulated grads, agree with torch's
    def build(T, wrap):
        def fn(x, y):
            if case == "in_graph_lambda":
                x.register_hook(lambda g: g * 2)
                return x, y * y
            if case == "local_inner":
                def double(g):
                    return g * 2
                z = x * x
                x.register_hook(double)
                z.register_hook(double)
                return x, z
            if case == "global_hook":
                x.register_hook(_times4)
                return x, x * x
            if case == "handles_in_list":
                hs = [x.register_hook(h) for h in (_times4, _halve, _times3)]
                return x, x * y, hs
            if case == "global_handle":
                _HANDLE[0] = x.register_hook(_times4)
                return x, x * y
            t = x * 2
            if case == "used_before_and_after":
                before = t + 1
                t.register_hook(lambda g: g * 2)
                return (before + t * 3).sum(), y
            t.register_hook(lambda g: None)
            return t.sum(), y
        f = wrap(fn)

        def run(i):
            x = rand(T, i, 3, rg=True)
            out = f(x, rand(T, i, 3, seed=5))
            seed = T.tensor([1.0, 2.0, 3.0])
            head = out[0]
            head.backward(seed if head.dim() else None, retain_graph=True)
            first = x.grad.clone()
            handles = out[2] if case == "handles_in_list" else \
                [_HANDLE[0]] if case == "global_handle" else []
            for h in handles:
                h.remove()
            if handles:
                head.backward(seed)
            return out[1], first, x.grad
        return run
    compare(build)


# ---- test_optimizers.py ---------------------------------------------------------------------------

_OPTIMIZERS = ["SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "NAdam", "RMSprop", "Rprop",
               "ASGD"]


@pytest.mark.parametrize("name", _OPTIMIZERS)
def test_optimizer_step(name):
    # test_optimizers.py::OptimizerTests::test_<name> (test_sgd with lr=0.01, the others with
    # their defaults): the optimizer's step alone compiled, called under no_grad after an eager
    # backward; parameters and the optimizer's per-parameter state agree after every step
    def build(T, wrap):
        model = np_init(T.nn.Sequential(T.nn.Linear(W, W), T.nn.Linear(W, W)), T, seed=19)
        kw = {"lr": 0.01} if name == "SGD" else {}
        opt = getattr(T.optim, name)(model.parameters(), **kw)
        step = wrap(lambda: opt.step())

        def run(i):
            opt.zero_grad()
            model(rand(T, i, 3, W)).pow(2).sum().backward()
            with T.no_grad():
                step()
            state = {k: dict(v) for k, v in opt.state_dict()["state"].items()}
            return [p.detach() for p in model.parameters()], state
        return run
    compare(build, calls=3)


def test_optimizing_over_tensor_with_requires_grad():
    # test_optimizers.py::End2EndTests::test_optimizing_over_tensor_with_requires_grad: Adam
    # optimizes a plain tensor that is a keyword argument of a parameterless module; the whole
    # training iteration (zero_grad, forward, cross entropy, backward, step) is compiled
    def build(T, wrap):
        class Net(T.nn.Module):
            def forward(self, x, y):
                return T.flatten(T.bmm(x, y), 1)

        def train_iter(batch, model, opt):
            opt.zero_grad()
            out = model(**batch)
            loss = T.nn.CrossEntropyLoss()(out, T.tensor([0, 7]))
            loss.backward()
            opt.step()
            return loss
        net = Net()
        x1 = rand(T, 0, 2, 1, 4)
        x2 = rand(T, 1, 2, 4, 8, rg=True)
        opt = T.optim.Adam([x2], lr=0.1)
        f = wrap(train_iter)

        def run(i):
            loss = f({"x": x1, "y": x2}, net, opt)
            return loss, x2.detach(), x2.grad
        return run
    compare(build)


def test_optimizer_made_inside_compiled_function():
    # test_optimizers.py::End2EndTests::test_state_dict: a compiled function builds an Adagrad
    # over two parameters and a partial closure computing the loss; the caller steps with it
    import functools

    def build(T, wrap):
        def setup(weight, bias, inp):
            def loss_of(optimizer, weight, bias):
                optimizer.zero_grad()
                loss = (weight.mv(inp) + bias).pow(2).sum()
                loss.backward()
                return loss
            optimizer = T.optim.Adagrad([weight, bias])
            return optimizer, functools.partial(loss_of, optimizer, weight, bias)
        f = wrap(setup)

        def run(i):
            w = T.nn.Parameter(rand(T, i, 5, 3))
            b = T.nn.Parameter(rand(T, i, 5, seed=3))
            opt, closure = f(w, b, rand(T, i, 3, seed=4, rg=True))
            loss = opt.step(closure)
            return loss, w.detach(), b.detach(), w.grad
        return run
    compare(build)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_init_group(dtype):
    # test_optimizers.py::End2EndTests::test_init_group: a custom optimizer whose step branches
    # on a Python bool its _init_group computes from the parameters (is_complex)
    def build(T, wrap):
        class Bump(T.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, {})

            def _init_group(self, params, group):
                any_complex = False
                for p in group["params"]:
                    params.append(p)
                    any_complex |= p.is_complex()
                return any_complex

            def step(self):
                for group in self.param_groups:
                    params = []
                    if self._init_group(params, group):
                        params[0] -= 1
                    else:
                        params[0] += 1
        base = rand(T, 0, 3, 3).to(getattr(T, dtype))
        p = T.nn.Parameter(base.clone(), requires_grad=False)
        opt = Bump([p])
        step = wrap(opt.step)

        def run(i):
            step()
            return T.view_as_real(p.detach()) if dtype != "float32" else p.detach()
        return run
    compare(build)


# ---- test_autograd_function.py ---------------------------------------------------------------------

def _fn_case(T, case):
    """The autograd.Function program of one test_autograd_function.py case, over module ``T``."""
    import enum
    import math
    Function = T.autograd.Function

    if case == "ctx_attribute":        # test_function_ctx_does_not_instantiate_function
        class Scaled(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.scale = 3
                return x.sin()

            @staticmethod
            def backward(ctx, g):
                return g * ctx.scale
        return lambda x: Scaled.apply(x)

    if case in ("setup_context", "setup_context_bias"):    # test_linear_setup_context
        class Lin(Function):
            @staticmethod
            def forward(inp, weight, bias):
                out = inp.mm(weight.t())
                if bias is not None:
                    out += bias.unsqueeze(0).expand_as(out)
                return out

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(*inputs)

            @staticmethod
            def backward(ctx, g):
                inp, weight, bias = ctx.saved_tensors
                gi = gw = gb = None
                if ctx.needs_input_grad[0]:
                    gi = g.mm(weight)
                if ctx.needs_input_grad[1]:
                    gw = g.t().mm(inp)
                if bias is not None and ctx.needs_input_grad[2]:
                    gb = g.sum(0)
                return gi, gw, gb
        weight = rand(T, 9, 4, 3, rg=True)
        bias = rand(T, 8, 4, rg=True) if case.endswith("bias") else None
        return lambda x: (Lin.apply(x, weight, bias), weight, bias)

    if case == "materialize_grads":   # test_materialize_grad: only the first output is used
        class Two(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x.clone(), x.clone()

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append(g2 is None)
                return g1 if g2 is None else g1 + g2
        seen = []
        return lambda x: (Two.apply(x)[0] * 2, seen)

    if case == "stride_in_bwd":       # test_stride_in_bwd
        class Stride(Function):
            @staticmethod
            def forward(ctx, x):
                return T.add(x, x)

            @staticmethod
            def backward(ctx, g):
                return g * g.stride()[-1]
        return lambda x: Stride.apply(x.t())

    if case == "enum_arg":            # test_enum_arg
        class Which(enum.Enum):
            A = 0
            B = 1

        class Pick(Function):
            @staticmethod
            def forward(ctx, x, e):
                return x.sin() if e is Which.A else x.cos()

            @staticmethod
            def backward(ctx, g):
                return g, None
        return lambda x: (Pick.apply(x, Which.A), Pick.apply(x, Which.B))

    if case == "save_for_bwd":        # test_save_for_bwd
        class Saved(Function):
            @staticmethod
            def forward(ctx, x):
                r = x + x
                r = r + x
                ctx.save_for_backward(r)
                return r

            @staticmethod
            def backward(ctx, g):
                (r,) = ctx.saved_tensors
                return g * math.sqrt(r.numel()) + r
        return lambda x: Saved.apply(x)

    if case == "classmethod":         # test_classmethod
        class Shake(Function):
            @classmethod
            def forward(cls, ctx, x):
                return x + x

            @classmethod
            def backward(cls, ctx, g):
                return g * 5
        return lambda x: Shake.apply(x)

    if case in ("save_and_mark", "mark_and_save"):   # test_function_context_mark_and_save
        class Marked(Function):
            @staticmethod
            def forward(ctx, x):
                with T.no_grad():
                    if case == "save_and_mark":
                        ctx.save_for_backward(x)
                        ctx.mark_non_differentiable(x)
                    else:
                        ctx.mark_non_differentiable(x)
                        ctx.save_for_backward(x)
                    return x

            @staticmethod
            def backward(ctx, g):
                return g
        return lambda x: Marked.apply(x.detach())

    if case == "mark_dirty":          # test_mark_dirty_discarded_output_grad
        class TimesThree(Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(3)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3

        def fn(x):
            y = T.ones(3, 3) @ x
            TimesThree.apply(y)            # the output is dropped; y itself was changed
            return y.sum()
        return fn

    assert case == "multi_output"     # test_multi_output
    class Copies(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 + 2 * g2
    return lambda x: Copies.apply(x)


_FN_CASES = ["ctx_attribute", "setup_context", "setup_context_bias", "materialize_grads",
             "stride_in_bwd", "enum_arg", "save_for_bwd", "classmethod", "save_and_mark",
             "mark_and_save", "mark_dirty", "multi_output"]


@pytest.mark.parametrize("case", _FN_CASES)
def test_autograd_function_case(case):
    # test_autograd_function.py::AutogradFunctionTests::<the test named in _fn_case>: output,
    # the input's grad and the grads of tensors the function closes over, after backward of
    # the sum of every tensor output that requires grad
    def build(T, wrap):
        f = wrap(_fn_case(T, case))

        def run(i):
            x = rand(T, i, 3, 3, rg=True)
            out = f(x)
            outs = out if isinstance(out, tuple) else (out,)
            ts = [o for o in outs if hasattr(o, "requires_grad") and o.requires_grad]
            if case == "stride_in_bwd":
                # as the torch test, a contiguous gradient: ``out.sum().backward()``'s is an
                # expanded one whose strides differ (see the module docstring)
                ts[0].backward(x.detach().clone())
            elif ts:
                sum(t.sum() for t in ts).backward()
            extra = [o.grad for o in outs if hasattr(o, "is_leaf") and o.is_leaf and o.requires_grad]
            seen = [o for o in outs if isinstance(o, list)]
            res = (out if case != "materialize_grads" else out[0], x.grad, extra,
                   [list(s) for s in seen])
            for s in seen:
                s.clear()
            for o in outs:
                if hasattr(o, "is_leaf") and o.is_leaf and o.requires_grad:
                    o.grad = None
            return res
        return run
    compare(build)


def test_mark_dirty_on_view_preserves_error():
    # test_autograd_function.py::AutogradFunctionTests::test_mark_dirty_on_view_preserves_error:
    # an in-place Function marked dirty on a view of a leaf that requires grad raises torch's
    # RuntimeError, compiled as in eager
    import tracegrad as tg

    def make(T):
        class AddOne(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        return lambda x: AddOne.apply(x.view_as(x))
    for T, fn in ((torch, make(torch)), (tg, make(tg)), (tg, tg.compile(make(tg)))):
        for i in range(3):
            with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
                fn(rand(T, i, 2, rg=True))
