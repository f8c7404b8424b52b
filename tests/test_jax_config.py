"""DESIGN 2.7: importing and using tracegrad leaves the user's own JAX code alone.

A subprocess (so this test process's JAX state plays no part) probes what plain JAX code sees
-- default dtypes, a jitted function's result, the global config and ``XLA_FLAGS`` -- before
``import tracegrad``, after it, and after tracegrad ran ops, backward, an optimizer step and
float64/int64 work (also on a second thread). The probes must be identical, except for the two
global settings the README lists. tracegrad itself still makes float64/int64 where torch does.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracegrad

# the global JAX settings tracegrad changes at import (README "Runtime settings")
DOCUMENTED = {"jax_cpu_enable_async_dispatch", "jax_compilation_cache_dir",
              "jax_persistent_cache_min_compile_time_secs"}

SCRIPT = textwrap.dedent(r"""
    import json, os, sys, threading, warnings
    import numpy as np
    import jax, jax.numpy as jnp

    def user_double(x):
        return x * 2 + 1
    double = jax.jit(user_double)

    def probe():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # explicit 64-bit requests warn with x64 off
            out = {
                "ones": str(jnp.ones(3).dtype),
                "arange": str(jnp.arange(3).dtype),
                "float": str(jnp.array(1.5).dtype),
                "int": str(jnp.array(7).dtype),
                "np_float64": str(jnp.asarray(np.ones(2)).dtype),
                "np_int64": str(jnp.asarray(np.arange(2, dtype=np.int64)).dtype),
                "explicit_f64": str(jnp.zeros(2, jnp.float64).dtype),
                "jit_dtype": str(double(jnp.arange(3)).dtype),
                "jit_value": double(jnp.arange(3)).tolist(),
                "jit_float": str(jax.jit(lambda x: x / 3)(np.float64(1.0)).dtype),
                "promote": str((jnp.ones(2, jnp.int32) * 2.5).dtype),
                "random": str(jax.random.normal(jax.random.key(0), (2,)).dtype),
                "x64": bool(jax.config.jax_enable_x64),
                "x64_state": bool(jax.enable_x64.value),
                "XLA_FLAGS": os.environ.get("XLA_FLAGS"),
            }
        out["config"] = {k: repr(v) for k, v in jax.config.values.items()}
        return out

    probes = {"before": probe()}
    import tracegrad as torch
    probes["import"] = probe()

    # use tracegrad: default and 64-bit tensors, ops, backward, an optimizer step
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(5, 3), torch.randn(5, 1)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    d = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (d.exp() * 3).sum().backward()
    i = torch.arange(6).reshape(2, 3)
    big = (i + 2 ** 40).sum().item()
    v = d.detach()[1:]
    v.add_(1e-12)
    dd = d.detach().clone()
    dd[0] = 5
    repr(d), repr(i), d.tolist(), i.numpy()
    probes["used"] = probe()

    # a second thread's tracegrad calls leave this thread's JAX alone, and vice versa
    t = threading.Thread(target=lambda: (torch.ones(2, dtype=torch.float64) * 2).sum().item())
    t.start(); t.join()
    probes["thread"] = probe()

    name = lambda t: str(t.dtype).split(".")[-1]
    probes["tracegrad"] = {
        "d.grad": name(d.grad), "i": name(i), "big": big, "loss": name(loss),
        "precise": bool((d.detach()[1] + 1e-12).item() != 2.0), "v": v.tolist(),
        "param": name(next(model.parameters())),
    }
    print("PROBES" + json.dumps(probes))
