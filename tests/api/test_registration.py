"""One registration for Tensor methods and ``tracegrad.<name>`` functions (issue 7).

Each op family of ``tracegrad/_api/`` declares its methods, properties, operators and functions
where they are defined (``_api/_registry.py``: ``@method("sub", "subtract", function=True)``);
``_api/tensor_methods.py`` installs them on ``Tensor`` once and ``_api/functions.py`` is the
``tracegrad.<name>`` namespace. These tests check that the registry is the only source: what it
holds is on ``Tensor`` and ``tracegrad`` as the same objects, and nothing else is attached.
"""
import ast
import inspect
import pathlib
import types
import pytest

from tracegrad._api.argcheck import unguarded

import tracegrad
from tracegrad._api import _registry, functions, out_functions
from tracegrad._api._registry import FUNCTIONS, METHODS

ROOT = pathlib.Path(tracegrad.__file__).parent
Tensor = tracegrad.Tensor

# Registered names that a Tensor method and a tracegrad function share, as different objects.
DIFFERENT_METHOD_AND_FUNCTION = {
    **{n: f"torch.{n}(beta, input, ...) is its deprecated overload, Tensor.{n}(beta, ...) the method's"
       for n in ("addmm", "addbmm", "baddbmm", "addmv", "addr")},
    "bernoulli": "Tensor.bernoulli refuses out= (torch's methods take none) vs tracegrad.bernoulli(..., out=)",
    "narrow_copy": "Tensor.narrow_copy refuses out= (torch's methods take none) vs tracegrad.narrow_copy(..., out=)",
    "where": "Tensor.where(condition, other) vs tracegrad.where(condition, input, other)",
    "polygamma": "Tensor.polygamma(n) vs tracegrad.polygamma(n, input)",
    "real": "Tensor.real is a property (a view, settable) vs the function tracegrad.real(input)",
    "imag": "Tensor.imag is a property (a view, settable) vs the function tracegrad.imag(input)",
    "split": "Tensor.split(split_size, dim) vs tracegrad.split(tensor, split_size_or_sections, dim): torch's names",
    "tile": "Tensor.tile(*dims) takes its dims unpacked too vs tracegrad.tile(input, dims)",
    "reshape": "Tensor.reshape(*shape) takes its sizes unpacked too vs tracegrad.reshape(input, shape): one sequence",
    "permute": "Tensor.permute(*dims) takes its dims unpacked too vs tracegrad.permute(input, dims): one sequence",
    "flip": "Tensor.flip(*dims) takes its dims unpacked too vs tracegrad.flip(input, dims): one sequence",
    # torch's parser takes a method's only int[] argument unpacked too (_registry.int_list_method)
    **{n: f"Tensor.{n}(*ints) takes its int list unpacked too vs tracegrad.{n}(input, one argument)"
       for n in ("squeeze", "count_nonzero", "broadcast_to", "hsplit", "vsplit", "dsplit")},
    "repeat_interleave": "Tensor.repeat_interleave(repeats, ...) requires repeats vs tracegrad.repeat_interleave(counts)",
}
# Tensor's class body names the registry may replace, with why (the registry's definition wins).
CLASS_BODY_STUBS: dict = {}
# Tensor attributes set outside the registry (above the API layer, which cannot register them).
ATTACHED_ELSEWHERE: dict = {
    "det": "set by tracegrad/_linalg_functions.py (L7): it needs tracegrad.linalg, above the registry's layer",
    "inverse": "set by tracegrad/_linalg_functions.py (L7): it needs tracegrad.linalg, above the registry's layer",
    "logdet": "set by tracegrad/_linalg_functions.py (L7): it needs tracegrad.linalg, above the registry's layer",
    "slogdet": "set by tracegrad/_linalg_functions.py (L7): it needs tracegrad.linalg, above the registry's layer",
    "svd": "set by tracegrad/_linalg_functions.py (L7): it needs tracegrad.linalg, above the registry's layer",
    "cross": "set by tracegrad/_linalg_functions.py (L7): it needs tracegrad.linalg, above the registry's layer",
    "matrix_power": "set by tracegrad/_linalg_functions.py (L7): it needs tracegrad.linalg, above the registry's layer",
    "pinverse": "set by tracegrad/_linalg_functions.py (L7): it needs tracegrad.linalg, above the registry's layer",
}
ATTACHED_ELSEWHERE.update({name: "set by tracegrad/_linalg_functions.py (L7): it needs tracegrad.linalg, above the "
                           "registry's layer" for name in ("cholesky", "cholesky_solve", "cholesky_inverse", "lu",
                                                           "lu_solve", "qr", "triangular_solve", "matrix_exp",
                                                           "geqrf", "orgqr", "ormqr")})
