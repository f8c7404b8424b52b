"""Round 16 of PyTorch's own tests, ported: test/distributions/test_transforms.py (test_inv_inv,
test_equality, test_with_cache, test_forward_inverse, test_jacobian, test_compose_transform_shapes,
test_compose_affine, test_compose_reshape, test_transformed_distribution) and
test/distributions/test_constraints.py (test_constraint, test_biject_to, test_transform_to), for
the transforms and constraints test_distributions_ported.py does not reach: CorrCholesky,
LowerCholesky, PositiveDefinite, Cat, Stack, CumulativeDistribution, tensor exponents and
tensor-bounded constraints. Each program runs once with torch (the oracle) and once with
tracegrad (``same_outcome``): equal values, dtypes and shapes, or the same exception class.
Shapes stay at (2, 3), (3, 3) and (2, 3, 3) in float64 to keep the XLA programs few."""
import numpy as np
import pytest

from parity import same_outcome

torch = pytest.importorskip("torch")

R = np.random.RandomState(16)
X23 = R.standard_normal((2, 3)).round(4)
X33 = R.standard_normal((3, 3)).round(4)
POS23 = np.exp(X23)
SIMPLEX23 = POS23 / POS23.sum(-1, keepdims=True)
# a batch of two 3x3 correlation Cholesky factors (rows of unit norm, positive diagonal)
_L = np.tril(R.standard_normal((2, 3, 3)))
CORR_L = _L / np.linalg.norm(_L, axis=-1, keepdims=True)
CORR_L[:, range(3), range(3)] = np.abs(CORR_L[:, range(3), range(3)])


from _distributions_helpers import validation_on  # noqa: E402,F401  (autouse fixture)


def d64(m, a, grad=False):
    return m.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def attempt(fn):
    """fn()'s value, or the name of the exception class it raised (a class torch and
    tracegrad must agree on)."""
    try:
        return fn()
    except (NotImplementedError, ValueError, TypeError, RuntimeError, IndexError) as e:
        return type(e).__mro__[[c.__module__ for c in type(e).__mro__].index("builtins")].__name__


# ---- test_forward_inverse / test_jacobian / test_with_cache ------------------------------------
def _transforms(m, cache_size):
    T = m.distributions.transforms
    c = cache_size
    return {
        "power_tensor": (T.PowerTransform(d64(m, [[0.5], [-1.5]]), cache_size=c), POS23),
        "affine_rows": (T.AffineTransform(d64(m, X23[0]), d64(m, -POS23[1]), cache_size=c), X23),
        "lower_cholesky": (T.LowerCholeskyTransform(cache_size=c), X33),
        "corr_cholesky": (T.CorrCholeskyTransform(cache_size=c), X23[:, :1].repeat(3, 1) * 0.7 + X23),
        "positive_definite": (T.PositiveDefiniteTransform(cache_size=c), X33),
        "compose_affine_exp": (T.ComposeTransform([T.AffineTransform(d64(m, X23), d64(m, POS23), cache_size=c),
                                                   T.ExpTransform(cache_size=c)], cache_size=c), X23),
        "reshape": (T.ReshapeTransform((2, 3), (3, 2)), X23),
        "corr_cholesky_inv": (T.CorrCholeskyTransform(cache_size=c).inv, CORR_L),
        "softmax_inv": (T.SoftmaxTransform(cache_size=c).inv, SIMPLEX23),
        "power_tensor_inv": (T.PowerTransform(d64(m, [[0.5], [-1.5]]), cache_size=c).inv, POS23),
        "cat": (T.CatTransform([T.ExpTransform(cache_size=c), T.AffineTransform(1.0, 2.0, cache_size=c)],
                               dim=1, lengths=[1, 2], cache_size=c), X23),
        "stack": (T.StackTransform([T.ExpTransform(cache_size=c), T.SigmoidTransform(cache_size=c)], dim=0,
                                   cache_size=c), X23),
        "cdf": (T.CumulativeDistributionTransform(m.distributions.Normal(d64(m, 0.5), d64(m, 2.0)), cache_size=c),
                X23),
    }


TRANSFORM_NAMES = list(_transforms(torch, 0))
# the log-det's gradient for the transforms no earlier port differentiates (a backward compile each)
GRAD_CHECKED = {"power_tensor", "corr_cholesky", "corr_cholesky_inv", "cat", "stack", "cdf"}