""")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("xla_cache")


@pytest.fixture(scope="module")
def probes(cache_dir):
    env = dict(os.environ)
    env.pop("JAX_ENABLE_X64", None)
    env["TRACEGRAD_CACHE_DIR"] = str(cache_dir)
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("PROBES"))
    return json.loads(line[len("PROBES"):])


def _without_config(p):
    return {k: v for k, v in p.items() if k != "config"}


def test_default_dtypes_are_jax_defaults_before_import(probes):
    before = probes["before"]
    assert (before["ones"], before["arange"], before["float"], before["int"]) == \
        ("float32", "int32", "float32", "int32")
    assert before["x64"] is False


@pytest.mark.parametrize("stage", ["import", "used", "thread"])
def test_user_jax_code_unchanged(probes, stage):
    assert _without_config(probes[stage]) == _without_config(probes["before"])


@pytest.mark.parametrize("stage", ["import", "used", "thread"])
def test_only_documented_global_settings_change(probes, stage):
    before, after = probes["before"]["config"], probes[stage]["config"]
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed <= DOCUMENTED, f"tracegrad changed undocumented JAX settings: {sorted(changed - DOCUMENTED)}"
    assert "jax_enable_x64" not in changed


def test_persistent_cache_holds_tracegrad_programs(probes, cache_dir):
    assert any(p.name.startswith("jit_") for p in cache_dir.iterdir())


def test_tracegrad_keeps_64_bit_types_in_the_subprocess(probes):
    t = probes["tracegrad"]
    assert t["d.grad"] == "float64" and t["i"] == "int64"
    assert t["loss"] == t["param"] == "float32"
    assert t["big"] == 6 * 2 ** 40 + 15          # int64 arithmetic, not int32
    assert t["precise"]                          # float64 resolution, not float32
    assert t["v"] == [2.0 + 1e-12]               # an in-place write through a view, 64-bit


def _dtype_cases(m):
    """(name, thunk) pairs run on torch and tracegrad: every one makes a tensor whose dtype
    must agree (float64/int64 where torch gives them)."""
    f64 = np.array([1.5, -2.0])
    return [
        ("tensor_int", lambda: m.tensor([1, 2])),
        ("tensor_float", lambda: m.tensor([1.0, 2.0])),
        ("tensor_f64", lambda: m.tensor([1.0], dtype=m.float64)),
        ("from_numpy_f64", lambda: m.from_numpy(f64.copy())),
        ("from_numpy_i64", lambda: m.from_numpy(np.arange(3, dtype=np.int64))),
        ("tensor_np_f64", lambda: m.tensor(f64)),
        ("arange", lambda: m.arange(4)),
        ("arange_float", lambda: m.arange(0.0, 2.0, 0.5)),
        ("full_int", lambda: m.full((2,), 3)),
        ("zeros_f64", lambda: m.zeros(2, dtype=m.float64)),
        ("ones_i64", lambda: m.ones(2, dtype=m.int64)),
        ("eye_f64", lambda: m.eye(2, dtype=m.float64)),
        ("linspace_f64", lambda: m.linspace(0, 1, 3, dtype=m.float64)),
        ("randint", lambda: m.randint(0, 5, (3,))),
        ("randperm", lambda: m.randperm(4)),
        ("randn_f64", lambda: m.randn(2, dtype=m.float64)),
        ("sum_int", lambda: m.tensor([1, 2, 3]).sum()),
        ("argmax_f64", lambda: m.tensor([1.0, 3.0], dtype=m.float64).argmax()),
        ("mul_f64_scalar", lambda: m.tensor([1.0], dtype=m.float64) * 2.5),
        ("int_true_div", lambda: m.tensor([3]) / 2),
        ("int_mul_float", lambda: m.tensor([3]) * 2.5),
        ("double", lambda: m.ones(2).double()),
        ("long", lambda: m.ones(2).long()),
        ("to_f64", lambda: m.ones(2).to(m.float64)),
        ("int_add_big", lambda: m.tensor([1]) + 2 ** 40),
        ("mean_f64", lambda: m.tensor([1.0, 2.0], dtype=m.float64).mean()),
        ("where_i64", lambda: m.where(m.tensor([True, False]), m.tensor([1]), m.tensor([2]))),
        ("cumsum_int", lambda: m.tensor([1, 2]).cumsum(0)),
        ("normal_", lambda: m.zeros(2, dtype=m.float64).normal_()),
        ("fill_i64", lambda: m.zeros(2, dtype=m.int64).fill_(7)),
    ]


def test_dtypes_match_torch():
    torch = pytest.importorskip("torch")
    tc, gc = _dtype_cases(torch), _dtype_cases(tracegrad)
    for (name, t_fn), (_, g_fn) in zip(tc, gc):
        want, got = t_fn(), g_fn()
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
        if name in ("int_add_big", "sum_int", "cumsum_int", "tensor_np_f64", "mul_f64_scalar"):
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)


def test_scope_is_thread_local_and_nests():
    import jax
    import jax.numpy as jnp
    from tracegrad._x64 import astype, with_x64, x64_enabled, x64_scope

    outer = x64_enabled()
    with x64_scope():
        assert x64_enabled() and jnp.ones(1).dtype == np.float64
        with x64_scope():
            assert x64_enabled()
        assert x64_enabled()                      # the inner scope restored "on"
        seen = []
        import threading
        th = threading.Thread(target=lambda: seen.append(x64_enabled()))
        th.start()
        th.join()
        assert seen == [outer]                    # other threads keep their own setting
    assert x64_enabled() is outer

    @with_x64
    def make():
        return jnp.arange(2)
    assert make().dtype == np.int64
    with pytest.raises(ZeroDivisionError):
        with_x64(lambda: 1 / 0)()
    assert x64_enabled() is outer                 # restored after an exception
    with x64_scope():
        a = jnp.ones(2, jnp.float32)
    assert astype(a, np.float64).dtype == np.float64
    with jax.enable_x64(False):                   # a caller that turned x64 off keeps it off
        assert tracegrad.ones(2, dtype=tracegrad.float64).dtype is tracegrad.float64
        assert not x64_enabled()


@pytest.mark.parametrize("jax_first", [False, True])
def test_async_dispatch_set_only_where_it_takes_effect(jax_first):
    # JAX reads the flag when it creates its CPU client: tracegrad turns it off when imported
    # first, and leaves it (and the config value the user reads) alone once the client exists
    code = ("import jax, jax.numpy as jnp\n" + ("jnp.ones(1).block_until_ready()\n" if jax_first else "")
            + "import tracegrad\nprint(jax.config.values['jax_cpu_enable_async_dispatch'])")
    env = dict(os.environ, TRACEGRAD_CACHE_DIR="")
    env.pop("TRACEGRAD_ASYNC_DISPATCH", None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == str(jax_first)


def test_import_leaves_jax_backends_unstarted():
    """``import tracegrad`` starts no JAX backend: platform settings and
    ``jax.distributed.initialize`` (``init_process_group``) must still be possible after it."""
    code = ("import tracegrad, tracegrad.nn, tracegrad.optim, tracegrad.distributed, tracegrad.func\n"
            "from jax._src import xla_bridge\n"
            "print('STARTED', xla_bridge.backends_are_initialized())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "STARTED False" in r.stdout, r.stdout


def test_import_loads_the_mlir_dialects_a_ctrl_c_could_leave_half_registered():
    # JAX imports them lazily at the process's first lowering; a KeyboardInterrupt inside that
    # import left MLIR's registry half filled and every later new program failed ("Dialect
    # namespace 'mhlo' is already registered"). tracegrad's import loads them, and starts no
    # backend doing so (the user may still configure JAX after importing tracegrad).
    code = textwrap.dedent("""
        import sys
        import tracegrad
        from jax._src import xla_bridge
        print(int("jaxlib.mlir.dialects.mhlo" in sys.modules), int("jaxlib.mlir.dialects.builtin" in sys.modules),
              int(xla_bridge.backends_are_initialized()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1", "0"], out.stdout