ATTACHED_ELSEWHERE.update({name: "set by tracegrad/_spectral.py (L7): it needs tracegrad.fft, above the registry's "
                           "layer" for name in ("stft", "istft")})
ATTACHED_ELSEWHERE.update({name: "set by tracegrad/nn/_toplevel.py (L7): it needs nn.functional, above the "
                           "registry's layer" for name in ("prelu", "hardshrink")})
# Python's own class attributes; ``__slotnames__`` is copyreg's cache, written on the class the first time
# ``copyreg._slotnames`` reads it (tracegrad.utils.swap_tensors does, as torch's), so it appears or not
# depending on which tests ran before in the same process.
PYTHON_CLASS_ATTRS = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__annotations__",
                      "__firstlineno__", "__static_attributes__", "__slotnames__"}


def _class_body_names():
    """Names Tensor's class statement in ``_tensor/tensor.py`` defines (slots included)."""
    tree = ast.parse((ROOT / "_tensor" / "tensor.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    names = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(x.id for t in targets for x in ast.walk(t) if isinstance(x, ast.Name))
            if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in targets):
                names.update(ast.literal_eval(node.value))
    return names


def test_registered_methods_are_on_tensor_as_plain_functions():
    wrong = [n for n, obj in METHODS.items() if vars(Tensor).get(n) is not obj]
    assert not wrong, f"Tensor.{wrong} are not the registered objects (set again after install?)"
    kinds = [n for n, obj in METHODS.items() if not isinstance(obj, (types.FunctionType, property))]
    assert not kinds, f"Tensor.{kinds}: register plain functions or properties (no wrapper per call)"


def test_registered_functions_are_tracegrad_names():
    missing = [n for n, fn in FUNCTIONS.items() if getattr(tracegrad, n, None) is not fn]
    assert not missing, f"registered but not tracegrad.<name>: {missing} (re-export them in tracegrad/__init__.py)"


def test_function_flag_makes_method_and_function_one_object():
    """A name registered with function=True is one object on Tensor and in tracegrad (behind the
    function form's argument-kind guard, ``argcheck``), except where the function form takes
    torch's out= and the method does not (``out_functions``): then the function wraps the method."""
    shared = FUNCTIONS.keys() & METHODS.keys()
    functions = {n: unguarded(FUNCTIONS[n]) for n in shared}
    methods = {n: unguarded(METHODS[n]) for n in shared}
    differ = {n for n in shared if functions[n] is not methods[n]}
    wrapped = {n for n in differ if getattr(functions[n], "__wrapped__", None) is methods[n]}
    assert differ - wrapped == set(DIFFERENT_METHOD_AND_FUNCTION)
    assert wrapped <= set(out_functions.RULES)
    for n in shared - differ:
        assert getattr(tracegrad, n) is getattr(Tensor, n) or unguarded(getattr(tracegrad, n)) is getattr(Tensor, n), n
    # a sample of the identities users rely on
    assert Tensor.arcsin is Tensor.asin and Tensor.greater is Tensor.gt and Tensor.clip_ is Tensor.clamp_


def test_function_forms_take_out():
    x = tracegrad.tensor([1.0, 4.0])
    for fn in (tracegrad.sqrt, tracegrad.exp, tracegrad.clamp, tracegrad.sum, tracegrad.matmul):
        assert "out" in inspect.signature(fn, follow_wrapped=False).parameters, fn
    out = tracegrad.empty(2)
    assert tracegrad.sqrt(x, out=out) is out and out.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError):
        x.cumsum(0, out=out)     # torch: Tensor.cumsum takes no out either


def test_root_reexports_exactly_the_registry():
    """tracegrad/__init__.py names each function (no star import); it must list all of them."""
    assert functions.__all__ == sorted(FUNCTIONS)
    tree = ast.parse((ROOT / "__init__.py").read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "_api.functions"
             for a in n.names]
    assert len(names) == len(set(names))
    assert sorted(names) == functions.__all__, (
        f"add to tracegrad/__init__.py: {sorted(set(functions.__all__) - set(names))}; "
        f"not registered: {sorted(set(names) - set(functions.__all__))}")


