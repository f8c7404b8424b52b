"""Test parametrization as torch's internal harness does it: ``parametrize``, ``subtest``,
``decorateIf``, ``reparametrize`` and ``instantiate_parametrized_tests``.

A parametrizer decorator only tags the test function with ``parametrize_fn(test, generic_cls,
device_cls)``, a generator of ``(test, name suffix, kwargs, decorator_fn)``; stacked decorators
compose into the product of their parameters. ``instantiate_parametrized_tests`` (or
``instantiate_device_type_tests``) later replaces the generic test with one method per item,
named ``<test>_<suffix>``.
"""
from __future__ import annotations

import functools

import tracegrad


def dtype_name(dtype):
    """``torch.testing._internal.common_utils.dtype_name``: ``float32`` for ``tracegrad.float32``."""
    return str(dtype).split(".")[1]


class _TestParametrizer:
    """Base of the parametrizing decorators (torch's ``_TestParametrizer``): subclasses implement
    ``_parametrize_test(test, generic_cls, device_cls)`` yielding ``(test, suffix, kwargs,
    decorator_fn)``; applying a second one composes the two into their product."""

    def _parametrize_test(self, test, generic_cls, device_cls):
        raise NotImplementedError

    def __call__(self, fn):
        if hasattr(fn, "parametrize_fn"):
            fn.parametrize_fn = compose_parametrize_fns(fn.parametrize_fn, self._parametrize_test)
        else:
            fn.parametrize_fn = self._parametrize_test
        return fn


def compose_parametrize_fns(old_parametrize_fn, new_parametrize_fn):
    """The product of two ``parametrize_fn``s (torch's ``compose_parametrize_fns``): names join as
    ``<new>_<old>`` (the decorator written above comes first in the name); a parameter handled by
    both is a RuntimeError."""
    def composite_fn(test, generic_cls, device_cls):
        for old_test, old_name, old_kwargs, old_dec_fn in list(old_parametrize_fn(test, generic_cls, device_cls)):
            for new_test, new_name, new_kwargs, new_dec_fn in new_parametrize_fn(old_test, generic_cls, device_cls):
                twice = set(old_kwargs) & set(new_kwargs)
                if twice:
                    raise RuntimeError(f"Parametrization over the same parameter by multiple parametrization "
                                       f"decorators is not supported. For test \"{test.__name__}\", the following "
                                       f"parameters are handled multiple times: {twice}")
                name = "_".join(n for n in (new_name, old_name) if n)

                def dec_fn(kwargs, old_dec_fn=old_dec_fn, new_dec_fn=new_dec_fn):
                    return list(old_dec_fn(kwargs)) + list(new_dec_fn(kwargs))
                yield new_test, name, {**old_kwargs, **new_kwargs}, dec_fn
    return composite_fn


class subtest:
    """One explicitly named (and optionally decorated) value set of ``@parametrize``; mirrors
    ``torch.testing._internal.common_utils.subtest``.
    Args: ``arg_values`` -- the value (one parameter) or tuple of values; ``name`` -- the test
    name suffix; ``decorators`` -- applied to this generated test only (``unittest.expectedFailure``...)."""
    __slots__ = ["arg_values", "name", "decorators"]

    def __init__(self, arg_values, name=None, decorators=None):
        self.arg_values = arg_values
        self.name = name
        self.decorators = decorators if decorators else []