def _round_trip(m, name, cache_size):
    """test_forward_inverse + test_jacobian + test_with_cache for one transform: y, shapes, the
    inverse (through the cache and bypassing it), the log |det J| and its gradient, whether a
    second call returns the cached object."""
    t, x_np = _transforms(m, cache_size)[name]
    x = d64(m, x_np, grad=True)
    y = t(x)
    out = [y, t.forward_shape(x.shape), t.inverse_shape(y.shape), t.domain.event_dim, t.codomain.event_dim,
           attempt(lambda: t.event_dim), t.bijective, t.inv.inv is t, t(x) is y, attempt(lambda: t.sign)]
    x_cached = attempt(lambda: t.inv(y))
    out += [x_cached, attempt(lambda: x_cached is x), attempt(lambda: t.inv(y.detach().clone()))]
    ladj = attempt(lambda: t.log_abs_det_jacobian(x, y))
    out.append(ladj)
    if not isinstance(ladj, str):
        out += [ladj.shape, ladj.requires_grad]
        if ladj.requires_grad and name in GRAD_CHECKED:
            out.append(m.autograd.grad(ladj.sum(), x, allow_unused=True))
    return out


def test_transform_round_trips_and_jacobians():
    for cache_size in (0, 1):
        for name in TRANSFORM_NAMES:
            try:
                same_outcome(lambda m: _round_trip(m, name, cache_size))
            except AssertionError as e:
                raise AssertionError(f"{name}, cache_size={cache_size}: {e}") from None


def _with_cache_and_equality(m):
    """test_with_cache / test_equality / test_inv_inv on the transforms above, plus the
    cache_size argument check and identity_transform."""
    T = m.distributions.transforms
    ts = list(t for t, _ in _transforms(m, 0).values())
    out = [[[a == b for b in ts] for a in ts], [[a != b for b in ts] for a in ts]]
    cached = [t.with_cache(1) for t in ts]
    out += [[t._cache_size for t in cached], [t.inv.inv is t for t in cached], [type(t).__name__ for t in cached],
            T.identity_transform == T.identity_transform.inv, T.identity_transform.inv.inv is T.identity_transform,
            attempt(lambda: T.ExpTransform(cache_size=2)), attempt(lambda: T.AbsTransform().with_cache(3))]
    x = d64(m, X23)
    c = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)]).with_cache(1)
    y = c(x)
    out += [c(x) is y, c.inv(y) is x, [p._cache_size for p in c.parts]]
    a = T.AffineTransform(d64(m, X23[0]), 2.0).with_cache(1)
    out += [a.loc, a.scale, a.event_dim, a(x)]
    return out


def test_with_cache_equality_and_inv_inv():
    same_outcome(_with_cache_and_equality)


# ---- test_compose_transform_shapes / test_compose_affine / test_compose_reshape -----------------
def _compose_shapes(m):
    T = m.distributions.transforms
    D = m.distributions
    e, s, lc = T.ExpTransform(), T.SoftmaxTransform(), T.LowerCholeskyTransform()
    out = [[t.event_dim for t in (e, s, lc)],
           [T.ComposeTransform(p).event_dim for p in ([e, s], [e, lc], [s, lc], [lc, e], [s, e])]]
    for dims in [(1,), (2, 0), (0, 1, 2)]:
        parts = [T.AffineTransform(m.zeros((1,) * k, dtype=m.float64), 1.0, event_dim=k) for k in dims]
        comp = T.ComposeTransform(parts)
        base = D.Normal(d64(m, 0.0), d64(m, 1.0))
        if comp.domain.event_dim:
            base = base.expand((1,) * comp.domain.event_dim)
        dist = D.TransformedDistribution(base, parts)
        diri = D.Dirichlet(m.ones(3, dtype=m.float64))
        if comp.domain.event_dim > 1:
            diri = diri.expand((1,) * (comp.domain.event_dim - 1))
        out.append([comp.domain.event_dim, comp.codomain.event_dim, dist.support.event_dim,
                    D.TransformedDistribution(diri, parts).support.event_dim, dist.batch_shape, dist.event_shape])
    reshapes = [T.ReshapeTransform((), ()), T.ReshapeTransform((2,), (1, 2)), T.ReshapeTransform((3, 1, 2), (6,)),
                T.ReshapeTransform((6,), (2, 3))]
    comp = T.ComposeTransform(reshapes)
    for batch in [(), (2,)]:
        data = m.zeros(batch + (3, 2), dtype=m.float64)
        dist = D.TransformedDistribution(D.Normal(data, 1.0), reshapes)
        out.append([comp.domain.event_dim, comp.codomain.event_dim, comp(data).shape, dist.batch_shape,
                    dist.event_shape, dist.support.event_dim, dist.log_prob(m.zeros(batch + (2, 3))).shape,
                    comp.forward_shape(batch + (3, 2)), comp.inverse_shape(batch + (2, 3))])
    return out


def test_compose_event_dims_and_reshapes():
    same_outcome(_compose_shapes)