def test_no_tensor_attribute_outside_the_registry():
    body = _class_body_names()
    overlap = body & METHODS.keys()
    assert overlap <= set(CLASS_BODY_STUBS), f"defined both in Tensor's class body and the registry: {overlap - set(CLASS_BODY_STUBS)}"
    assert Tensor.is_contiguous is METHODS["is_contiguous"]
    extra = set(vars(Tensor)) - body - METHODS.keys() - PYTHON_CLASS_ATTRS - set(ATTACHED_ELSEWHERE)
    assert not extra, f"Tensor.{sorted(extra)} are attached outside _api/_registry.py: register them there"


def test_one_registration_adds_method_and_function():
    saved = dict(METHODS), dict(FUNCTIONS)
    try:
        @_registry.method("probe_twice", "probe_double", function=True)
        def probe_twice(self):
            return self * 2

        _registry.prop("probe_prop")(lambda self: 7)

        class Probe:
            pass
        _registry.install(Probe)
        assert Probe.probe_twice is Probe.probe_double is probe_twice
        assert Probe().probe_prop == 7
        assert functions.probe_twice is functions.probe_double is probe_twice   # the tracegrad.<name> namespace
        assert all(hasattr(Probe, n) for n in saved[0])
    finally:
        METHODS.clear()
        METHODS.update(saved[0])
        FUNCTIONS.clear()
        FUNCTIONS.update(saved[1])


def test_a_name_registered_twice_raises():
    saved = dict(METHODS)
    try:
        try:
            _registry.method("add")(lambda self, other: other)
        except RuntimeError as e:
            assert "registered twice" in str(e)
        else:
            raise AssertionError("registering Tensor.add a second time should raise")
    finally:
        METHODS.clear()
        METHODS.update(saved)


def test_api_function_local_imports_say_why():
    """A function-local import in _api/ hides an edge (or a cycle): each one says why on its line."""
    bare = []
    for path in sorted((ROOT / "_api").glob("*.py")):
        lines = path.read_text().splitlines()
        tree = ast.parse("\n".join(lines))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and "#" not in lines[node.lineno - 1]:
                        bare.append(f"{path.name}:{node.lineno}")
    assert not bare, f"function-local imports without a reason: {sorted(set(bare))}"


def test_numpy_keyword_names_as_torch():
    # torch's C++-bound functions take axis= for dim= and keepdims= for keepdim= (karpathy's
    # makemore lectures: counts.sum(1, keepdims=True)); its Python-level Tensor.norm does not;
    # both spellings at once is a TypeError
    torch = pytest.importorskip("torch")
    calls = ["x.sum(axis=1)", "x.sum(1, keepdims=True)", "m.sum(x, axis=0, keepdims=True)",
             "x.mean(axis=0, keepdims=True)", "x.amax(axis=1)", "x.std(axis=0)", "x.softmax(axis=0)",
             "m.cat([x, x], axis=0)", "x.logsumexp(axis=1, keepdims=True)", "x.argmax(axis=1, keepdims=True)",
             "x.all(axis=1)", "x.max(axis=1, keepdims=True).values", "x.norm(dim=1, keepdims=True)",
             "x.sum(dim=1, axis=1)", "m.sum(x, 1, out=m.empty(2), keepdims=False)"]

    def run(m):
        x = m.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]])
        out = []
        for c in calls:
            try:
                r = eval(c, {"m": m, "x": x})
                out.append((tuple(r.shape), r.detach().numpy().round(5).tolist()))
            except TypeError:
                out.append("TypeError")
        return out
    assert run(tracegrad) == run(torch)


@pytest.mark.parametrize("call", [lambda m: m.sin(m.ones(2), m.ones(2)), lambda m: m.eq(m.ones(2), 1, 2),
                                  lambda m: m.bitwise_and(m.ones(2, dtype=m.int64), 1, 2)],
                         ids=["sin", "eq", "bitwise_and"])
def test_wrong_argument_count_names_the_public_function(call):
    """Functions a family's factory makes (``_unary.<locals>.f``) carry their public name, so
    Python's TypeError for a wrong argument count reads as torch's (``sin() takes 1 positional
    argument but 2 were given``; torch's methods say ``TensorBase.cos()``, not compared)."""
    torch = pytest.importorskip("torch")
    msgs = []
    for mod in (torch, tracegrad):
        with pytest.raises(TypeError) as e:
            call(mod)
        msgs.append(str(e.value).split("(")[0])
    assert msgs[1] == msgs[0]