class parametrize(_TestParametrizer):
    """Mirrors ``torch.testing._internal.common_utils.parametrize``: ``@parametrize("x,y", [(1, 'a'),
    (2, 'b')])`` makes one test per value set once the class goes through
    ``instantiate_parametrized_tests`` or ``instantiate_device_type_tests``.

    Names: ``name_fn(*values)`` if given, else per value ``x_1`` for ints, floats (``.`` becomes
    ``_``) and strings, the bare name for dtypes (``float32``) and devices, ``x0`` (name + index)
    otherwise; a ``subtest``'s ``name`` wins. Raises RuntimeError for a value tuple of the wrong
    length and ValueError for an empty (or exhausted) ``arg_values``.
    """

    def __init__(self, arg_str, arg_values, name_fn=None):
        self.arg_names = [s.strip() for s in arg_str.split(",") if s != ""]
        self.arg_values = arg_values
        self.name_fn = name_fn

    def _formatted_str_repr(self, idx, name, value):
        if isinstance(value, tracegrad.dtype):
            return dtype_name(value)
        if isinstance(value, tracegrad.device):
            return str(value)
        if type(value).__name__ in {"OpInfo", "ModuleInfo"}:
            return value.formatted_name
        if isinstance(value, (int, float, str)):
            return f"{name}_{str(value).replace('.', '_')}"
        return f"{name}{idx}"

    def _default_subtest_name(self, idx, values):
        return "_".join(self._formatted_str_repr(idx, a, v) for a, v in zip(self.arg_names, values))

    def _get_subtest_name(self, idx, values, explicit_name=None):
        if explicit_name:
            return explicit_name
        if self.name_fn:
            return self.name_fn(*values)
        return self._default_subtest_name(idx, values)

    def _parametrize_test(self, test, generic_cls, device_cls):
        if not self.arg_names:
            yield test, "", {}, lambda _: []
            return
        seen = False
        for idx, values in enumerate(self.arg_values):
            seen = True
            explicit, decorators, gen_test = None, [], test
            if isinstance(values, subtest):
                explicit, decorators, values = values.name, values.decorators, values.arg_values

                @functools.wraps(test)
                def gen_test(*args, **kwargs):       # its own function: the decorators must not touch the others
                    return test(*args, **kwargs)
            values = list(values) if len(self.arg_names) > 1 else [values]
            if len(values) != len(self.arg_names):
                raise RuntimeError(f"Expected # values == # arg names, but got: {len(values)} values and "
                                   f"{len(self.arg_names)} names for test \"{test.__name__}\"")
            yield (gen_test, self._get_subtest_name(idx, values, explicit_name=explicit),
                   dict(zip(self.arg_names, values)), lambda _, decorators=decorators: decorators)
        if not seen:
            raise ValueError(f"{test}: An empty arg_values was passed to @parametrize. "
                             f"Note that this may result from reuse of a generator.")


class reparametrize(_TestParametrizer):
    """Mirrors ``common_utils.reparametrize``: ``adapter_fn(name, kwargs)`` maps each item of
    ``parametrizer`` to an iterable of ``(new name, new kwargs)`` (``None`` drops the item)."""

    def __init__(self, parametrizer, adapter_fn):
        self.parametrizer = parametrizer
        self.adapter_fn = adapter_fn

    def _parametrize_test(self, test, generic_cls, device_cls):
        for gen_test, name, kwargs, dec_fn in self.parametrizer._parametrize_test(test, generic_cls, device_cls):
            for item in self.adapter_fn(name, kwargs) or ():
                if item is not None:
                    yield gen_test, item[0], item[1], dec_fn


class decorateIf(_TestParametrizer):
    """Mirrors ``common_utils.decorateIf``: applies ``decorator`` to each generated test whose full
    parameter dict satisfies ``predicate_fn(params)``; composes with the other parametrizers in
    either order (it adds no parameter of its own)."""

    def __init__(self, decorator, predicate_fn):
        self.decorator = decorator
        self.predicate_fn = predicate_fn

    def _parametrize_test(self, test, generic_cls, device_cls):
        @functools.wraps(test)
        def test_wrapper(*args, **kwargs):
            return test(*args, **kwargs)
        yield test_wrapper, "", {}, lambda params: [self.decorator] if self.predicate_fn(params) else []


def instantiate_parametrized_tests(generic_cls):
    """Mirrors ``common_utils.instantiate_parametrized_tests`` (also a class decorator): replaces
    every test tagged by a parametrizer with its generated tests ``<name>_<suffix>``, each calling
    the generic one with its keyword arguments. Raises AssertionError when a generated name is
    already taken. Returns the class."""
    for attr_name in tuple(dir(generic_cls)):
        class_attr = getattr(generic_cls, attr_name)
        if not hasattr(class_attr, "parametrize_fn"):
            continue
        delattr(generic_cls, attr_name)
        for test, suffix, kwargs, dec_fn in class_attr.parametrize_fn(class_attr, generic_cls=generic_cls,
                                                                      device_cls=None):
            name = f"{test.__name__}_{suffix}"
            for decorator in dec_fn(kwargs):
                test = decorator(test)

            @functools.wraps(test)
            def instantiated_test(self, test=test, kwargs=kwargs):
                test(self, **kwargs)
            if hasattr(generic_cls, name):
                raise AssertionError(f"Redefinition of test {name}")
            setattr(generic_cls, name, instantiated_test)
    return generic_cls
