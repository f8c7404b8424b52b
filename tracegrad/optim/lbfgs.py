"""``LBFGS``. Mirrors ``torch.optim.LBFGS``: limited-memory BFGS over the flattened parameters,
with an optional strong-Wolfe line search.

L-BFGS needs the loss and gradient values to decide its steps (curvature checks, line
search), so unlike the other optimizers its ``step`` reads tensor values on the host: it is
not traceable (NOTE [traceable step] does not apply), as in torch where it cannot be captured
either. Scalars that torch keeps as 0-d tensors (``ys``, ``rho``, ``H_diag``, directional
derivatives) stay 0-d tensors here, so the float32 rounding matches torch step for step.
"""
from __future__ import annotations

import tracegrad

from .optimizer import Optimizer

__all__ = ["LBFGS"]


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, slope g1) and (x2, f2, slope g2), clipped to
    ``bounds`` (default: the interval between x1 and x2); the bounds' midpoint when the cubic
    has no real minimiser."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 ** 2 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = disc.sqrt()
    if x1 <= x2:
        pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(pos, lo), hi)


class _Bracket:
    """The search interval of the zoom phase: step sizes with their losses, gradients and
    directional derivatives."""

    def __init__(self, ts, fs, gs, gtds):
        self.t, self.f, self.g, self.gtd = ts, fs, gs, gtds

    def set(self, i, t, f, g, gtd):
        self.t[i], self.f[i], self.g[i], self.gtd[i] = t, f, g, gtd

    def order(self):
        """(low, high): the end with the smaller loss first."""
        return (0, 1) if self.f[0] <= self.f[-1] else (1, 0)


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search along ``d`` for a step ``t`` meeting the strong Wolfe conditions (sufficient
    decrease ``c1``, curvature ``c2``): a bracketing phase that grows the step by cubic
    extrapolation, then a zoom phase of safeguarded cubic interpolation.
    ``evaluate(t) -> (loss float, flat grad)``. Returns (loss, flat grad, t, evaluations)."""
    d_norm = d.abs().max()
    g = g.clone()
    f_new, g_new = evaluate(t)
    evals, it = 1, 0
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done, br = False, None
    while it < max_ls:
        # the order of the three tests matters: an acceptable step ends the search before an
        # uphill slope brackets it
        if f_new > (f + c1 * t * gtd) or (it > 1 and f_new >= f_prev):
            br = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new])
            break
        if abs(gtd_new) <= -c2 * gtd:
            br, done = _Bracket([t], [f_new], [g_new], [gtd_new]), True
            break
        if gtd_new >= 0:
            br = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new])
            break
        # extrapolate: the next step lies in [t + 0.01 (t - t_prev), 10 t]
        t_next = _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.clone(), gtd_new
        t = t_next
        f_new, g_new = evaluate(t)
        evals, it = evals + 1, it + 1
        gtd_new = g_new.dot(d)
    if it == max_ls:
        br = _Bracket([0, t], [f, f_new], [g, g_new], [gtd, gtd_new])

    # zoom: shrink the bracket until a step satisfies both conditions
    stalled = False
    low, high = br.order()
    while not done and it < max_ls:
        if abs(br.t[1] - br.t[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(br.t[0], br.f[0], br.gtd[0], br.t[1], br.f[1], br.gtd[1])
        t_hi, t_lo = max(br.t), min(br.t)
        # a trial too close to an end makes no progress: move it inside by 10% of the width
        margin = 0.1 * (t_hi - t_lo)
        if min(t_hi - t, t - t_lo) < margin:
            if stalled or t >= t_hi or t <= t_lo:
                t = t_hi - margin if abs(t - t_hi) < abs(t - t_lo) else t_lo + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        f_new, g_new = evaluate(t)
        evals, it = evals + 1, it + 1
        gtd_new = g_new.dot(d)
        if f_new > (f + c1 * t * gtd) or f_new >= br.f[low]:
            br.set(high, t, f_new, g_new.clone(), gtd_new)
            low, high = br.order()
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (br.t[high] - br.t[low]) >= 0:
                br.set(high, br.t[low], br.f[low], br.g[low], br.gtd[low])
            br.set(low, t, f_new, g_new.clone(), gtd_new)
    return br.f[low], br.g[low], br.t[low], evals


class LBFGS(Optimizer):
    """Limited-memory BFGS. Mirrors ``torch.optim.LBFGS``.

    Args:
        params: iterable of Tensors (one group only).
        lr (float, default 1): step length scale. max_iter (int, default 20): iterations per
        ``step``. max_eval (int, default ``max_iter * 5 // 4``): loss evaluations per ``step``.
        tolerance_grad (default 1e-7): stop when the largest gradient entry is below it.
        tolerance_change (default 1e-9): stop when the step or the loss change is below it.
        history_size (int, default 100): curvature pairs kept. line_search_fn: None or
        ``"strong_wolfe"``.

    ``step(closure)`` requires a closure that zeroes the gradients, computes the loss, calls
    ``backward`` and returns the loss; it returns the first loss. State (on the first
    parameter, as torch): ``func_evals``, ``n_iter``, ``d``, ``t``, ``old_dirs``, ``old_stps``,
    ``ro``, ``H_diag``, ``prev_flat_grad``, ``prev_loss``, ``al``. A complex parameter counts
    as two real entries (its ``view_as_real``) in the flat vectors, as torch.

    Raises:
        ValueError: more than one parameter group, or ``lr`` < 0.
        RuntimeError: an unknown ``line_search_fn``.
    Differs from torch: ``step`` is not traceable (reads values), as torch's is not capturable.
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if isinstance(lr, tracegrad.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size,
                        line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # ---- the parameters as one flat vector ------------------------------------------------------
    # A complex parameter counts as two reals in the flat vectors (as torch: view_as_real), so
    # the dot products and comparisons of the search stay real.
    def _flat_grad(self):
        parts = []
        for p in self._params:
            g = p.new_zeros(p.shape) if p.grad is None else p.grad
            if g.is_sparse:   # torch densifies a sparse gradient here
                g = g.to_dense()
            parts.append(_real(g).reshape(-1))
        return tracegrad.cat(parts, 0)

    def _move(self, t, d):
        """params += t * d (d flat, split in parameter order)."""
        offset = 0
        for p in self._params:
            p = _real(p)
            n = p.numel()
            p.add_(d[offset:offset + n].view_as(p) * t)
            offset += n

    def _evaluate_at(self, closure, x, t, d):
        """Loss and flat gradient at ``x + t d``; the parameters are restored to ``x`` after."""
        self._move(t, d)
        loss = float(closure())
        g = self._flat_grad()
        for p, v in zip(self._params, x):
            p.copy_(v)
        return loss, g

    @tracegrad.no_grad()
    def step(self, closure):
        """Up to ``max_iter`` L-BFGS iterations; ``closure()`` re-evaluates the loss (with grad
        enabled). Returns the loss of the first evaluation."""
        if closure is None:
            raise RuntimeError("LBFGS.step requires a closure that reevaluates the model and returns the loss")
        if tracegrad.compiler._tracing():
            # it would break at its first float(loss) anyway; say why, and what compiles
            raise tracegrad.compiler.GraphBreak(
                "LBFGS.step decides its iterations and line search from loss and gradient values in "
                "Python; compile the closure (forward and backward) instead and call LBFGS.step "
                "outside the compiled function")
        closure = tracegrad.enable_grad()(closure)
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        line_search, history = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max() <= tol_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro, H_diag = [], [], [], 1
            else:
                d, H_diag = self._direction(state, flat_grad, prev_flat_grad, d, t, old_dirs, old_stps, ro,
                                            H_diag, history)
            prev_flat_grad = flat_grad.clone() if prev_flat_grad is None else prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            if state["n_iter"] == 1:
                inv = 1.0 / flat_grad.abs().sum()
                t = (inv if inv < 1.0 else 1.0) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tol_change:
                break   # not a descent direction

            ls_evals = 0
            if line_search is not None:
                if line_search != "strong_wolfe":   # checked where torch's loop first uses it
                    raise RuntimeError(f"only 'strong_wolfe' is supported (LBFGS got line_search_fn={line_search!r})")
                x0 = [p.clone() for p in self._params]
                # the search may spend only what is left of ``max_eval`` (torch 2.13 caps it so)
                loss, flat_grad, t, ls_evals = _strong_wolfe(lambda s: self._evaluate_at(closure, x0, s, d),
                                                             t, d, loss, flat_grad, gtd, max_ls=max_eval - evals)
                self._move(t, d)
                converged = flat_grad.abs().max() <= tol_grad
            else:
                self._move(t, d)
                converged = False
                if n_iter != max_iter:
                    # re-evaluate for the next direction (skipped on the last iteration)
                    loss = float(closure())
                    flat_grad = self._flat_grad()
                    converged = flat_grad.abs().max() <= tol_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals

            if (n_iter == max_iter or evals >= max_eval or converged
                    or (d * t).abs().max() <= tol_change or abs(loss - prev_loss) < tol_change):
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    @staticmethod
    def _direction(state, flat_grad, prev_flat_grad, d, t, old_dirs, old_stps, ro, H_diag, history):
        """Update the curvature memory with the last step, then the two-loop recursion:
        returns (new direction, new H_diag)."""
        y = flat_grad - prev_flat_grad
        s = d * t
        ys = y.dot(s)
        if ys > 1e-10:   # keep only pairs with positive curvature
            if len(old_dirs) == history:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            H_diag = ys / y.dot(y)
        if "al" not in state:
            state["al"] = [None] * history
        al = state["al"]
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.sub_(old_dirs[i] * al[i])
        r = q * H_diag
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i] * (al[i] - be_i))
        return r, H_diag


def _real(t):
    return tracegrad.view_as_real(t) if t.is_complex() else t
