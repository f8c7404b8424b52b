"""Round 3 of PyTorch's test/test_nn.py (TestNN, TestNNDeviceType) on tracegrad: module API
corners (train mode, register_* errors, containers and Sequential arithmetic, named_* prefixes),
clip_grad/parameter vectors, losses' argument corners, normalization layers without running
stats, RNN cells, Embedding/Fold/Upsample details. Each test names its original; bodies run
under the ``T`` fixture (torch 2.13 then tracegrad, the same asserts) or as ``run_both``
programs that compare values and gradients with torch on the same inputs. Tests already ported
in test_nn_ported.py / test_module_api_ported.py / test_nn_files_ported*.py are not repeated."""
import copy
import math
import pickle
from collections import OrderedDict

import numpy as np
import pytest
from _nn_files_helpers import raises_class, warning_texts
from parity import init_params, log_outcome, randn, run_both


def _linears(T, *sizes):
    return [T.nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]


# ==== Module API ================================================================================
def test_train_errors_for_invalid_mode(T):
    # TestNN.test_train_errors_for_invalid_mode
    class SubclassNet(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = T.nn.Linear(2, 2)

        def forward(self, inputs):
            return self.l1(inputs)

    for net in (SubclassNet(), T.nn.Sequential(T.nn.Linear(2, 2))):
        for mode in ("True", 1, None):
            with pytest.raises(ValueError, match="boolean"):
                net.train(mode)
        net.train(False)
        net.train(True)
        assert net.training


def test_register_buffer_corner_cases(T):
    # TestNN.test_register_buffer_raises_error_if_attr_exists / _allows_overwriting_with_same_name /
    # _allows_tensor_like_object / _fails_on_overwriting_parameter-style checks
    m = T.nn.Module()
    m.attribute_name = 5
    with pytest.raises(KeyError):
        m.register_buffer("attribute_name", T.rand(5))
    del m.attribute_name
    m.register_parameter("attribute_name", T.nn.Parameter())
    with pytest.raises(KeyError):
        m.register_buffer("attribute_name", T.rand(5))
    del m.attribute_name
    m.add_module("attribute_name", T.nn.Module())
    with pytest.raises(KeyError):
        m.register_buffer("attribute_name", T.rand(5))

    m = T.nn.Module()
    b1, b2 = T.rand(5), T.rand(5)
    m.register_buffer("buffer_name", b1)
    m.register_buffer("buffer_name", b2)
    assert m.buffer_name is b2
    m.register_buffer("buffer_name", None)
    assert m.buffer_name is None
    with pytest.raises(TypeError, match="cannot assign"):
        m.register_buffer("b3", 5)


def test_register_parameter_corner_cases(T):
    # TestNN.test_register_parameter_raises_error_if_name_is_not_string / _if_attr_exists /
    # _allows_overwriting_with_same_name / test_add_module_raises_error_if_attr_exists
    m = T.nn.Module()
    with pytest.raises(TypeError, match="parameter name should be a string"):
        m.register_parameter(1, T.nn.Parameter())
    with pytest.raises(TypeError, match="parameter name should be a string"):
        m.register_parameter(None, T.nn.Parameter())
    with pytest.raises(KeyError):
        m.register_parameter("a.b", T.nn.Parameter())
    with pytest.raises(KeyError):
        m.register_parameter("", T.nn.Parameter())
    m.attribute_name = 5
    with pytest.raises(KeyError):
        m.register_parameter("attribute_name", T.nn.Parameter())
    del m.attribute_name
    m.register_buffer("attribute_name", T.rand(5))
    with pytest.raises(KeyError):
        m.register_parameter("attribute_name", T.nn.Parameter())
    m = T.nn.Module()
    p1, p2 = T.nn.Parameter(T.rand(5)), T.nn.Parameter(T.rand(5))
    m.register_parameter("param_name", p1)
    m.register_parameter("param_name", p2)
    assert m.param_name is p2
    with pytest.raises(TypeError, match="cannot assign"):
        m.register_parameter("bad", T.rand(5))
    for fn in (m.add_module, m.register_module):
        with pytest.raises(KeyError):
            fn("param_name", T.nn.Module())
        with pytest.raises(TypeError):
            fn("x", 3)


def test_getattr_with_property(T):
    # TestNN.test_getattr_with_property: an AttributeError inside a property names the missing
    # attribute, not the property
    class Model(T.nn.Module):
        @property
        def some_property(self):
            return self.something_that_doesnt_exist

    # (torch 2.13 names the property itself: Module.__getattr__ runs after the property failed)
    with pytest.raises(AttributeError, match=r"'Model' object has no attribute '(some_property|something_that_doesnt_exist)'"):
        Model().some_property


def test_dir_digit(T):
    # TestNN.test_dir_digit: digit-named submodules do not appear in dir()
    model = T.nn.Sequential(T.nn.Linear(2, 2))
    assert "0" not in dir(model)


def test_call_supports_python_dict_output(T):
    # TestNN.test_call_supports_python_dict_output: a dict output goes through hooks and backward
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = T.nn.Linear(10, 20)
            self.register_backward_hook(self.hook)
            self.check_backward_hook_flag = False

        def hook(self, module, grad_out, grad_in):
            self.check_backward_hook_flag = True

        def forward(self, inputs):
            return {"output": self.l1(inputs).sum()}

    net = Net()
    model_output = net(T.randn([5, 10]))
    model_output["output"].backward()
    assert net.check_backward_hook_flag


def test_children_and_named_children(T):
    # TestNN.test_children / test_named_children: duplicates listed once, prefixes not used
    l1, l2, l3 = T.nn.Linear(2, 2), T.nn.Linear(2, 2), T.nn.Linear(2, 2)
    l4 = T.nn.Linear(2, 2)
    subnet = T.nn.Sequential(l3, l4)
    s = T.nn.Sequential(l1, l2, l1, l2, subnet)
    assert list(s.children()) == [l1, l2, subnet]
    assert list(s.named_children()) == [("0", l1), ("1", l2), ("4", subnet)]
    s.add_module("first", l1)
    with pytest.raises(KeyError, match="already exists"):
        s.register_parameter("first", T.nn.Parameter(T.ones(1)))


def test_buffers_and_named_buffers(T):
    # TestNN.test_buffers_and_named_buffers: recurse, prefix and remove_duplicate
    class Layer(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.buffer1 = T.empty(3, 5)
            self.register_buffer("buffer2", T.empty(3, 5))

    def names(named):
        return [name for name, _ in named]

    lay = Layer()
    assert [t.shape for t in lay.buffers()] == [(3, 5)]
    assert names(lay.named_buffers()) == ["buffer2"]

    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = Layer()
            self.register_buffer("b", T.empty(2))
            self.alias = self.layer

    m = M()
    assert names(m.named_buffers()) == ["b", "layer.buffer2"]
    assert names(m.named_buffers(recurse=False)) == ["b"]
    assert names(m.named_buffers(prefix="pre")) == ["pre.b", "pre.layer.buffer2"]
    assert names(m.named_buffers(remove_duplicate=False)) == ["b", "layer.buffer2", "alias.buffer2"]
    assert len(list(m.buffers(recurse=False))) == 1


def test_parameters_and_named_parameters(T):
    # TestNN.test_parameters_and_named_parameters
    def names(named):
        return [name for name, _ in named]

    lin = T.nn.Linear(5, 3)
    assert names(lin.named_parameters()) == ["weight", "bias"]
    assert names(lin.named_parameters(prefix="pre")) == ["pre.weight", "pre.bias"]
    s = T.nn.Sequential(T.nn.Linear(5, 3), T.nn.ReLU(), T.nn.Sequential(T.nn.Linear(3, 2)))
    assert names(s.named_parameters()) == ["0.weight", "0.bias", "2.0.weight", "2.0.bias"]
    assert names(s.named_parameters(recurse=False)) == []
    assert len(list(s.parameters())) == 4
    s.register_parameter("own", T.nn.Parameter(T.ones(1)))
    assert names(s.named_parameters(recurse=False)) == ["own"]


def test_module_apply_inplace_op(T):
    # TestNN.test_module_apply_inplace_op: an in-place op on a parameter outside no_grad raises;
    # under no_grad it changes the value and bumps the version
    m = T.nn.Linear(20, 10).float()
    pvm = m.weight.mul(m.weight)
    m_weight_version_saved = m.weight._version
    m = m._apply(lambda t: t.add_(1))
    assert m.weight._version > m_weight_version_saved
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        pvm.backward(T.randn(10, 20))


def test_non_leaf_parameters(T):
    # TestNN.test_non_leaf_parameters: assigning a non-leaf tensor as a Parameter raises TypeError
    l1, l2 = T.nn.Linear(10, 10), T.nn.Linear(10, 10)

    def assign_weight():
        l2.weight = l1.weight + 2

    with pytest.raises(TypeError):
        assign_weight()
    l2.weight = T.nn.Parameter(T.randn(10, 10))


def test_container_copy(T):
    # TestNN.test_container_copy: deepcopy of a module is an independent copy with equal values
    class Model(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = T.nn.Linear(4, 5)

        def forward(self, x):
            return self.linear(x)

    x = T.randn(2, 4)
    model = Model()
    model_cp = copy.deepcopy(model)
    assert T.equal(model(x), model_cp(x))
    model_cp.linear.weight.data[:] = 2
    assert not T.equal(model(x), model_cp(x))


def test_module_to_empty(T):
    # TestNNDeviceType.test_module_to_empty (meta -> cpu): to_empty gives fresh storage of the
    # same shapes; values are then set by reset_parameters
    m = T.nn.Linear(3, 2, device="meta")
    assert m.weight.is_meta
    m.to_empty(device="cpu")
    assert m.weight.device.type == "cpu" and m.weight.shape == (2, 3)
    assert isinstance(m.weight, T.nn.Parameter)
    m.reset_parameters()
    assert m(T.ones(1, 3)).shape == (1, 2)


def test_parameterlistdict_setting_attributes(T):
    # TestNN.test_parameterlistdict_setting_attributes: setting attributes warns nothing;
    # train()/eval() propagate
    mod = T.nn.ParameterList(map(T.nn.Parameter, [T.rand(2), T.rand(2)]))
    assert warning_texts(lambda: mod.train()) == []
    assert warning_texts(lambda: mod.eval()) == []
    mod = T.nn.ParameterDict({"a": T.nn.Parameter(T.rand(2)), "b": T.nn.Parameter(T.rand(2))})
    assert warning_texts(lambda: mod.train()) == []
    assert not mod.eval().training


def test_parameterlistdict_pickle(T):
    # TestNN.test_parameterlistdict_pickle: both containers survive pickle with their values
    m = T.nn.ParameterList(map(T.nn.Parameter, [T.rand(2), T.rand(2)]))
    m2 = pickle.loads(pickle.dumps(m))
    assert all(T.equal(a, b) for a, b in zip(m, m2)) and len(m2) == 2
    m = T.nn.ParameterDict({"a": T.nn.Parameter(T.rand(2)), "b": T.nn.Parameter(T.rand(2))})
    m2 = pickle.loads(pickle.dumps(m))
    assert list(m2.keys()) == ["a", "b"] and T.equal(m2["a"], m["a"])


# ==== containers =================================================================================
def test_Sequential_setitem(T):
    # TestNN.test_Sequential_setitem / test_Sequential_setitem_named
    l1, l2, l3, l4 = _linears(T, 1, 2, 3, 4, 5)
    n = T.nn.Sequential(l1, l2, l3)
    n[0] = l4
    n[-1] = l4
    n[T.tensor(1, dtype=T.int16)] = l1
    assert list(n) == [l4, l1, l4]
    n = T.nn.Sequential(OrderedDict([("linear1", l1), ("linear2", l2), ("linear3", l3)]))
    n[0] = l4
    n[-1] = l4
    assert n.linear1 is l4 and n.linear3 is l4
    with pytest.raises(IndexError):
        n[3] = l1


def test_Sequential_delitem(T):
    # TestNN.test_Sequential_delitem
    l1, l2, l3, l4 = _linears(T, 1, 2, 3, 4, 5)
    n = T.nn.Sequential(l1, l2, l3, l4)
    del n[-1]
    assert list(n) == [l1, l2, l3]
    del n[1::2]
    assert list(n) == [l1, l3]
    assert list(n._modules) == ["0", "1"]


def test_Sequential_add_mul(T):
    # TestNN.test_Sequential_add / _iadd / _mul / _rmul / _imul
    l1, l2, l3, l4 = _linears(T, 1, 2, 3, 4, 5)
    n, other = T.nn.Sequential(l1, l2), T.nn.Sequential(l3, l4)
    assert list(n + other) == [l1, l2, l3, l4]
    n = T.nn.Sequential(l1, l2, l3)
    n2 = T.nn.Sequential(l4)
    n += n2
    n2 += n
    assert list(n) == [l1, l2, l3, l4]
    assert list(n2) == [l4, l1, l2, l3, l4]
    n = T.nn.Sequential(l1, l2, l3, l4)
    assert list(n * 2) == [l1, l2, l3, l4] * 2
    assert list(2 * n) == [l1, l2, l3, l4] * 2
    n *= 2
    assert list(n) == [l1, l2, l3, l4] * 2
    with pytest.raises(ValueError):
        n * 0
    with pytest.raises(TypeError):
        n * 1.5
    with pytest.raises(ValueError):
        n + T.nn.Linear(1, 1)


def test_Sequential_append_insert_extend_pop(T):
    # TestNN.test_Sequential_append / _pop / _insert / _insert_fail_case / _extend
    l1, l2, l3, l4 = _linears(T, 1, 2, 3, 4, 5)
    n = T.nn.Sequential(l1, l2, l3)
    n2 = n.append(l4)
    assert n2 is n and list(n) == [l1, l2, l3, l4]
    assert list(T.nn.Sequential(l1).append(l2).append(l4)) == [l1, l2, l4]

    n = T.nn.Sequential(l1, l2, l3, l4)
    popped = n.pop(1)
    assert popped is l2 and list(n) == [l1, l3, l4]
    assert n.pop(-1) is l4 and list(n) == [l1, l3]

    n = T.nn.Sequential(l1, l2, l3)
    module_1 = T.nn.Linear(4, 6)
    n.insert(1, module_1)
    assert list(n) == [l1, module_1, l2, l3]
    n.insert(-1, l4)
    assert list(n) == [l1, module_1, l2, l4, l3]
    n.insert(5, l4)
    assert list(n)[-1] is l4
    with pytest.raises(IndexError):
        n.insert(-7, l1)
    with pytest.raises(IndexError):
        n.insert(8, l1)
    with pytest.raises(AssertionError):
        n.insert(0, 3)

    a, b = T.nn.Sequential(l1, l2), T.nn.Sequential(l3, l4)
    a.extend(b)
    assert list(a) == [l1, l2, l3, l4]
    a = T.nn.Sequential(l1)
    a.extend([l2, l3])
    assert list(a) == [l1, l2, l3]


def test_Sequential_forward_and_repr(T):
    # TestNN.test_Sequential_getitem slicing keeps names; Sequential.__repr__/__dir__ of a
    # named Sequential; the forward of an empty Sequential is the identity
    n = T.nn.Sequential(OrderedDict([("a", T.nn.ReLU()), ("b", T.nn.Tanh()), ("c", T.nn.Identity())]))
    assert list(n[1:]._modules) == ["b", "c"]
    assert type(n[1:]) is T.nn.Sequential
    assert repr(n) == "Sequential(\n  (a): ReLU()\n  (b): Tanh()\n  (c): Identity()\n)"
    assert "a" in dir(n)
    x = T.randn(3)
    assert T.nn.Sequential()(x) is x
    assert len(n) == 3 and len(n[:0]) == 0


def test_ModuleDict_api(T):
    # TestNN.test_ModuleDict: update from dict/list/ModuleDict, pop, clear, keys order, errors
    modules = OrderedDict([("act", T.nn.ReLU()), ("conv", T.nn.Conv2d(10, 10, 5)), ("fc", T.nn.Linear(5, 5))])
    module_dict = T.nn.ModuleDict(modules)

    def check():
        assert len(module_dict) == len(modules)
        for k1, m2 in zip(modules, module_dict.children()):
            assert modules[k1] is m2
        for k1, k2 in zip(modules, module_dict):
            assert modules[k1] is module_dict[k2]
        for k in module_dict:
            assert module_dict[k] is modules[k]
        for k in module_dict.keys():
            assert module_dict[k] is modules[k]
        for k, v in module_dict.items():
            assert modules[k] is v
        for k1, m2 in zip(modules, module_dict.values()):
            assert modules[k1] is m2
        for k in modules:
            assert k in module_dict

    check()
    modules["conv"] = T.nn.Conv2d(3, 4, 3)
    module_dict["conv"] = modules["conv"]
    check()
    next_modules = [("fc2", T.nn.Linear(5, 5)), ("act", T.nn.Sigmoid())]
    modules.update(next_modules)
    module_dict.update(next_modules)
    check()
    next_modules = OrderedDict([("fc3", T.nn.Linear(5, 5)), ("act2", T.nn.Sigmoid())])
    modules.update(next_modules)
    module_dict.update(next_modules)
    check()
    next_modules = T.nn.ModuleDict([("fc4", T.nn.Linear(5, 5)), ("act3", T.nn.Sigmoid())])
    modules.update(next_modules.items())
    module_dict.update(next_modules)
    check()
    del module_dict["fc"]
    del modules["fc"]
    check()
    with pytest.raises(TypeError):
        module_dict.update(T.nn.ReLU())
    with pytest.raises(TypeError):
        module_dict.update([T.nn.ReLU()])
    with pytest.raises(ValueError):
        module_dict.update([[T.nn.ReLU()]])
    with pytest.raises(TypeError):
        module_dict[1] = T.nn.ReLU()
    s = T.nn.Sequential(modules)
    module_dict = T.nn.ModuleDict(s.named_children())
    check()
    c = module_dict.pop("conv")
    assert c is modules["conv"]
    modules.pop("conv")
    check()
    module_dict.clear()
    assert len(module_dict) == 0
    modules.clear()
    check()
    module_dict.update({"b": T.nn.ReLU(), "a": T.nn.Tanh()})
    assert list(module_dict.keys()) == ["b", "a"]


def test_ModuleList_extend_insert_errors(T):
    # TestNN.test_ModuleList (the slicing, += and error corners)
    modules = [T.nn.ReLU(), T.nn.Linear(5, 5)]
    module_list = T.nn.ModuleList(modules)
    module_list += [T.nn.Tanh()]
    module_list.insert(0, T.nn.Sigmoid())
    module_list.insert(3, T.nn.Identity())
    assert [type(m).__name__ for m in module_list] == ["Sigmoid", "ReLU", "Linear", "Identity", "Tanh"]
    assert isinstance(module_list[1:3], T.nn.ModuleList) and len(module_list[1:3]) == 2
    assert [type(m).__name__ for m in module_list[::-1]][0] == "Tanh"
    del module_list[1::2]
    assert [type(m).__name__ for m in module_list] == ["Sigmoid", "Linear", "Tanh"]
    assert module_list.pop(1).__class__.__name__ == "Linear"
    with pytest.raises(TypeError):
        module_list += T.nn.ReLU()
    with pytest.raises(TypeError):
        module_list.extend(T.nn.ReLU())
    with pytest.raises(IndexError):
        module_list[10]
    l1 = T.nn.Linear(1, 2)
    a = T.nn.ModuleList([l1]) + T.nn.ModuleList([l1])
    assert len(a) == 2 and a[0] is a[1] and len(list(a.parameters())) == 2


def test_ParameterList_and_Dict_repr(T):
    # TestNN.test_ParameterList / test_ParameterDict repr lines (dtype, size, device of entries)
    pl = T.nn.ParameterList([T.nn.Parameter(T.zeros(2, 3)), T.nn.Parameter(T.zeros(1, dtype=T.float64))])
    assert repr(pl) == ("ParameterList(\n    (0): Parameter containing: [torch.float32 of size 2x3]\n"
                        "    (1): Parameter containing: [torch.float64 of size 1]\n)")
    pd = T.nn.ParameterDict({"w": T.nn.Parameter(T.zeros(4))})
    assert repr(pd) == "ParameterDict(  (w): Parameter containing: [torch.FloatTensor of size 4])"


def test_state_dict_prefix_and_keep_vars(T):
    # TestNN.test_state_dict: prefixes of nested modules, shared modules listed once per path,
    # keep_vars gives the Parameters themselves, values detached otherwise
    l = T.nn.Linear(5, 5)
    block = T.nn.Module()
    block.conv = T.nn.Conv2d(3, 3, 3, bias=False)
    net = T.nn.Module()
    net.linear1 = l
    net.linear2 = l
    net.bn = T.nn.BatchNorm2d(2)
    net.block = block
    net.add_module("empty", None)
    sd = net.state_dict()
    assert list(sd) == ["linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                        "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                        "bn.num_batches_tracked", "block.conv.weight"]
    assert sd["linear1.weight"].data_ptr() == l.weight.data_ptr()
    assert not sd["linear1.weight"].requires_grad
    sd = net.state_dict(keep_vars=True)
    assert sd["linear1.weight"] is l.weight
    sd = net.state_dict(prefix="p.")
    assert next(iter(sd)) == "p.linear1.weight"


def test_load_state_dict_errors(T):
    # TestNN.test_load_state_dict (strict errors: missing/unexpected keys, shape mismatch, the
    # returned named tuple with strict=False)
    net = T.nn.Sequential(T.nn.Linear(2, 3), T.nn.BatchNorm1d(3))
    sd = net.state_dict()
    bad = dict(sd)
    bad["extra"] = T.ones(1)
    with pytest.raises(RuntimeError, match="Unexpected key"):
        net.load_state_dict(bad)
    r = net.load_state_dict(bad, strict=False)
    assert r.unexpected_keys == ["extra"] and r.missing_keys == []
    bad = dict(sd)
    del bad["0.bias"]
    with pytest.raises(RuntimeError, match="Missing key"):
        net.load_state_dict(bad)
    assert net.load_state_dict(bad, strict=False).missing_keys == ["0.bias"]
    bad = dict(sd)
    bad["0.weight"] = T.ones(4, 4)
    with pytest.raises(RuntimeError, match="size mismatch"):
        net.load_state_dict(bad)
    with pytest.raises(TypeError):
        net.load_state_dict([1, 2])


# ==== clip_grad / parameter vectors ==============================================================
@pytest.mark.parametrize("foreach", [False, True])
def test_clip_grad_norm_error_if_nonfinite(foreach):
    # TestNNDeviceType.test_clip_grad_norm_error_if_nonfinite: inf/nan norms raise with
    # error_if_nonfinite, otherwise the (nonfinite) total norm comes back and grads are scaled
    def program(T, log):
        for norm_type in (2.0, float("inf"), 1.0):
            for bad in (float("inf"), float("nan")):
                for flag in (False, True):
                    p = T.nn.Parameter(T.ones(3))
                    q = T.nn.Parameter(T.ones(2))
                    p.grad = T.tensor([1.0, bad, 2.0])
                    q.grad = T.tensor([3.0, 4.0])
                    key = f"{norm_type} {bad} {flag}"
                    log_outcome(log, key, lambda: T.nn.utils.clip_grad_norm_(
                        [p, q], 1.0, norm_type=norm_type, error_if_nonfinite=flag, foreach=foreach))
                    log(key + " q.grad", q.grad)
    run_both(program)


@pytest.mark.parametrize("norm_type", [0.5, 1.0, 2.0, 4.0, float("inf")])
def test_clip_grad_norm_norm_types(norm_type):
    # TestNN.test_clip_grad_norm (the norm types, max_norm above the norm leaves grads alone,
    # a single tensor instead of an iterable, parameters without grads skipped)
    def program(T, log):
        l = T.nn.Linear(5, 4)
        init_params(T, l, 0)
        l.weight.grad = randn(T, (4, 5), 1)
        l.bias.grad = randn(T, (4,), 2, scale=3.0)
        log("norm", T.nn.utils.clip_grad_norm_(l.parameters(), 1.25, norm_type=norm_type))
        log("grads", [l.weight.grad, l.bias.grad])
        log("unclipped", T.nn.utils.clip_grad_norm_(l.parameters(), 1e6, norm_type=norm_type))
        log("grads after", [l.weight.grad, l.bias.grad])
        p = T.nn.Parameter(T.ones(3))
        p.grad = T.tensor([3.0, -4.0, 0.0])
        log("single tensor", [T.nn.utils.clip_grad_norm_(p, 1.0, norm_type=norm_type), p.grad])
        log("no grads", T.nn.utils.clip_grad_norm_([T.nn.Parameter(T.ones(2))], 1.0, norm_type))
        log("get_total_norm", T.nn.utils.get_total_norm([randn(T, (3,), 4), randn(T, (2, 2), 5)], norm_type))
    run_both(program)


@pytest.mark.parametrize("foreach", [None, False, True])
def test_clip_grad_value(foreach):
    # TestNNDeviceType.test_clip_grad_value (foreach variants; a None grad is skipped)
    def program(T, log):
        l = T.nn.Linear(10, 10)
        init_params(T, l, 0)
        l.weight.grad = randn(T, (10, 10), 1, scale=2.0)
        l.bias.grad = None
        T.nn.utils.clip_grad_value_(l.parameters(), 0.5, foreach=foreach)
        log("weight grad", l.weight.grad)
        log("bias grad", l.bias.grad)
        p = T.nn.Parameter(T.ones(2))
        p.grad = T.tensor([-2.0, 0.25])
        T.nn.utils.clip_grad_value_(p, 1.0, foreach=foreach)
        log("single", p.grad)
    run_both(program)


def test_vector_to_parameters():
    # TestNN.test_vector_to_parameters (+ parameters_to_vector errors on a non-tensor vector)
    def program(T, log):
        conv1 = T.nn.Conv2d(3, 10, 5)
        fc1 = T.nn.Linear(10, 20)
        model = T.nn.Sequential(conv1, fc1)
        vec = T.arange(0.0, 980.0)
        T.nn.utils.vector_to_parameters(vec, model.parameters())
        sample = next(model.parameters())[0, 0, 0]
        log("sample", sample)
        log("round trip", T.nn.utils.parameters_to_vector(model.parameters())[:5])
        log_outcome(log, "not a tensor", lambda: T.nn.utils.vector_to_parameters([1.0], model.parameters()))
        log_outcome(log, "too short", lambda: T.nn.utils.vector_to_parameters(T.ones(3), model.parameters()))
    run_both(program)


# ==== losses =====================================================================================
def test_cross_entropy_label_smoothing():
    # TestNNDeviceType.test_cross_entropy_label_smoothing_consistent_index_target_and_probs /
    # _with_probs / _weight_ignore_indices / _errors
    def program(T, log):
        F = T.nn.functional
        x = randn(T, (5, 4, 3), 0, requires_grad=True)
        target = T.tensor([[0, 1, 2], [3, 0, 1], [2, 2, 0], [1, 3, 3], [0, 0, 1]])
        weight = T.tensor([0.5, 1.0, 2.0, 1.5])
        for reduction in ("none", "mean", "sum"):
            for ls in (0.0, 0.25, 1.0):
                out = F.cross_entropy(x, target, reduction=reduction, label_smoothing=ls)
                log(f"{reduction} {ls}", out)
                out_w = F.cross_entropy(x, target, weight=weight, reduction=reduction, label_smoothing=ls,
                                        ignore_index=1)
                log(f"{reduction} {ls} weight ignore", out_w)
        probs = T.softmax(randn(T, (5, 4, 3), 1), 1)
        log("probs", F.cross_entropy(x, probs, label_smoothing=0.3))
        log("probs weight", F.cross_entropy(x, probs, weight=weight, label_smoothing=0.3, reduction="sum"))
        F.cross_entropy(x, target, weight=weight, label_smoothing=0.2, ignore_index=0).backward()
        log("grad", x.grad)
        for ls in (-0.1, 1.1):
            log_outcome(log, f"ls {ls}", lambda: F.cross_entropy(x, target, label_smoothing=ls))
        log("module repr", repr(T.nn.CrossEntropyLoss(label_smoothing=0.1)))
    run_both(program)


def test_cross_entropy_loss_one_hot_and_prob_targets():
    # TestNNDeviceType.test_cross_entropy_loss_one_hot_target / _prob_target_all_reductions /
    # _prob_target_unit_weights / test_cross_entropy_loss_prob_target_no_batch_dim
    def program(T, log):
        F = T.nn.functional
        x = randn(T, (4, 3), 2, requires_grad=True)
        target = T.tensor([0, 2, 1, 2])
        one_hot = F.one_hot(target, 3).float()
        w = T.tensor([1.0, 2.0, 0.5])
        for reduction in ("none", "mean", "sum"):
            log(f"index {reduction}", F.cross_entropy(x, target, weight=w, reduction=reduction))
            log(f"one_hot {reduction}", F.cross_entropy(x, one_hot, weight=w, reduction=reduction))
            log(f"unit weights {reduction}", F.cross_entropy(x, one_hot, weight=T.ones(3), reduction=reduction))
        log("no batch dim", F.cross_entropy(x[0], one_hot[0]))
        log_outcome(log, "prob target wrong shape", lambda: F.cross_entropy(x, one_hot[:2]))
        log_outcome(log, "prob target int with ignore_index", lambda: F.cross_entropy(x, one_hot, ignore_index=1))
    run_both(program)


def test_nll_loss_corner_cases():
    # TestNNDeviceType.test_nll_loss_empty_tensor_reduction_none/_mean/_sum,
    # test_nll_loss_invalid_target_dim, test_nll_loss_invalid_weights,
    # test_nll_loss_all_ignored (mean of all-ignored targets is nan), test_nll_loss_byte_target_matches_long
    def program(T, log):
        F = T.nn.functional
        x = T.zeros(0, 3)
        t = T.zeros(0, dtype=T.long)
        for reduction in ("none", "mean", "sum"):
            log(f"empty {reduction}", F.nll_loss(x, t, reduction=reduction))
        x = T.log_softmax(randn(T, (4, 3), 0), 1)
        log_outcome(log, "target dim", lambda: F.nll_loss(x, T.zeros(4, 2, dtype=T.long)))
        log_outcome(log, "weight size", lambda: F.nll_loss(x, T.zeros(4, dtype=T.long), weight=T.ones(4)))
        log_outcome(log, "weight 2d", lambda: F.nll_loss(x, T.zeros(4, dtype=T.long), weight=T.ones(3, 1)))
        log_outcome(log, "batch mismatch", lambda: F.nll_loss(x, T.zeros(3, dtype=T.long)))
        log("all ignored mean", F.nll_loss(x, T.full((4,), 1, dtype=T.long), ignore_index=1))
        log("all ignored sum", F.nll_loss(x, T.full((4,), 1, dtype=T.long), ignore_index=1, reduction="sum"))
        log_outcome(log, "float target", lambda: F.nll_loss(x, T.zeros(4)))
    run_both(program)


def test_loss_argument_checks():
    # TestNN.test_smoothl1loss_negative_beta_not_supported / test_huber_loss_invalid_delta /
    # test_loss_equal_input_target_shape / test_mse_loss_size_warning /
    # test_KLDivLoss_batch_mean / test_KLDivLoss_batch_mean_log_target
    def program(T, log):
        F = T.nn.functional
        x, y = randn(T, (3, 5), 0), randn(T, (3, 5), 1)
        log_outcome(log, "smooth_l1 negative beta", lambda: F.smooth_l1_loss(x, y, beta=-1.0))
        log("smooth_l1 beta 0", F.smooth_l1_loss(x, y, beta=0.0))
        for delta in (0.0, -1.0):
            log_outcome(log, f"huber delta {delta}", lambda: F.huber_loss(x, y, delta=delta))
        for fn in (F.l1_loss, F.mse_loss, F.smooth_l1_loss, F.huber_loss, F.soft_margin_loss):
            log_outcome(log, f"{fn.__name__} shape mismatch", lambda: fn(x, randn(T, (3, 4), 2)))
        _, w = warning_texts_and_result(lambda: F.mse_loss(randn(T, (3, 1), 3), randn(T, (3,), 4)))
        log("mse broadcast warns", w)
        logp = T.log_softmax(randn(T, (2, 5), 5), 1)
        p = T.softmax(randn(T, (2, 5), 6), 1)
        log("kl batchmean", F.kl_div(logp, p, reduction="batchmean"))
        log("kl batchmean log_target", F.kl_div(logp, p.log(), reduction="batchmean", log_target=True))
        log("kl sum / batch", T.nn.KLDivLoss(reduction="sum")(logp, p) / 2)
        log_outcome(log, "bad reduction", lambda: F.l1_loss(x, y, reduction="avg"))
    run_both(program)


def warning_texts_and_result(fn):
    """``(fn(), [warning category names])``."""
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [x.category.__name__ for x in w]


def test_margin_ranking_and_cosine_embedding_loss():
    # TestNN.test_margin_ranking_loss_no_reduce / _margin_no_reduce (new_module_tests),
    # test_cosine_embedding_loss_with_diff_type / _error_on_diff_shapes / _invalid_shape /
    # test_cosine_embedding_loss_no_reduce / _margin_no_reduce
    def program(T, log):
        F = T.nn.functional
        i1 = randn(T, (10,), 0, requires_grad=True)
        i2 = randn(T, (10,), 1, requires_grad=True)
        target = T.tensor([1, -1, 1, 1, -1, -1, 1, -1, 1, 1], dtype=T.float32)
        out = F.margin_ranking_loss(i1, i2, target, reduction="none")
        log("mrl none", out)
        out2 = F.margin_ranking_loss(i1, i2, target, margin=0.5, reduction="none")
        log("mrl margin", out2)
        (out + out2).sum().backward()
        log("mrl grads", [i1.grad, i2.grad])
        log("mrl module", T.nn.MarginRankingLoss(margin=0.1)(i1, i2, target))
        a = randn(T, (6, 4), 2, requires_grad=True)
        b = randn(T, (6, 4), 3, requires_grad=True)
        t = T.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
        out = F.cosine_embedding_loss(a, b, t, reduction="none")
        log("cel none", out)
        out2 = F.cosine_embedding_loss(a, b, t, margin=0.3)
        log("cel margin", out2)
        (out.sum() + out2).backward()
        log("cel grads", [a.grad, b.grad])
        log("cel 1d", F.cosine_embedding_loss(a[0].detach(), b[0].detach(), T.tensor(1.0)))
        log("cel diff type", F.cosine_embedding_loss(a.double(), b.double(), t.long()))
        log_outcome(log, "cel diff shapes", lambda: F.cosine_embedding_loss(a, b[:, :3], t))
        log_outcome(log, "cel target dims", lambda: F.cosine_embedding_loss(a, b, t.unsqueeze(1)))
        log_outcome(log, "cel 3d input", lambda: F.cosine_embedding_loss(a.unsqueeze(0), b.unsqueeze(0), t))
    run_both(program)


def test_triplet_margin_with_distance_loss():
    # TestNN.test_triplet_margin_with_distance_loss_default_parity /
    # test_triplet_margin_with_distance_loss (custom distance, swap, margin, reductions)
    def program(T, log):
        F, nn = T.nn.functional, T.nn
        a = randn(T, (5, 4), 0, requires_grad=True)
        p = randn(T, (5, 4), 1, requires_grad=True)
        n = randn(T, (5, 4), 2, requires_grad=True)
        for reduction in ("none", "mean", "sum"):
            for swap in (False, True):
                log(f"default {reduction} {swap}",
                    F.triplet_margin_with_distance_loss(a, p, n, swap=swap, reduction=reduction))
                log(f"parity {reduction} {swap}",
                    F.triplet_margin_loss(a, p, n, swap=swap, reduction=reduction))

        def cos_dist(x, y):
            return 1.0 - F.cosine_similarity(x, y)

        mod = nn.TripletMarginWithDistanceLoss(distance_function=cos_dist, margin=0.7, swap=True)
        out = mod(a, p, n)
        out.backward()
        log("cosine", out)
        log("grads", [a.grad, p.grad, n.grad])
        log("pairwise module", nn.TripletMarginWithDistanceLoss(distance_function=nn.PairwiseDistance())(a, p, n))
        log_outcome(log, "margin <= 0", lambda: F.triplet_margin_with_distance_loss(a, p, n, margin=0.0))
        log_outcome(log, "dims differ", lambda: F.triplet_margin_with_distance_loss(a, p[0], n))
    run_both(program)


def test_ctc_loss_reductions_and_zero_infinity():
    # TestNN.test_CTCLoss_typechecks / TestNNDeviceType.test_CTCLoss_no_batch_dim /
    # test_ctc_loss zero_infinity (an impossible alignment gives inf, or 0 with zero_infinity)
    def program(T, log):
        F = T.nn.functional
        lp = T.log_softmax(randn(T, (6, 2, 4), 0), 2).detach().requires_grad_()
        targets = T.tensor([[1, 2, 2], [3, 1, 0]])
        il = T.tensor([6, 5])
        tl = T.tensor([3, 2])
        for reduction in ("none", "mean", "sum"):
            log(reduction, F.ctc_loss(lp, targets, il, tl, reduction=reduction))
        loss = F.ctc_loss(lp, targets, il, tl)
        loss.backward()
        log("grad", lp.grad)
        impossible = T.tensor([[1, 1, 1], [2, 2, 2]])
        log("impossible", F.ctc_loss(lp, impossible, T.tensor([2, 2]), tl, reduction="none"))
        log("zero_infinity", F.ctc_loss(lp, impossible, T.tensor([2, 2]), tl, reduction="none",
                                        zero_infinity=True))
        log("no batch dim", F.ctc_loss(lp[:, 0], targets[0], il[:1].squeeze(), tl[:1].squeeze()))
        log("concat targets", F.ctc_loss(lp, T.tensor([1, 2, 2, 3, 1]), il, tl))
        log_outcome(log, "float lengths", lambda: F.ctc_loss(lp, targets, il.float(), tl))
        log("module", T.nn.CTCLoss(blank=0, reduction="sum")(lp, targets, il, tl))
    run_both(program)


# ==== normalization ==============================================================================
def test_batchnorm_buffer_update_when_stats_are_not_tracked():
    # TestNN.test_batchnorm_buffer_update_when_stats_are_not_tracked: with track_running_stats
    # False set after construction, training forward leaves the buffers alone
    def program(T, log):
        bn = T.nn.BatchNorm1d(3, track_running_stats=True)
        bn.track_running_stats = False
        before = [bn.running_mean.clone(), bn.running_var.clone(), bn.num_batches_tracked.clone()]
        out = bn(randn(T, (4, 3), 0))
        log("out", out)
        log("buffers unchanged", [T.equal(a, b) for a, b in
                                  zip(before, [bn.running_mean, bn.running_var, bn.num_batches_tracked])])
    run_both(program)


def test_batchnorm_momentum_none_and_no_stats():
    # TestNN.test_batchnorm_simple_average (momentum=None: cumulative average) /
    # test_batchnorm_eval without running stats / test_batchnorm_raises_error_if_running_mean_is_not_same_size_as_input /
    # test_batchnorm_raises_error_if_less_than_one_value_per_channel
    def program(T, log):
        F = T.nn.functional
        bn = T.nn.BatchNorm1d(3, momentum=None)
        x1, x2 = randn(T, (5, 3), 0), randn(T, (5, 3), 1, scale=2.0)
        bn(x1)
        bn(x2)
        log("simple average mean", bn.running_mean)
        log("simple average var", bn.running_var)
        log("num_batches_tracked", bn.num_batches_tracked)
        bn0 = T.nn.BatchNorm1d(3, momentum=0.3)
        bn0(x1)
        bn0(x2)
        log("momentum 0.3", [bn0.running_mean, bn0.running_var])
        nost = T.nn.BatchNorm1d(3, track_running_stats=False).eval()
        log("eval without stats", nost(x1))
        log("buffers", [nost.running_mean, nost.running_var, nost.num_batches_tracked])
        log_outcome(log, "mean size", lambda: F.batch_norm(x1, T.zeros(4), T.ones(3), training=True))
        log_outcome(log, "var size", lambda: F.batch_norm(x1, T.zeros(3), T.ones(4)))
        log_outcome(log, "one value per channel", lambda: T.nn.BatchNorm1d(3)(randn(T, (1, 3), 2)))
        log("one value per channel eval", T.nn.BatchNorm1d(3).eval()(randn(T, (1, 3), 2)))
        log_outcome(log, "wrong dim", lambda: T.nn.BatchNorm2d(3)(randn(T, (2, 3), 3)))
    run_both(program)


def test_instancenorm_corner_cases():
    # TestNN.test_instancenorm_raises_error_if_less_than_one_value_per_channel /
    # test_instancenorm_raises_error_for_single_spatial_element_during_training /
    # InstanceNorm with track_running_stats (eval uses them) and unbatched inputs
    def program(T, log):
        nn = T.nn
        log_outcome(log, "one value", lambda: nn.InstanceNorm1d(4)(randn(T, (2, 4, 1), 0)))
        log_outcome(log, "one value affine", lambda: nn.InstanceNorm2d(4, affine=True)(randn(T, (2, 4, 1, 1), 0)))
        m = nn.InstanceNorm1d(3, track_running_stats=True, momentum=0.2)
        x = randn(T, (2, 3, 5), 1)
        log("train", m(x))
        log("stats", [m.running_mean, m.running_var, m.num_batches_tracked])
        m.eval()
        log("eval", m(x))
        log("unbatched", nn.InstanceNorm1d(3)(randn(T, (3, 5), 2)))
        log("repr", repr(m))
    run_both(program)


def test_groupnorm_and_layernorm_corner_cases():
    # TestNN.test_groupnorm_raises_error_if_one_value_per_group /
    # TestNNDeviceType.test_GroupNorm_general (channels not divisible) /
    # test_layer_norm_grads_with_create_graph_flag / LayerNorm without affine / bias=False
    def program(T, log):
        nn, F = T.nn, T.nn.functional
        log_outcome(log, "one value per group", lambda: nn.GroupNorm(10, 10)(randn(T, (1, 10, 1), 0)))
        log_outcome(log, "not divisible", lambda: nn.GroupNorm(3, 10))
        log_outcome(log, "F not divisible", lambda: F.group_norm(randn(T, (2, 10, 3), 0), 3))
        g = nn.GroupNorm(2, 4)
        init_params(T, g, 0)
        log("gn", g(randn(T, (3, 4, 5), 1)))
        x = randn(T, (2, 3, 4), 2, requires_grad=True)
        ln = nn.LayerNorm([3, 4])
        init_params(T, ln, 1)
        out = ln(x)
        grads = T.autograd.grad(out.pow(2).sum(), [x, ln.weight], create_graph=True)
        log("create_graph grads", grads)
        (grads[0].sum() + grads[1].sum()).backward()
        log("second order", x.grad)
        log("no affine", [nn.LayerNorm(4, elementwise_affine=False)(x.detach()), len(list(nn.LayerNorm(4, elementwise_affine=False).parameters()))])
        log("bias False", [n for n, _ in nn.LayerNorm(4, bias=False).named_parameters()])
        log_outcome(log, "shape mismatch", lambda: F.layer_norm(x, [5]))
    run_both(program)


# ==== RNNs ========================================================================================
def test_RNN_cell_checks():
    # TestNN.test_RNN_cell_forward_input_size / _forward_hidden_size / test_RNN_cell_no_broadcasting /
    # test_RNN_cell (unbatched input, no hidden state)
    def program(T, log):
        nn = T.nn
        for cls in (nn.RNNCell, nn.GRUCell, nn.LSTMCell):
            cell = cls(3, 4)
            init_params(T, cell, 0)
            name = cls.__name__
            log_outcome(log, f"{name} input size", lambda: cell(randn(T, (2, 5), 1)))
            hx = randn(T, (2, 5), 2)
            h = (hx, hx) if cls is nn.LSTMCell else hx
            log_outcome(log, f"{name} hidden size", lambda: cell(randn(T, (2, 3), 1), h))
            hb = randn(T, (1, 4), 3)
            h = (hb, hb) if cls is nn.LSTMCell else hb
            log_outcome(log, f"{name} no broadcasting", lambda: cell(randn(T, (2, 3), 1), h))
            log(f"{name} unbatched", cell(randn(T, (3,), 4)))
            log(f"{name} batched", cell(randn(T, (2, 3), 5)))
            log_outcome(log, f"{name} 3d input", lambda: cell(randn(T, (1, 2, 3), 1)))
        log_outcome(log, "bad nonlinearity", lambda: nn.RNNCell(3, 4, nonlinearity="garbage")(randn(T, (2, 3), 0)))
    run_both(program)


def test_RNN_nonlinearity_and_hidden_shapes():
    # TestNN.test_RNN_nonlinearity / test_RNN_nonlinearity_passed_as_arg /
    # test_rnn_initial_hidden_state / RNN output and hidden shapes for batch_first,
    # bidirectional and proj_size
    def program(T, log):
        nn = T.nn
        log("default", nn.RNN(1, 10).nonlinearity)
        log("relu kw", nn.RNN(1, 10, nonlinearity="relu").nonlinearity)
        log("relu positional", nn.RNN(1, 10, 1, "relu").nonlinearity)
        log_outcome(log, "bad", lambda: nn.RNN(1, 10, nonlinearity="garbage"))
        x = randn(T, (2, 3, 4), 0)
        for mode in ("RNN", "GRU", "LSTM"):
            rnn = getattr(nn, mode)(4, 5, num_layers=2, bidirectional=True, batch_first=True)
            init_params(T, rnn, 1)
            out, h = rnn(x)
            h0 = T.zeros(4, 2, 5)
            hx = (h0, h0) if mode == "LSTM" else h0
            out0, _ = rnn(x, hx)
            log(f"{mode} zero hidden == default", T.allclose(out, out0))
            log(f"{mode} shapes", [out.shape, (h[0] if mode == "LSTM" else h).shape])
            log(f"{mode} out", out)
        lstm = nn.LSTM(4, 6, proj_size=3, num_layers=2, bidirectional=True)
        init_params(T, lstm, 2)
        out, (h, c) = lstm(x)
        log("proj shapes", [out.shape, h.shape, c.shape])
        log("proj param names", [n for n, _ in lstm.named_parameters()][:5])
        log("proj out", out)
        log_outcome(log, "proj bad h0", lambda: lstm(x, (T.zeros(4, 3, 6), T.zeros(4, 3, 6))))
        log("unbatched", nn.GRU(4, 5)(x[0])[0].shape)
        log_outcome(log, "hx batched with unbatched x", lambda: nn.GRU(4, 5)(x[0], T.zeros(1, 2, 5)))
    run_both(program)


def test_rnn_flatten_parameters_and_dropout_attrs(T):
    # TestNN.test_RNN_change_dropout / flatten_parameters is a no-op on CPU /
    # test_rnn_weights (all_weights layout)
    rnn = T.nn.LSTM(3, 4, num_layers=2, dropout=0.0)
    rnn.flatten_parameters()
    rnn.dropout = 0.5
    assert rnn.dropout == 0.5
    assert [[tuple(w.shape) for w in layer] for layer in rnn.all_weights] == [
        [(16, 3), (16, 4), (16,), (16,)], [(16, 4), (16, 4), (16,), (16,)]]
    assert rnn._flat_weights_names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    with pytest.raises(ValueError):
        T.nn.LSTM(3, 4, dropout=1.5)
    with pytest.raises(ValueError):
        T.nn.LSTM(3, 4, dropout="0.1")


# ==== Embedding ==================================================================================
def test_embedding_padding_idx_and_from_pretrained():
    # TestNN.test_embedding_padding_idx / test_embedding_from_pretrained /
    # test_embedding_from_pretrained_padding_idx / test_embedding_from_pretrained_options /
    # test_embedding_functional
    def program(T, log):
        nn, F = T.nn, T.nn.functional
        emb = nn.Embedding(10, 20, padding_idx=0)
        log("pad row zero", emb.weight[0].abs().sum())
        emb = nn.Embedding(10, 20, padding_idx=-2)
        log("negative padding_idx", emb.padding_idx)
        log_outcome(log, "padding_idx too big", lambda: nn.Embedding(10, 20, padding_idx=25))
        log_outcome(log, "padding_idx too small", lambda: nn.Embedding(10, 20, padding_idx=-25))
        w = randn(T, (4, 3), 0)
        e = nn.Embedding.from_pretrained(w, padding_idx=1)
        log("pretrained freeze", e.weight.requires_grad)
        idx = T.tensor([[0, 1], [1, 3]])
        e2 = nn.Embedding.from_pretrained(w.clone(), freeze=False, padding_idx=1)
        out = e2(idx)
        (out * randn(T, (2, 2, 3), 1)).sum().backward()
        log("pretrained out", out)
        log("grad (pad row zero)", e2.weight.grad)
        e3 = nn.Embedding.from_pretrained(w.clone(), max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True)
        log("options", [e3.max_norm, e3.norm_type, e3.scale_grad_by_freq, e3.sparse])
        log("max_norm renorms", [e3(T.tensor([0, 2])), e3.weight])
        log("functional", F.embedding(idx, w, padding_idx=1))
        log_outcome(log, "from_pretrained 1d", lambda: nn.Embedding.from_pretrained(T.ones(3)))
        log_outcome(log, "float indices", lambda: F.embedding(T.tensor([0.0]), w))
        log_outcome(log, "index out of range", lambda: F.embedding(T.tensor([4]), w))
        log("repr", repr(nn.Embedding(5, 2, padding_idx=0, max_norm=2.0)))
    run_both(program)


# ==== vision / shape layers ======================================================================
def test_fold_unfold_args_and_values():
    # TestNN.test_fold_invalid_arg / test_unfold_invalid_arg (value-carrying parts) /
    # TestNNDeviceType.test_fold / test_unfold round trip with dilation, padding and stride
    def program(T, log):
        F = T.nn.functional
        x = randn(T, (2, 3, 5, 6), 0, requires_grad=True)
        cols = F.unfold(x, kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
        log("unfold", cols)
        back = F.fold(cols, output_size=(5, 6), kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
        log("fold", back)
        (back * randn(T, (2, 3, 5, 6), 1)).sum().backward()
        log("grad", x.grad)
        log("unbatched", F.fold(cols[0], (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)).shape)
        log("unfold unbatched", F.unfold(x[0].detach(), 2).shape)
        log("module repr", repr(T.nn.Fold(output_size=(4, 5), kernel_size=2, stride=1)))
        log_outcome(log, "fold bad block count", lambda: F.fold(T.ones(1, 12, 5), (4, 5), 2))
        log_outcome(log, "fold channels not divisible", lambda: F.fold(T.ones(1, 5, 12), (4, 5), 2))
        log_outcome(log, "unfold 2d input", lambda: F.unfold(T.ones(3, 3), 2))
        log_outcome(log, "unfold kernel too big", lambda: F.unfold(T.ones(1, 1, 2, 2), 3))
        log_outcome(log, "fold zero stride", lambda: F.fold(T.ones(1, 4, 12), (4, 5), 2, stride=0))
    run_both(program)


def test_pixel_shuffle_and_unshuffle_checks():
    # TestNN.test_pixel_shuffle_unshuffle (argument errors and the batchless/extra-batch shapes)
    def program(T, log):
        F = T.nn.functional
        x = T.arange(2 * 8 * 2 * 3.0).reshape(2, 8, 2, 3)
        log("shuffle", F.pixel_shuffle(x, 2))
        log("unshuffle round trip", T.equal(F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2), x))
        log("extra batch", F.pixel_shuffle(x.reshape(1, 2, 8, 2, 3), 2).shape)
        log("no batch", F.pixel_shuffle(x[0], 2).shape)
        log_outcome(log, "channels not divisible", lambda: F.pixel_shuffle(x, 3))
        log_outcome(log, "2d input", lambda: F.pixel_shuffle(x[0, 0], 2))
        log_outcome(log, "zero factor", lambda: F.pixel_shuffle(x, 0))
        log_outcome(log, "unshuffle width", lambda: F.pixel_unshuffle(x, 2))
        log("module", repr(T.nn.PixelShuffle(2)) + repr(T.nn.PixelUnshuffle(3)))
    run_both(program)


def test_upsampling_modes():
    # TestNNDeviceType.test_upsamplingNearest1d / test_upsamplingNearestExact1d_rescale /
    # test_upsamplingBicubic2d (align_corners) / test_upsamplingTrilinear3d /
    # test_upsampling_not_recompute_scale_factor / test_interpolate (antialias bilinear down)
    def program(T, log):
        F = T.nn.functional
        x1 = randn(T, (1, 2, 5), 0, requires_grad=True)
        for mode in ("nearest", "nearest-exact"):
            log(f"{mode} size", F.interpolate(x1, size=8, mode=mode))
            log(f"{mode} scale", F.interpolate(x1, scale_factor=1.7, mode=mode))
            log(f"{mode} recompute", F.interpolate(x1, scale_factor=1.7, mode=mode, recompute_scale_factor=True))
        out = F.interpolate(x1, scale_factor=2.3, mode="linear", align_corners=False)
        out.sum().backward()
        log("linear", out)
        log("linear grad", x1.grad)
        x2 = randn(T, (1, 1, 4, 5), 1)
        for ac in (False, True):
            log(f"bicubic ac={ac}", F.interpolate(x2, size=(6, 3), mode="bicubic", align_corners=ac))
            log(f"bilinear ac={ac}", F.interpolate(x2, scale_factor=(1.5, 0.6), mode="bilinear", align_corners=ac))
        log("antialias down", F.interpolate(x2, size=(2, 3), mode="bilinear", antialias=True))
        log("antialias bicubic", F.interpolate(x2, size=(3, 2), mode="bicubic", antialias=True))
        x3 = randn(T, (1, 1, 2, 3, 2), 2)
        log("trilinear", F.interpolate(x3, scale_factor=2, mode="trilinear"))
        log("module", T.nn.Upsample(scale_factor=2.0, mode="nearest")(x2).shape)
        log("module repr", repr(T.nn.Upsample(size=(3, 4), mode="bilinear", align_corners=True)))
        log_outcome(log, "size and scale", lambda: F.interpolate(x2, size=3, scale_factor=2.0))
        log_outcome(log, "align_corners with nearest", lambda: F.interpolate(x2, size=3, mode="nearest", align_corners=True))
        log_outcome(log, "linear on 4d", lambda: F.interpolate(x2, size=3, mode="linear"))
        log_outcome(log, "antialias nearest", lambda: F.interpolate(x2, size=3, mode="nearest", antialias=True))
        log_outcome(log, "bad mode", lambda: F.interpolate(x2, size=3, mode="cubic"))
    run_both(program)


def test_pad_modes():
    # TestNNDeviceType.test_pad (constant/reflect/replicate/circular values and grads; negative
    # padding crops; reflect padding bigger than the dim raises)
    def program(T, log):
        F = T.nn.functional
        x = randn(T, (1, 2, 4, 5), 0, requires_grad=True)
        outs = []
        for mode in ("constant", "reflect", "replicate", "circular"):
            out = F.pad(x, (1, 2, 2, 1), mode=mode)
            log(mode, out)
            outs.append(out)
        sum(o.sum() for o in outs).backward()
        log("grad", x.grad)
        log("negative", F.pad(x, (-1, 1, 0, -2)))
        log("constant value", F.pad(x, (1, 1), value=3.5))
        log("1d reflect", F.pad(randn(T, (2, 3, 4), 1), (3, 3), mode="reflect"))
        log("3d replicate", F.pad(randn(T, (1, 1, 2, 2, 2), 2), (1, 0, 0, 1, 1, 1), mode="replicate"))
        log_outcome(log, "reflect too big", lambda: F.pad(x, (5, 5), mode="reflect"))
        log_outcome(log, "odd pad length", lambda: F.pad(x, (1, 2, 3)))
        log_outcome(log, "bad mode", lambda: F.pad(x, (1, 1), mode="wrap"))
        log_outcome(log, "circular too big", lambda: F.pad(x, (6, 6), mode="circular"))
        log_outcome(log, "value with reflect", lambda: F.pad(x, (1, 1), mode="reflect", value=1.0))
    run_both(program)


def test_grid_sample_and_affine_grid():
    # TestNNDeviceType.test_affine_grid / test_grid_sample (modes, padding modes, align_corners,
    # 3-D) compared on the same inputs
    def program(T, log):
        F = T.nn.functional
        theta = T.tensor([[[0.8, -0.3, 0.1], [0.2, 0.9, -0.2]]], requires_grad=True)
        for ac in (False, True):
            log(f"affine_grid {ac}", F.affine_grid(theta, [1, 1, 3, 4], align_corners=ac))
        x = randn(T, (1, 2, 4, 5), 0, requires_grad=True)
        grid = F.affine_grid(theta, [1, 2, 3, 4], align_corners=False)
        total = 0
        for mode in ("bilinear", "nearest", "bicubic"):
            for pm in ("zeros", "border", "reflection"):
                out = F.grid_sample(x, grid * 1.3, mode=mode, padding_mode=pm, align_corners=False)
                log(f"{mode} {pm}", out)
                total = total + out.sum()
        total.backward()
        log("grads", [x.grad, theta.grad])
        theta3 = T.tensor([[[1.0, 0.1, 0.0, 0.0], [0.0, 0.9, 0.2, 0.1], [0.1, 0.0, 1.1, 0.0]]])
        g3 = F.affine_grid(theta3, [1, 1, 2, 3, 2], align_corners=True)
        log("3d grid", g3)
        log("3d sample", F.grid_sample(randn(T, (1, 1, 3, 3, 3), 1), g3, align_corners=True))
        log_outcome(log, "theta shape", lambda: F.affine_grid(T.ones(1, 3, 3), [1, 1, 3, 4], align_corners=False))
        log_outcome(log, "grid last dim", lambda: F.grid_sample(x, T.zeros(1, 3, 4, 3), align_corners=False))
        log_outcome(log, "bad mode", lambda: F.grid_sample(x, grid, mode="area", align_corners=False))
    run_both(program)


# ==== activations ================================================================================
def test_threshold_and_activation_corners():
    # TestNN.test_threshold_int / test_threshold_bfloat16_half / test_softmin /
    # test_PReLU_backward_requires_grad_false / test_hardtanh_backward / test_softplus_low_threshold /
    # test_softshrink_negative (error) / test_elu_inplace_on_view-style checks
    def program(T, log):
        F, nn = T.nn.functional, T.nn
        x = T.tensor([-3, -2, -1, 0, 1, 2, 3])
        log("threshold int", F.threshold(x, 0, 99))
        log("threshold half", F.threshold(T.tensor([-1.0, 0.5, 2.0]).half(), 0.5, -1))
        xs = randn(T, (2, 5), 0)
        log("softmin", [F.softmin(xs, 1), F.softmin(xs, 0, dtype=T.float64), nn.Softmin(dim=1)(xs)])
        m = nn.PReLU()
        m.weight.requires_grad = False
        x = randn(T, (2, 3), 1, requires_grad=True)
        m(x).sum().backward()
        log("prelu grad", [x.grad, m.weight.grad])
        x = T.tensor([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0], requires_grad=True)
        F.hardtanh(x, -1.0, 1.0).sum().backward()
        log("hardtanh grad (edges)", x.grad)
        log("softplus low threshold", F.softplus(T.tensor([0.5, 1.5, 25.0]), beta=2.0, threshold=1.0))
        log_outcome(log, "softshrink negative", lambda: F.softshrink(xs, -0.5))
        log_outcome(log, "hardtanh min > max", lambda: nn.Hardtanh(2.0, 1.0))
        log("glu", F.glu(randn(T, (2, 4), 2), dim=-1))
        log_outcome(log, "glu odd", lambda: F.glu(randn(T, (2, 3), 2)))
        log("rrelu eval", F.rrelu(T.tensor([-1.0, 2.0]), training=False))
        log("celu", F.celu(T.tensor([-1.0, 2.0]), alpha=0.5))
        log_outcome(log, "celu alpha 0", lambda: F.celu(T.tensor([-1.0]), alpha=0.0))
    run_both(program)


def test_bilinear_layer():
    # TestNN.test_bilinear / test_bilinear_no_bias / test_bilinear_non_contiguous /
    # test_bilinear_value_error
    def program(T, log):
        nn, F = T.nn, T.nn.functional
        m = nn.Bilinear(3, 4, 2)
        init_params(T, m, 0)
        a = randn(T, (5, 3), 1, requires_grad=True)
        b = randn(T, (5, 4), 2, requires_grad=True)
        out = m(a, b)
        out.sum().backward()
        log("out", out)
        log("grads", [a.grad, b.grad, m.weight.grad, m.bias.grad])
        m2 = nn.Bilinear(3, 4, 2, bias=False)
        log("no bias", [m2.bias, len(list(m2.parameters()))])
        at = randn(T, (3, 5), 3).t()
        log("non contiguous", F.bilinear(at, b.detach(), m.weight.detach(), m.bias.detach()))
        log_outcome(log, "in1 mismatch", lambda: m(randn(T, (5, 2), 1), b))
        log_outcome(log, "batch mismatch", lambda: m(a, randn(T, (4, 4), 1)))
        log("repr", repr(m))
    run_both(program)


def test_distance_modules():
    # TestNN.test_pairwise_distance / test_cosine_similarity (eps, broadcasting, zero vectors) /
    # TestNNDeviceType.test_pdist_zeros / test_pdist_norm
    def program(T, log):
        F = T.nn.functional
        a = randn(T, (4, 3), 0, requires_grad=True)
        b = randn(T, (4, 3), 1)
        log("pairwise", [F.pairwise_distance(a, b), F.pairwise_distance(a, b, p=1.0, keepdim=True),
                         F.pairwise_distance(a, b, p=float("inf"))])
        log("cosine", [F.cosine_similarity(a, b), F.cosine_similarity(a, b[:1], dim=1),
                       F.cosine_similarity(T.zeros(2, 3), T.ones(2, 3))])
        for p in (0.0, 1.0, 2.0, 3.5, float("inf")):
            log(f"pdist {p}", F.pdist(a, p=p))
        F.pdist(a).sum().backward()
        log("pdist grad", a.grad)
        log("pdist zeros", F.pdist(T.zeros(3, 2)))
        log_outcome(log, "pdist 3d", lambda: F.pdist(T.ones(2, 3, 4)))
        log_outcome(log, "pdist negative p", lambda: F.pdist(T.ones(3, 2), p=-1.0))
    run_both(program)


def test_conv_input_checks():
    # TestNN.test_conv_modules_raise_error_on_incorrect_input_size / test_invalid_conv1d /
    # test_invalid_conv2d / test_conv_padding_mode / test_conv2d_same_padding-style argument errors
    def program(T, log):
        nn = T.nn
        for cls, bad in ((nn.Conv1d, (1, 3)), (nn.Conv2d, (1, 3, 4)), (nn.Conv3d, (1, 3, 4, 4)),
                         (nn.ConvTranspose1d, (1, 3)), (nn.ConvTranspose2d, (1, 3, 4))):
            log_outcome(log, f"{cls.__name__} rank", lambda: cls(3, 2, 1)(T.ones(*bad[:-1])))
        log_outcome(log, "kernel bigger than input", lambda: nn.Conv1d(1, 1, 5)(T.ones(1, 1, 3)))
        log_outcome(log, "zero stride", lambda: nn.Conv2d(1, 1, 2, stride=0)(T.ones(1, 1, 4, 4)))
        log_outcome(log, "bad padding_mode", lambda: nn.Conv2d(1, 1, 2, padding_mode="xyz"))
        log_outcome(log, "same with stride", lambda: nn.Conv2d(1, 1, 2, padding="same", stride=2))
        log_outcome(log, "bad padding string", lambda: nn.Conv2d(1, 1, 2, padding="full"))
        log_outcome(log, "groups", lambda: nn.Conv2d(3, 4, 2, groups=2))
        log_outcome(log, "channels", lambda: nn.Conv2d(3, 4, 2)(T.ones(1, 2, 4, 4)))
        c = nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular")
        init_params(T, c, 0)
        log("circular", c(randn(T, (1, 2, 4, 4), 1)))
        c = nn.Conv1d(2, 2, 4, padding="same", dilation=2, padding_mode="reflect")
        init_params(T, c, 1)
        log("same reflect", c(randn(T, (1, 2, 9), 2)))
        log("repr", repr(c))
    run_both(program)


def test_weight_norm_and_spectral_norm():
    # TestNN.test_weight_norm (dim=None, dim=-1, removal) / test_spectral_norm (forward values,
    # eval uses stored u/v, remove gives a plain weight) / test_spectral_norm_dim
    def program(T, log):
        nn = T.nn
        lin = init_params(T, nn.Linear(5, 4), 0)
        wn = nn.utils.weight_norm(lin, dim=None)
        log("g dim None", wn.weight_g)
        log("out", wn(randn(T, (2, 5), 1)))
        nn.utils.remove_weight_norm(wn)
        log("removed", [n for n, _ in wn.named_parameters()])
        lin = init_params(T, nn.Linear(5, 4), 0)
        wn = nn.utils.weight_norm(lin, dim=-1)
        log("g dim -1", wn.weight_g.shape)
        log_outcome(log, "twice", lambda: nn.utils.weight_norm(wn))
        lin = init_params(T, nn.Linear(5, 4), 2)
        sn = nn.utils.spectral_norm(lin, n_power_iterations=3)
        log("sn names", sorted(n for n, _ in sn.named_parameters()) + sorted(n for n, _ in sn.named_buffers()))
        log("sn buffer shapes", [sn.weight_u.shape, sn.weight_v.shape])
        log_outcome(log, "sn twice", lambda: nn.utils.spectral_norm(sn))
        nn.utils.remove_spectral_norm(sn)
        log("sn removed", sorted(n for n, _ in sn.named_parameters()))
        log_outcome(log, "remove missing", lambda: nn.utils.remove_spectral_norm(sn))
        conv = nn.ConvTranspose2d(3, 4, 2)
        sn = nn.utils.spectral_norm(conv)
        log("sn dim for transpose conv", sn.weight_u.shape)
    run_both(program)


# ==== batch 2: faithful ports of TestNN's module-API tests =======================================
def test_ParameterDict_full_api(T):
    # TestNN.test_ParameterDict: update from every mapping kind, pop/popitem, reversed, copy,
    # setdefault, |, |=, get, fromkeys, clear, plain tensors wrapped as Parameters, other values kept
    P = T.nn.Parameter
    parameters = OrderedDict([("p1", P(T.randn(2, 2))), ("p2", P(T.randn(2, 2))), ("p3", P(T.randn(2, 2)))])
    parameter_dict = T.nn.ParameterDict(parameters)

    def check():
        assert len(parameter_dict) == len(parameters)
        for i, (k1, (k2, m2)) in enumerate(zip(parameters, parameter_dict.named_parameters())):
            assert k1 == k2 and parameters[k1] is m2
        for k1, k2 in zip(parameters, parameter_dict):
            assert parameters[k1] is parameter_dict[k2]
        for k in parameter_dict:
            assert parameter_dict[k] is parameters[k]
        for k, v in parameter_dict.items():
            assert v is parameters[k]
        for k1, m2 in zip(parameters, parameter_dict.values()):
            assert parameters[k1] is m2
        for k in parameters:
            assert k in parameter_dict

    check()
    parameters["p4"] = P(T.randn(2, 2))
    parameter_dict["p4"] = parameters["p4"]
    check()
    nxt = [("p5", P(T.randn(2, 2))), ("p2", P(T.randn(2, 2)))]
    parameters.update(nxt)
    parameter_dict.update(nxt)
    check()
    nxt = {"p8": P(T.randn(2, 2)), "p7": P(T.randn(2, 2))}
    parameters.update(sorted(nxt.items()))
    parameter_dict.update(nxt)   # a plain dict is taken in sorted key order
    check()
    nxt = T.nn.ParameterDict([("p10", P(T.randn(2, 2))), ("p9", P(T.randn(2, 2)))])
    parameters.update(nxt)
    parameter_dict.update(nxt)
    check()
    del parameter_dict["p3"]
    del parameters["p3"]
    check()
    with pytest.raises(TypeError):
        parameter_dict.update(1)
    with pytest.raises(TypeError):
        parameter_dict.update([1])
    with pytest.raises(ValueError):   # its rows are read as (key, value) pairs: length 10, not 2
        parameter_dict.update(P(T.randn(10, 10)))
    assert parameter_dict.pop("p4") is parameters.pop("p4")
    check()
    forward, backward = list(iter(parameter_dict)), list(reversed(parameter_dict))
    assert forward == backward[::-1]
    cp = parameter_dict.copy()
    for key in parameter_dict:
        assert key in cp and parameter_dict[key] is cp[key]
    parameter_dict["p20"] = P(T.randn(2, 2))
    cp["p21"] = P(T.randn(2, 2))
    assert "p20" in parameter_dict and "p20" not in cp
    assert "p21" not in parameter_dict and "p21" in cp
    parameter_dict.pop("p20")
    check()
    p = P(T.randn(2, 2))
    parameter_dict["p12"] = p
    k, v = parameter_dict.popitem()
    assert k == "p12" and v is p
    check()
    parameters["p11"] = P(T.randn(2, 2))
    assert parameter_dict.setdefault("p11", parameters["p11"]) is parameters["p11"]
    assert parameter_dict.setdefault("p11", P(T.randn(2, 2))) is parameters["p11"]
    assert parameter_dict.setdefault("p26") is None
    del parameter_dict["p26"]
    check()
    other = OrderedDict([("p13", P(T.randn(2, 2))), ("p2", P(T.randn(2, 2)))])
    parameters.update(other)
    parameter_dict |= T.nn.ParameterDict(other)
    check()
    other = OrderedDict([("p20", P(T.randn(2, 2))), ("p21", P(T.randn(2, 2)))])
    parameters.update(other)
    parameter_dict = parameter_dict | T.nn.ParameterDict(other)
    check()
    other = OrderedDict([("p23", P(T.randn(2, 2)))])
    other.update(parameters)
    parameters = other
    parameter_dict = T.nn.ParameterDict(OrderedDict([("p23", other["p23"])])) | parameter_dict
    check()
    temp = P(T.randn(2, 2))
    assert parameter_dict.get("p2") is parameters["p2"] and parameter_dict.get("p2", temp) is parameters["p2"]
    assert parameter_dict.get("p18") is None and parameter_dict.get("p18", temp) is temp
    parameter_dict.clear()
    parameters.clear()
    assert len(parameter_dict) == 0
    check()
    assert dict(parameter_dict.fromkeys(["a", "b"]).items()) == {"a": None, "b": None}
    d2 = parameter_dict.fromkeys(["a", "b"], temp)
    assert d2["a"] is temp and d2["b"] is temp
    parameter_dict["p21"] = T.rand(2, 2)
    assert isinstance(parameter_dict["p21"], T.nn.Parameter)
    parameter_dict.update({"p22": T.rand(2, 2), "foo": "bar"})
    assert isinstance(parameter_dict["p22"], T.nn.Parameter) and parameter_dict["foo"] == "bar"


def test_add_module_messages(T):
    # TestNN.test_add_module: None entries, re-registration under a new name, replacement and the
    # TypeError messages for bad names/values
    for fn in ("add_module", "register_module"):
        l = T.nn.Linear(10, 20)
        net = T.nn.Module()
        net.l = l
        net.l2 = l
        getattr(net, fn)("empty", None)
        assert net.l is l and net.l2 is l and net.empty is None
        getattr(net, fn)("l3", l)
        assert net.l3 is l
        l3 = T.nn.Linear(20, 10)
        getattr(net, fn)("l", l3)
        assert net.l is l3
        with pytest.raises(TypeError):
            getattr(net, fn)("x", "non-module")
        with pytest.raises(TypeError, match="module name should be a string. Got int"):
            getattr(net, fn)(1, l)
        with pytest.raises(TypeError, match="module name should be a string. Got NoneType"):
            getattr(net, fn)(None, l)


def test_module_to_argparse(T):
    # TestNN.test_module_to_argparse: invalid Module.to argument combinations are TypeErrors
    net = T.nn.Sequential(T.nn.Linear(3, 3))
    cpu = T.device("cpu")
    bad = [lambda: net.to(cpu, True), lambda: net.to(T.long), lambda: net.to(None, True),
           lambda: net.to(cpu, T.long, True), lambda: net.to(cpu, dtype=T.long, non_blocking=True),
           lambda: net.to([]), lambda: net.to({}, non_blocking=True),
           lambda: net.to(T.tensor(3, dtype=T.long), non_blocking=True),
           lambda: net.to(cpu, T.tensor(3, dtype=T.long), non_blocking=True)]
    for i, call in enumerate(bad):
        with pytest.raises(TypeError):
            call()


def test_module_apply_inplace_op_grads(T):
    # TestNN.test_module_apply_inplace_op (second half): _apply's in-place op bumps the version of
    # the parameters' .grad too, so a graph that saved the grad refuses to backpropagate
    m = T.nn.Linear(20, 10)
    m.weight.grad = T.randn(10, 20).requires_grad_()
    pgm = m.weight.grad.mul(m.weight.grad)
    saved = m.weight.grad._version
    m = m._apply(lambda t: t.add_(1.0))
    assert m.weight.grad._version > saved
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        pgm.backward(T.randn(10, 20))


def test_overwrite_module_params_on_conversion(T):
    # TestNN.test_overwrite_module_params_on_conversion (dense parts): by default .double()
    # swaps .data in place (old references see the new dtype); with the __future__ flag set the
    # parameters are new objects and out-of-place _apply leaves the old versions alone
    m = T.nn.Linear(20, 10).float()
    ref = m.weight
    m.double()
    assert ref is m.weight and ref.dtype == T.float64
    try:
        T.__future__.set_overwrite_module_params_on_conversion(True)
        m = T.nn.Linear(20, 10).float()
        m.weight.grad = T.randn(10, 20).float()
        weight_ref, grad_ref = m.weight, m.weight.grad
        m.double()
        assert weight_ref.dtype != m.weight.dtype and grad_ref.dtype != m.weight.grad.dtype
        m = T.nn.Linear(20, 10)
        pvm = m.weight.mul(m.weight)
        weight_ref = m.weight
        saved = weight_ref._version
        m = m._apply(lambda t: t.add_(1.0))
        assert weight_ref._version > saved
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            pvm.backward(T.randn(10, 20))
        m = T.nn.Linear(20, 10)
        weight_ref = m.weight
        saved = weight_ref._version
        m = m._apply(lambda t: T.randn(t.shape))
        assert weight_ref._version == saved
    finally:
        T.__future__.set_overwrite_module_params_on_conversion(False)


def test_module_type_conversions(T):
    # TestNN.test_type (CPU part): float/double/half/to(dtype)/to(tensor) convert floating
    # parameters, integer buffers stay int64; the legacy tensor-type classes answer isinstance
    l = T.nn.Linear(10, 20)
    net = T.nn.Module()
    net.l = l
    net.l2 = l
    net.add_module("empty", None)
    net.register_buffer("indices", T.LongTensor(1))
    net.float()
    assert isinstance(l.weight.data, T.FloatTensor) and isinstance(l.bias.data, T.FloatTensor)
    assert isinstance(net.indices, T.LongTensor)
    net.double()
    assert isinstance(l.weight.data, T.DoubleTensor) and isinstance(net.indices, T.LongTensor)
    net.to(T.half)
    assert isinstance(l.weight.data, T.HalfTensor) and isinstance(net.indices, T.LongTensor)
    net.to(T.device("cpu"), non_blocking=True)
    assert isinstance(l.bias.data, T.HalfTensor)
    net.to(T.float)
    assert isinstance(l.weight.data, T.FloatTensor)
    net.to(T.DoubleTensor(1))
    assert isinstance(l.weight.data, T.DoubleTensor) and isinstance(l.bias.data, T.DoubleTensor)
    assert not isinstance(l.weight.data, T.FloatTensor)


def test_clip_grad_norm_faithful(T):
    # TestNN.test_clip_grad_norm: the returned norm is the norm before clipping, after clipping it
    # equals max_norm, every gradient is scaled by one factor; small gradients are unchanged; a
    # single tensor and a one-element list clip alike
    l = T.nn.Linear(10, 10)
    max_norm = 2

    def compute_norm(norm_type):
        norm_type = float(norm_type)
        if norm_type != math.inf:
            total = 0
            for p in l.parameters():
                total += p.grad.data.abs().pow(norm_type).sum()
            return pow(total, 1.0 / norm_type)
        return max(p.grad.data.abs().max() for p in l.parameters())

    def compare_scaling(grads):
        scale = T.cat([p.grad.data.div(g).view(-1) for p, g in zip(l.parameters(), grads)])
        assert scale.std().item() < 1e-5 * max(1.0, abs(scale[0].item()))
        return scale[0]

    grads = T.arange(1.0, 101).view(10, 10), T.ones(10).div(1000)
    for norm_type in [0.5, 1.5, 2, 4, "inf"]:
        for p, g in zip(l.parameters(), grads):
            p._grad = g.clone().view_as(p.data)
        before = compute_norm(norm_type)
        norm = T.nn.utils.clip_grad_norm_(l.parameters(), max_norm, norm_type=norm_type)
        after = compute_norm(norm_type)
        assert math.isclose(float(norm), float(before), rel_tol=1e-4)
        assert math.isclose(float(after), max_norm, rel_tol=1e-4)
        compare_scaling(grads)
    grads = T.rand(10, 10).div(10000), T.ones(10).div(500)
    for norm_type in [0.5, 1.5, 2, 4, "inf"]:
        for p, g in zip(l.parameters(), grads):
            p.grad.data.copy_(g)
        before = compute_norm(norm_type)
        norm = T.nn.utils.clip_grad_norm_(l.parameters(), max_norm, norm_type=norm_type)
        assert math.isclose(float(norm), float(before), rel_tol=1e-4)
        assert math.isclose(float(compare_scaling(grads)), 1.0, rel_tol=1e-5)
    p1, p2 = T.randn(10, 10), T.randn(10, 10)
    g = T.arange(1.0, 101).view(10, 10)
    p1._grad, p2._grad = g.clone(), g.clone()
    for norm_type in [0.5, 1.5, 2, 4, "inf"]:
        T.nn.utils.clip_grad_norm_(p1, max_norm, norm_type=norm_type)
        T.nn.utils.clip_grad_norm_([p2], max_norm, norm_type=norm_type)
        assert T.equal(p1.grad, p2.grad)


def test_clip_grad_value_faithful(T):
    # TestNN.test_clip_grad_value: every grad within [-clip, clip] (None grads skipped); a single
    # tensor and a one-element list clip alike
    l = T.nn.Linear(10, 10)
    clip_value = 2.5
    grad_w, grad_b = T.arange(-50.0, 50).view(10, 10).div_(5), T.ones(10).mul_(2)
    for grad_list in [[grad_w, grad_b], [grad_w, None]]:
        for p, g in zip(l.parameters(), grad_list):
            p._grad = g.clone().view_as(p.data) if g is not None else g
        T.nn.utils.clip_grad_value_(l.parameters(), clip_value)
        for p in filter(lambda p: p.grad is not None, l.parameters()):
            assert p.grad.data.max() <= clip_value and p.grad.data.min() >= -clip_value
    p1, p2 = T.randn(10, 10), T.randn(10, 10)
    g = T.arange(-50.0, 50).view(10, 10).div_(5)
    p1._grad, p2._grad = g.clone(), g.clone()
    T.nn.utils.clip_grad_value_(p1, clip_value)
    T.nn.utils.clip_grad_value_([p2], clip_value)
    assert T.equal(p1.grad, p2.grad)


# ==== batch 3: spectral norm / orthogonal errors / threshold ============================================
def test_spectral_norm_forward(T):
    # TestNN.test_spectral_norm_forward: one power iteration by hand reproduces the module's output
    F = T.nn.functional
    inp = T.randn(3, 5)
    m = T.nn.utils.spectral_norm(T.nn.Linear(5, 7))
    w, b, u = m.weight_orig, m.bias, m.weight_u
    wm = w.view(w.size(0), -1)
    v = F.normalize(T.mv(wm.t(), u), dim=0, eps=1e-12)
    u = F.normalize(T.mv(wm, v), dim=0, eps=1e-12)
    w.data /= T.dot(u, T.matmul(wm, v))
    out_hat = F.linear(inp, w, b)
    assert T.allclose(m(inp), out_hat, atol=1e-5)


def test_spectral_norm_dim_and_pickle(T):
    # TestNN.test_spectral_norm_dim / test_spectral_norm_pickle (the parametrization forms are in
    # test_nn_files_ported_more.py): a transposed conv normalises along dim 1, and a
    # spectral-normed module pickles
    inp = T.randn(2, 3, 6, 7)
    m = T.nn.utils.spectral_norm(T.nn.ConvTranspose2d(3, 4, (3, 2)))
    m(inp)
    assert m.weight_u.shape == m.weight_orig[0, :, 0, 0].shape
    m = pickle.loads(pickle.dumps(T.nn.utils.spectral_norm(T.nn.Linear(5, 7))))
    assert isinstance(m, T.nn.Linear)


def test_orthogonal_errors(T):
    # TestNN.test_orthogonal_errors
    m = T.nn.Linear(3, 4)
    with pytest.raises(ValueError, match="has to be one of"):
        T.nn.utils.parametrizations.orthogonal(m, "weight", "foo")
    with pytest.raises(ValueError, match="Expected a matrix"):
        T.nn.utils.parametrizations.orthogonal(m, "bias")
    T.nn.utils.parametrizations.orthogonal(m, "weight")
    with pytest.raises(ValueError, match="matrices of shape"):
        m.weight = T.randn(5, 5)
    T.nn.utils.parametrize.remove_parametrizations(m, "weight")


def test_threshold_bfloat16():
    # TestNN.test_threshold_bfloat16: bfloat16 thresholds agree with float32 rounded to bfloat16
    def program(T, log):
        F = T.nn.functional
        x = randn(T, (20,), 0)
        for threshold in [0, -0.5, 0.5, float("inf"), float("-inf"), float("nan")]:
            expected = F.threshold(x, threshold, 0).bfloat16().float()
            res = F.threshold(x.bfloat16(), threshold, 0).float()
            log(f"{threshold}", [res, T.equal(res, expected)])
    run_both(program)


# ==== batch 4: Module.__setattr__ / __delattr__ corners, reprs ===================================
def test_module_setattr_corners(T):
    # TestNN.test_assignment-style corners of Module.__setattr__: a Parameter replaces a buffer or
    # submodule of that name, other values where a parameter, buffer or module lives are
    # TypeErrors, None is kept, __delattr__ removes from the right table
    nn = T.nn
    m = nn.Module()
    m.register_buffer("b", T.zeros(2))
    m.b = nn.Parameter(T.ones(2))
    assert "b" in m._parameters and "b" not in m._buffers
    m.sub = nn.Linear(1, 1)
    m.sub = nn.Parameter(T.ones(1))
    assert "sub" in m._parameters and "sub" not in m._modules
    m.p = nn.Parameter(T.ones(3))
    with pytest.raises(TypeError, match="cannot assign"):   # a parameter's name takes Parameters only
        m.p = nn.ReLU()
    m.register_buffer("buf", T.zeros(2))
    m.buf = T.ones(3)
    assert m._buffers["buf"].shape == (3,)
    with pytest.raises(TypeError, match="cannot assign"):
        m.buf = 5
    m.buf = None
    assert m._buffers["buf"] is None and "buf" in m._buffers
    m.w = nn.Parameter(T.ones(2))
    with pytest.raises(TypeError, match="cannot assign"):
        m.w = T.ones(2)
    m.w = None
    assert m.w is None and "w" in m._parameters
    m.mod = nn.ReLU()
    with pytest.raises(TypeError, match="cannot assign"):
        m.mod = 3
    m.mod = None
    assert m.mod is None and "mod" in m._modules
    del m.mod, m.w, m.buf
    assert "mod" not in m._modules and "w" not in m._parameters and "buf" not in m._buffers
    with pytest.raises(AttributeError):
        del m.never_set
    m.plain = 3
    del m.plain
    assert not hasattr(m, "plain")

    class Early(nn.Module):
        def __init__(self):
            self.p = nn.Parameter(T.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()

    class EarlyModule(nn.Module):
        def __init__(self):
            self.l = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="before Module.__init__"):
        EarlyModule()


def test_container_reprs():
    # TestNN.test_repr (containers): repeated modules collapse into "(0-2): 3 x ...", nested
    # indentation, extra_repr of a custom module, ModuleDict/ModuleList reprs, empty containers
    def program(T, log):
        nn = T.nn

        class WithExtra(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = nn.Linear(2, 3, bias=False)

            def extra_repr(self):
                return "alpha=1,\nbeta=2"

        log("repeated", repr(nn.ModuleList([nn.ReLU() for _ in range(3)] + [nn.Tanh(), nn.Tanh()])))
        log("repeated linear", repr(nn.Sequential(*[nn.Linear(2, 2) for _ in range(2)], nn.Linear(2, 3))))
        log("nested", repr(nn.Sequential(nn.Sequential(nn.ReLU(), nn.Dropout(0.25)), nn.Identity())))
        log("extra", repr(WithExtra()))
        log("dict", repr(nn.ModuleDict({"conv": nn.Conv2d(1, 2, 3, stride=2), "act": nn.GELU(approximate="tanh")})))
        log("empty", [repr(nn.Sequential()), repr(nn.ModuleList()), repr(nn.ModuleDict())])
        log("layers", [repr(nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)),
                       repr(nn.Embedding(4, 2, padding_idx=1, sparse=True)),
                       repr(nn.BatchNorm2d(3, momentum=None, affine=False)),
                       repr(nn.LayerNorm((2, 3), eps=1e-6)), repr(nn.GroupNorm(2, 4)),
                       repr(nn.MaxPool2d(2, ceil_mode=True)), repr(nn.AvgPool1d(3, count_include_pad=False)),
                       repr(nn.Upsample(scale_factor=2.0)), repr(nn.Flatten(0, -1)), repr(nn.Unflatten(1, (2, 3))),
                       repr(nn.ConvTranspose2d(2, 3, 3, output_padding=1, stride=2, groups=1, dilation=1)),
                       repr(nn.Softmax(dim=1)), repr(nn.LeakyReLU(0.2, inplace=True)), repr(nn.Hardtanh(-2, 2)),
                       repr(nn.CrossEntropyLoss(ignore_index=3)), repr(nn.PReLU(3)), repr(nn.Threshold(0.1, 20))])
    run_both(program)


def test_named_modules_memo_prefix_remove_duplicate(T):
    # TestNN.test_named_modules (memo, prefix, remove_duplicate=False) / test_modules /
    # test_get_submodule-style errors of get_parameter/get_buffer
    nn = T.nn
    l = nn.Linear(2, 2)
    s = nn.Sequential(l, nn.Sequential(l, nn.ReLU()))
    assert [n for n, _ in s.named_modules()] == ["", "0", "1", "1.1"]
    assert [n for n, _ in s.named_modules(prefix="net")] == ["net", "net.0", "net.1", "net.1.1"]
    assert [n for n, _ in s.named_modules(remove_duplicate=False)] == ["", "0", "1", "1.0", "1.1"]
    memo = {l}
    assert [n for n, _ in s.named_modules(memo=memo)] == ["", "1", "1.1"]
    assert len(list(s.modules())) == 4
    s.register_buffer("steps", T.zeros(1))
    assert s.get_parameter("0.weight") is l.weight and s.get_buffer("steps") is s.steps
    with pytest.raises(AttributeError):
        s.get_parameter("0.nothing")
    with pytest.raises(AttributeError):
        s.get_parameter("1.1")   # a module, not a parameter
    with pytest.raises(AttributeError):
        s.get_buffer("0.weight")  # a parameter, not a buffer
    with pytest.raises(AttributeError):
        s.get_submodule("2")
    assert s.get_submodule("") is s and s.get_submodule("1.1") is s[1][1]


# ==== batch 5: BCE family and other losses (TestNN's test_bce_* / test_BCELoss_*) ================
def test_bce_with_logits_corners():
    # TestNN.test_bce_with_logits_raises_if_target_and_input_are_different_size /
    # _gives_same_result_as_sigmoid_and_bce_loss / _has_correct_grad_at_zero / _broadcasts_weights /
    # _ones_in_pos_weights_are_the_same_as_none / _broadcasts_pos_weights /
    # _with_pos_weight_has_correct_grad_at_zero / _stability / test_bce_loss_broadcasts_weights
    def program(T, log):
        nn, F = T.nn, T.nn.functional
        log_outcome(log, "size mismatch", lambda: nn.BCEWithLogitsLoss()(T.rand(5), T.rand(5, 1)))
        log_outcome(log, "size mismatch 2", lambda: nn.BCEWithLogitsLoss()(T.rand(5, 1), T.rand(5)))
        x = randn(T, (6, 4), 0)
        t = (randn(T, (6, 4), 1) > 0).float()
        log("same as sigmoid+bce", [nn.BCEWithLogitsLoss()(x, t), nn.BCELoss()(T.sigmoid(x), t)])
        w = T.tensor([0.5, 1.0, 2.0, 0.25])
        log("weights", [nn.BCEWithLogitsLoss(w)(x, t), nn.BCELoss(w)(T.sigmoid(x), t)])
        log("reduction none", nn.BCEWithLogitsLoss(reduction="none")(x, t))
        z = T.zeros(3, 1, requires_grad=True)
        nn.BCEWithLogitsLoss(reduction="sum")(z, T.zeros(3, 1)).backward()
        log("grad at zero", z.grad)
        w2 = T.tensor([1.0, 2.0, 3.0, 4.0])
        log("broadcast weight", [nn.BCEWithLogitsLoss(w2)(x, t), nn.BCEWithLogitsLoss(w2.expand(6, 4))(x, t)])
        w3 = T.linspace(0.5, 1.5, 6).reshape(6, 1)
        log("broadcast weight column", [nn.BCEWithLogitsLoss(w3)(x, t), nn.BCEWithLogitsLoss(w3.expand(6, 4))(x, t)])
        log("pos_weight ones", [nn.BCEWithLogitsLoss(pos_weight=T.ones(4))(x, t), nn.BCEWithLogitsLoss()(x, t)])
        pw = T.tensor([0.5, 1.5, 2.0, 3.0])
        log("pos_weight broadcast", [nn.BCEWithLogitsLoss(pos_weight=pw)(x, t),
                                     nn.BCEWithLogitsLoss(pos_weight=pw.expand(1, 4))(x, t)])
        z = T.zeros(3, 2, requires_grad=True)
        nn.BCEWithLogitsLoss(pos_weight=T.ones(2), reduction="sum")(z, T.ones(3, 2)).backward()
        log("pos_weight grad at zero", z.grad)
        big = T.tensor([[100.0, -100.0], [-100.0, 100.0]])
        log("stability", [nn.BCEWithLogitsLoss()(big, T.tensor([[1.0, 0.0], [0.0, 1.0]])),
                          nn.BCEWithLogitsLoss(reduction="none")(big, T.tensor([[0.0, 1.0], [1.0, 0.0]]))])
        p = T.sigmoid(x)
        log("bce broadcast weights", [F.binary_cross_entropy(p, t, w2), F.binary_cross_entropy(p, t, w2.expand(6, 4))])
        log("bce always nonnegative", bool((nn.BCELoss(reduction="none")(T.ones(3), T.ones(3)) >= 0).all()))
        log_outcome(log, "bce size mismatch", lambda: F.binary_cross_entropy(p, t[:, :1]))
        log_outcome(log, "bce out of range", lambda: F.binary_cross_entropy(T.tensor([1.5]), T.tensor([1.0])))
        log("bce clamps log at -100", F.binary_cross_entropy(T.tensor([0.0, 1.0]), T.tensor([1.0, 0.0]), reduction="none"))
    run_both(program)


def test_other_loss_modes():
    # TestNN.test_poisson_nll_loss_reduction_modes / test_gaussian_nll_loss_args /
    # test_gaussian_nll_loss_broadcasting / test_KLDivLoss_batch_mean / test_soft_margin_loss /
    # test_multilabel_margin_loss / test_multi_margin_loss (p, margin, weight) /
    # test_hinge_embedding_loss / test_l1_loss_correct
    def program(T, log):
        F = T.nn.functional
        x = randn(T, (4, 3), 0, requires_grad=True)
        t = randn(T, (4, 3), 1).abs()
        for reduction in ("none", "mean", "sum"):
            log(f"poisson {reduction}", F.poisson_nll_loss(x, t, reduction=reduction))
            log(f"poisson full {reduction}", F.poisson_nll_loss(x.exp(), t, log_input=False, full=True, reduction=reduction))
        log_outcome(log, "poisson bad reduction", lambda: F.poisson_nll_loss(x, t, reduction="avg"))
        var = randn(T, (4, 3), 2).abs() + 0.1
        log("gaussian", [F.gaussian_nll_loss(x, t, var), F.gaussian_nll_loss(x, t, var, full=True, reduction="sum")])
        log("gaussian broadcast var", F.gaussian_nll_loss(x, t, var[:, :1]))
        log("gaussian 1-d var", F.gaussian_nll_loss(x, t, var[:, 0]))
        log_outcome(log, "gaussian negative var", lambda: F.gaussian_nll_loss(x, t, -var))
        log_outcome(log, "gaussian var shape", lambda: F.gaussian_nll_loss(x, t, var[:2]))
        y = T.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0], [1.0, 1.0, 1.0], [-1.0, 1.0, -1.0]])
        log("soft margin", F.soft_margin_loss(x, y))
        log("hinge", [F.hinge_embedding_loss(x, y), F.hinge_embedding_loss(x, y, margin=0.5, reduction="none")])
        cls = T.tensor([0, 2, 1, 2])
        log("multi margin", [F.multi_margin_loss(x, cls), F.multi_margin_loss(x, cls, p=2, margin=0.5),
                             F.multi_margin_loss(x, cls, weight=T.tensor([1.0, 2.0, 0.5]), reduction="none")])
        log_outcome(log, "multi margin p=3", lambda: F.multi_margin_loss(x, cls, p=3))
        ml = T.tensor([[2, 0, -1], [1, -1, 0], [0, 1, 2], [-1, 0, 0]])
        log("multilabel margin", F.multilabel_margin_loss(x, ml, reduction="none"))
        log("l1", [F.l1_loss(x, t), F.l1_loss(x, t, reduction="none")])
        (F.multi_margin_loss(x, cls) + F.multilabel_margin_loss(x, ml) + F.soft_margin_loss(x, y)).backward()
        log("grad", x.grad)
    run_both(program)


def test_batchnorm_load_state_dict(T):
    # TestNN.test_batchnorm_load_state_dict: num_batches_tracked is kept when a non-strict load
    # lacks it, and a meta BatchNorm loaded with assign=True gets a zero counter
    bn = T.nn.BatchNorm2d(3)
    assert T.equal(bn.state_dict()["num_batches_tracked"], T.tensor(0))
    bn.num_batches_tracked = T.tensor(10)
    assert T.equal(bn.state_dict()["num_batches_tracked"], T.tensor(10))
    bn.load_state_dict(OrderedDict(), strict=False)
    assert T.equal(bn.state_dict()["num_batches_tracked"], T.tensor(10))
    with T.device("meta"):
        meta_bn = T.nn.BatchNorm2d(3)
    assert meta_bn.num_batches_tracked.device == T.device("meta")
    meta_bn.load_state_dict(OrderedDict(), assign=True, strict=False)
    assert T.equal(meta_bn.state_dict()["num_batches_tracked"], T.tensor(0))


def test_batchnorm_old_state_dict_version(T):
    # TestNN.test_load_state_dict_BC-style: a BatchNorm state dict saved before
    # num_batches_tracked existed (metadata version 1) loads strictly, the module keeping its counter
    bn = T.nn.BatchNorm1d(3)
    bn.num_batches_tracked.fill_(7)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""]["version"] = 1
    bn.load_state_dict(sd)
    assert bn.num_batches_tracked.item() == 7
    sd._metadata[""]["version"] = 2
    with pytest.raises(RuntimeError, match="Missing key"):
        bn.load_state_dict(sd)
