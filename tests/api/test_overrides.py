"""``tracegrad.overrides`` (torch.overrides): duck tensors, the helpers, modes' bookkeeping.
torch 2.13's test_overrides.py, in our own words, on the CPU-relevant parts; parity against
torch where both run the same program."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")
LIBS = (torch, tracegrad)


def _diagonal_family(lib):
    """A duck tensor (no Tensor base) standing for ``value * eye(n)``, its subclass, and a Tensor
    subclass, each answering a few functions (torch's DiagonalTensor / SubDiagonalTensor /
    SubTensor, rewritten)."""
    handled, sub_handled, tensor_handled = {}, {}, {}

    class Diagonal:
        def __init__(self, n, value):
            self.n, self.value = n, value

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            table = sub_handled if cls is SubDiagonal else handled
            if func not in table or not all(issubclass(t, (lib.Tensor, Diagonal)) for t in types):
                return NotImplemented
            return table[func](*args, **(kwargs or {}))

    class SubDiagonal(Diagonal):
        pass

    class Sub(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func in tensor_handled:
                return tensor_handled[func](*args, **(kwargs or {}))
            return super().__torch_function__(func, types, args, kwargs)

    handled[lib.mean] = lambda d: d.value / d.n
    handled[lib.mm] = lambda a, b: "diag mm"
    handled[lib.add] = lambda a, b, alpha=1: "diag add"
    sub_handled[lib.mean] = lambda d: 10 * d.value / d.n
    sub_handled[lib.mm] = lambda a, b: "subdiag mm"
    tensor_handled[lib.mean] = lambda t: -1
    return Diagonal, SubDiagonal, Sub


def _diagonal_program(lib):
    Diagonal, SubDiagonal, Sub = _diagonal_family(lib)
    d, sd, t = Diagonal(5, 2.0), SubDiagonal(5, 2.0), lib.ones(2, 2)
    s = t.as_subclass(Sub)
    out = [lib.mean(d), lib.mean(sd), lib.mm(d, t), lib.mm(t, d), lib.mm(d, sd), lib.mm(sd, d), lib.add(t, d),
           lib.mean(s), type(s + 1).__name__]
    for call in (lambda: lib.sum(d), lambda: lib.mean(d, 0), lambda: lib.mm(sd, s)):
        try:
            out.append(call())
        except TypeError:
            out.append("TypeError")
    return out


def test_duck_tensors_and_precedence_match_torch():
    assert _diagonal_program(tracegrad) == _diagonal_program(torch)


def test_has_and_handle_torch_function_for_user_functions():
    def program(lib):
        calls = []

        class Duck:
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                calls.append((func.__name__, [t.__name__ for t in types], len(args)))
                return "duck"

        def scaled(a, b):
            if lib.overrides.has_torch_function((a, b)):
                return lib.overrides.handle_torch_function(scaled, (a, b), a, b)
            return a * b + 1

        @lib.overrides.wrap_torch_function(lambda x: (x,))
        def wrapped(x):
            return x + 0
        t = lib.ones(1)
        res = [scaled(t, t).tolist(), scaled(t, Duck()), wrapped(Duck()), wrapped(t).tolist(),
               lib.overrides.has_torch_function((t,)), lib.overrides.has_torch_function_unary(Duck()),
               lib.overrides.has_torch_function_variadic(t, 1), lib.overrides.is_tensor_like(t),
               lib.overrides.is_tensor_like(Duck()), lib.overrides.is_tensor_like(3),
               lib.overrides.has_torch_function((lib.nn.Parameter(lib.ones(1)),))]
        return res, calls
    assert program(tracegrad) == program(torch)


def test_redispatch_function_skips_one_level():
    def program(lib):
        log = []

        class Logging(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(func.__name__)
                return lib.overrides.redispatch_function(func, types, args, kwargs)

        def scaled_mul(a, b):
            if lib.overrides.has_torch_function((a, b)):
                return lib.overrides.handle_torch_function(scaled_mul, (a, b), a, b)
            return a * b + 1
        x, y = lib.tensor([3.0]).as_subclass(Logging), lib.tensor([4.0]).as_subclass(Logging)
        r = scaled_mul(x, y)
        return log, type(r).__name__, r.tolist()
    assert program(tracegrad) == program(torch)


def test_mode_stack_bookkeeping():
    for lib in LIBS:
        ov = lib.overrides
        assert ov._get_current_function_mode() is None and not lib._C._is_torch_function_mode_enabled()
        with ov.BaseTorchFunctionMode() as outer:
            with ov.BaseTorchFunctionMode() as inner:
                assert ov._get_current_function_mode_stack() == [outer, inner]
                assert lib._C._len_torch_function_stack() == 2
                with ov._pop_mode_temporarily() as popped:
                    assert popped is inner and ov._get_current_function_mode() is outer
                assert lib.ones(2).add(1).tolist() == [2.0, 2.0]
        assert ov._get_current_function_mode_stack() == []
        with pytest.raises(NotImplementedError):
            with ov.TorchFunctionMode():
                lib.ones(1)
        with pytest.raises(RuntimeError):
            lib._C._pop_torch_function_stack()
        with pytest.warns(UserWarning, match="no longer necessary"):
            assert isinstance(ov.BaseTorchFunctionMode.push(), ov.BaseTorchFunctionMode)
    with tracegrad.overrides.enable_reentrant_dispatch():     # (torch's refuses outside __torch_dispatch__)
        pass


def test_every_overridable_function_reaches_the_override():
    """torch's generated TensorLike tests: each function get_overridable_functions lists hands a
    call with a duck tensor argument to its ``__torch_function__``, before parsing anything."""
    seen = []

    class TensorLike:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return -1

    funcs = tracegrad.overrides.get_overridable_functions()
    assert {tracegrad, tracegrad.Tensor, tracegrad.nn.functional, tracegrad.linalg} <= set(funcs)
    count = 0
    for ns, fns in funcs.items():
        for f in fns:
            t = TensorLike()
            if getattr(f, "__name__", "") == "__set__":
                f(t, t)               # a property's setter returns None whatever the override says
            else:
                assert f(t) == -1, tracegrad.overrides.resolve_name(f)
            # (an operator reports the method torch reports: Tensor.__iadd__ calls come as Tensor.add_)
            assert len(seen) == 1, tracegrad.overrides.resolve_name(f)
            seen.clear()
            count += 1
    assert count > 1000
    assert tracegrad.mean in funcs[tracegrad] and tracegrad.Tensor.add in funcs[tracegrad.Tensor]
    assert tracegrad.Tensor.shape.__get__ in funcs[tracegrad.Tensor]
    stubs = tracegrad.overrides.get_testing_overrides()
    assert stubs[tracegrad.nn.functional.linear]() == -1


def test_names_ignored_and_nowrap_functions():
    ov = tracegrad.overrides
    assert ov.resolve_name(tracegrad.nn.functional.linear) == "torch.nn.functional.linear"
    assert ov.resolve_name(tracegrad.Tensor.shape.__get__) == "torch.Tensor.shape.__get__"
    assert ov.resolve_name(tracegrad.linalg.det) == "torch.linalg.det"
    assert ov.resolve_name(len) is None
    ignored = ov.get_ignored_functions()
    assert tracegrad.is_tensor in ignored and tracegrad.manual_seed in ignored
    assert tracegrad.add not in ignored
    assert tracegrad.Tensor.grad.__get__ in ov.get_default_nowrap_functions()
    assert ov.is_tensor_method_or_property(tracegrad.Tensor.add)
    assert ov.is_tensor_method_or_property(tracegrad.Tensor.grad.__get__)
    assert not ov.is_tensor_method_or_property(tracegrad.nn.functional.linear)
    # the public function objects keep their signatures while dispatch is on
    import inspect
    assert "input" in inspect.signature(tracegrad.nn.functional.linear).parameters


def test_a_class_statement_defining_torch_function_turns_dispatch_on():
    """NOTE [trampolines]: until something needs it, public functions run their own code; a duck
    tensor's class statement is the signal (it never touches tracegrad otherwise)."""
    from tracegrad._tensor import overridable
    overridable.deactivate()
    assert not overridable.ACTIVE[0]
    x = tracegrad.ones(2)
    assert (x + 1).tolist() == [2.0, 2.0]      # plain tensors: no dispatch installed

    class Duck:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "duck"
    assert overridable.ACTIVE[0]
    assert tracegrad.add(x, Duck()) == "duck" and tracegrad.nn.functional.relu(Duck()) == "duck"
    overridable.deactivate()

    class Sub(tracegrad.Tensor):            # a Tensor subclass turns it on as it is created
        pass
    assert overridable.ACTIVE[0] and type(tracegrad.ones(1).as_subclass(Sub).exp()) is Sub


def test_import_leaves_the_protocol_off():
    # tracegrad's own Tensor subclasses (masked.MaskedTensor) must not turn __torch_function__
    # dispatch on for the process at import: every plain op would pay for it (NOTE [trampolines])
    import subprocess
    import sys
    code = ("import tracegrad; from tracegrad._tensor import overridable as o; "
            "assert not o.ACTIVE[0]; import tracegrad.masked as m; "
            "m.masked_tensor(tracegrad.ones(2), tracegrad.tensor([True, False])); assert o.ACTIVE[0]")
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