def _transformed_distribution_grid(m):
    """test_transformed_distribution: base batch/event dims x transform chains; too small a
    base raises ValueError, otherwise sample/log_prob shapes (full and partial samples)."""
    D = m.distributions
    T = D.transforms
    shape = (2, 3, 4, 5)
    out = []
    # (base batch dims, base event dims, affine dims, number of transforms): the cases where the
    # base is too small for the chain, an empty chain, each reshape, an event-dim affine
    for base_batch, base_event, tdim, ntrans in ((0, 0, 2, 1), (2, 0, 1, 3), (1, 2, 1, 3)):
        base = D.Normal(d64(m, 0.0), d64(m, 1.0)).expand(shape[4 - base_batch - base_event:])
        if base_event:
            base = D.Independent(base, base_event)
        ts = [T.AffineTransform(m.zeros(shape[4 - tdim:], dtype=m.float64), 1.0),
              T.ReshapeTransform((4, 5), (20,)), T.ReshapeTransform((3, 20), (6, 10))][:ntrans]
        d = attempt(lambda: D.TransformedDistribution(base, ts))
        if isinstance(d, str):
            out.append(d)
            continue
        x = d.sample((2,))
        y = x
        while y.dim() > len(d.event_shape):
            y = y[0]
        out.append([d.batch_shape, d.event_shape, x.shape, d.log_prob(x).shape, d.log_prob(y).shape])
    return out


def test_transformed_distribution_shapes_grid():
    same_outcome(_transformed_distribution_grid)


# ---- test/distributions/test_constraints.py -------------------------------------------------------
EXAMPLES = [
    [[2., 0], [2., 2]], [[3., -5], [-5., 3]], [[1., 2], [2., 4]],
    [[[1., -2], [-2., 1]], [[2., 3], [3., 2]]], [[[1., -2], [-2., 4]], [[1., -1], [-1., 1]]],
    [[[4., 2], [2., 4]], [[3., -1], [-1., 3]]],
]


def _constraint_examples(m):
    """test_constraint: symmetric / positive_semidefinite / positive_definite on the matrices
    above, and the other matrix-shaped and discrete constraints on them."""
    c = m.distributions.constraints
    out = []
    for v in EXAMPLES:
        x = d64(m, v)
        out.append([c.symmetric.check(x), c.positive_semidefinite.check(x), c.positive_definite.check(x),
                    c.square.check(x), c.lower_triangular.check(x), c.lower_cholesky.check(x),
                    c.corr_cholesky.check(x)])
    x = d64(m, [[1.0, 0.0, 0.0], [0.0, 2.0, 1.0]])
    out += [c.one_hot.check(x), c.multinomial(3).check(x), c.positive_integer.check(x),
            c.integer_interval(0, 1).check(x), c.nonnegative_integer.check(x), c.boolean.check(x),
            c.cat([c.positive, c.real], dim=1, lengths=[1, 2]).check(x - 0.5),
            c.stack([c.nonnegative, c.positive], dim=0).check(x),
            [k.event_dim for k in (c.one_hot, c.multinomial(3), c.square, c.symmetric, c.positive_definite,
                                   c.corr_cholesky, c.lower_triangular, c.cat([c.real_vector, c.real]),
                                   c.stack([c.real, c.simplex], dim=-1))],
            [k.is_discrete for k in (c.one_hot, c.multinomial(3), c.positive_integer, c.integer_interval(0, 1),
                                     c.cat([c.real, c.boolean]), c.stack([c.boolean, c.boolean]), c.square)],
            attempt(lambda: c.square.check(d64(m, X23)))]
    return out


def _bounded_constraints(m):
    c = m.distributions.constraints
    lo, hi = d64(m, [-4.0, -2.0, 0.0]), d64(m, [-3.0, 3.0, 1.0])
    # the scalar-bounded ones are in test_distributions_ported.py's registry test
    return {
        "greater_than_tensor": c.greater_than(lo), "less_than_tensor": c.less_than(hi),
        "interval_tensor": c.interval(lo, hi), "half_open_tensor": c.half_open_interval(lo, hi),
        "corr_cholesky": c.corr_cholesky, "lower_cholesky": c.lower_cholesky, "positive_definite": c.positive_definite,
        "cat": c.cat([c.positive, c.unit_interval], dim=0, lengths=[1, 2]),
        "stack": c.stack([c.positive, c.real, c.less_than(1.0)], dim=1),
    }


def _biject_and_transform_to(m):
    """test_biject_to / test_transform_to: bijective, lands in the constraint, inverts (or
    pseudo-inverts), log |det J| has the batch shape; the transform types picked."""
    D = m.distributions
    out = []
    for name, k in _bounded_constraints(m).items():
        x = d64(m, X23[:, :1] * 0.3 + X23 if name == "corr_cholesky" else X33)
        for reg in (D.biject_to, D.transform_to):
            t = attempt(lambda: reg(k))
            if isinstance(t, str):
                out.append((name, t))
                continue
            y = t(x)
            x2 = t.inv(y)
            ladj = attempt(lambda: t.log_abs_det_jacobian(x, y))
            out.append([name, type(t).__name__, t.bijective, y, bool(k.check(y).all()), x2, t(x2),
                        ladj if isinstance(ladj, str) else (ladj, ladj.shape)])
    return out


def test_constraint_checks():
    same_outcome(_constraint_examples)


def test_biject_to_and_transform_to():
    same_outcome(_biject_and_transform_to)
