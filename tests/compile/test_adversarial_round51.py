"""Round 51: layers whose forward has side effects or special paths, and inputs whose shapes
vary, inside compiled training steps (forward, backward, ``optimizer.step``).

``Embedding(max_norm=...)`` renormalising its weight in place (tied to an output layer, frozen
``from_pretrained`` sharing the caller's tensor, under ``no_grad`` in eval, the weight saved
for backward before the lookup), ``padding_idx`` with ``scale_grad_by_freq``; BatchNorm with
``momentum=None`` and ``num_batches_tracked`` reset, ``track_running_stats`` turned off,
``eval()`` between calls, a batch of one, an empty batch; InstanceNorm with running statistics;
spectral_norm (both APIs: power iteration in training, none in eval), the old weight_norm hook,
orthogonal (three maps); RReLU, AlphaDropout, FeatureAlphaDropout, Dropout1d/2d, LSTM dropout
between layers and SDPA ``dropout_p`` from the seeded global generator; LSTM/GRU (bidirectional,
two layers, ``proj_size``, packed sequences with lengths that change per call, ``enforce_sorted``
both ways, an initial state in the caller's order), LSTMCell over
a time dimension that changes; MultiheadAttention (``need_weights``, ``average_attn_weights``,
bool/float masks, a key padding mask per call, mismatched masks' warning), TransformerEncoderLayer
(activation as a string, a function, a module, a lambda; ``norm_first``; ``src_mask`` with
``is_causal``; train and eval), the eval/no_grad encoder with a padding mask,
``scaled_dot_product_attention`` (``is_causal``, ``scale``); a DataLoader's short last batch over
epochs, ``dynamic=True``, ``mark_dynamic``, a sequence length that changes every call, empty
batches, a buffer rebound in ``forward`` and a cache grown by it.

Each program runs eagerly, through ``tracegrad.compile`` and with torch (where no random numbers
are drawn) from identical state, comparing the results, parameters, buffers, gradients and
optimizer state after every call (``_harness.run_three_ways``); the number of programs and the
graph-break reasons are asserted.

Fixes:
- ``_lowering/carry.py`` NOTE [a place holding what a result detaches], ``region.py``: a step
  returning ``m.weight.detach()`` with the old weight_norm / spectral_norm hook (which binds a
  weight needing grad to ``module.weight`` each forward), or returning ``w.detach()`` of a leaf
  needing grad it bound to a dict, was a graph break ("binds ... a tensor sharing a result's
  storage"): every call ran eagerly. Now one program; the place gets a new alias of the result
  that needs grad (with a graph backward cannot go through when the step's own backward
  consumed it; a graph still live after the call stays a graph break)
  (test_weight_norm_hook_with_adam_returning_the_weight,
  test_result_detached_from_a_tensor_bound_to_a_place_is_one_program).
- ``_lowering/region.py`` (``trace_region``, ``Region._carry_into``/``_link``, NOTE [kept
  graphs] with NOTE [carried state]): a state tensor the function rebinds with its graph
  (``holder["w"] = (holder["w"] * 0.5 + x).requires_grad_()``) crashed the traced call with
  AttributeError when nothing else held the tensor it replaced, and every later call linked its
  graph to the traced call's tensor instead of the one the place held: backward after the calls
  skipped all but one of them (a silently wrong gradient); a tensor the caller bound there
  between calls got no gradient
  (test_state_rebound_to_a_new_tensor_with_its_graph_on_the_traced_call).
- ``_api/nn_functions.py`` ``verify_batch_size``: a training BatchNorm over one value per channel
  said "got input size [1, 3]" where torch says "torch.Size([1, 3])"
  (test_batchnorm_batch_of_one_raises_value_error_naming_the_size).

Not bugs (equal to eager, documented by the asserted counts and reasons): lengths given to
``pack_padded_sequence`` as a tensor are read with ``tolist()`` (a graph break: the step runs
eagerly); lengths as a Python list are constants of their program; a cache a forward grows by
setting an int attribute is a Python side effect (a graph break; the same break for a second
shape makes the function run eagerly); every new shape is its own program (NOTE [dynamic sizes]
in compiler.py), counted toward ``cache_size_limit`` unless the sizes were marked dynamic; a wide
or tall ``orthogonal`` weight is completed from random numbers at registration (so compared on
square weights).
"""
import warnings

import pytest

import tracegrad

from . import _harness as _h
from ._harness import data as _data, labels as _labels, np_init as _init, snapshot as _snap, traces as _traces

_three = _h.run_three_ways


def _train(model, opt, loss_of, also=None):
    """A training step: ``opt.zero_grad()``, ``loss_of(*args)``, backward, ``opt.step()``; with
    ``also``, returns ``(loss, also())``, ``also`` called after the step."""
    def step(*args):
        opt.zero_grad()
        loss = loss_of(*args)
        loss.backward()
        opt.step()
        return loss if also is None else (loss, also())
    return step


def _loop(f, batches, *observed, before=None):
    """Call ``f(*batches[i])`` for each batch; snapshot the result and ``observed`` after each.
    ``before(i)`` runs ahead of call ``i`` (the caller changing modes between calls)."""
    out = []
    for i, b in enumerate(batches):
        if before is not None:
            before(i)
        out.append([_snap(f(*b)), [_snap(o) for o in observed]])
    return out


def _reasons(f):
    return [r for r, _ in f.stats["graph_breaks"]]


# ---- Embedding: max_norm renormalises the weight in place in forward

def test_embedding_max_norm_renormalises_rows_every_call():
    """``forward`` renormalises the looked-up rows of ``weight`` in place (no_grad) before the
    lookup: each call's rows differ, so the program must carry the write, not a constant."""
    def run(mod, wrap):
        m = _init(mod.nn.Embedding(10, 4, max_norm=1.0), mod, scale=1.0)
        opt = mod.optim.SGD(m.parameters(), lr=0.5)
        f = wrap(_train(m, opt, lambda i: (m(i) ** 2).sum()))
        return _loop(f, [(mod.tensor([[1, 2, 2], [3, k, 1]]),) for k in (4, 5, 2, 9)], m, opt)
    made = _three(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_embedding_max_norm_weight_tied_to_the_output_layer():
    """The output layer reads ``emb.weight`` after the lookup renormalised it: the logits use
    the renormalised rows and the gradient of both uses accumulates into one ``.grad``."""
    def run(mod, wrap):
        m = _init(mod.nn.Embedding(10, 4, max_norm=1.0), mod, scale=1.0)
        opt = mod.optim.SGD(m.parameters(), lr=0.5, momentum=0.9)
        F = mod.nn.functional
        f = wrap(_train(m, opt, lambda i, y: F.cross_entropy(F.linear(m(i), m.weight), y)))
        return _loop(f, [(mod.tensor([1, 2, k]), mod.tensor([0, k, 5])) for k in range(4)], m, opt)
    _three(run)


def test_embedding_max_norm_in_eval_under_no_grad_still_writes_the_weight():
    """Neither ``eval()`` nor ``no_grad`` stop the renormalisation (norm_type=1 here): a
    forward-only compiled function writes the weight on every call."""
    def run(mod, wrap):
        m = _init(mod.nn.Embedding(10, 4, max_norm=1.0, norm_type=1.0), mod, scale=1.0).eval()

        def fwd(i):
            with mod.no_grad():
                return m(i).sum()
        return _loop(wrap(fwd), [(mod.tensor([k, k + 1]),) for k in range(4)], m)
    made = _three(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_embedding_max_norm_after_its_weight_was_saved_raises_the_version_error():
    """``(emb.weight ** 2).sum()`` saves the weight, then the lookup renormalises it in place:
    backward raises torch's version-counter RuntimeError on every call, compiled too, and the
    renormalised weight stays written (the forward ran)."""
    def run(mod, wrap):
        m = _init(mod.nn.Embedding(10, 4, max_norm=1.0), mod, scale=1.0)
        opt = mod.optim.SGD(m.parameters(), lr=0.5)
        f = wrap(_train(m, opt, lambda i: (m(i) ** 2).sum() + (m.weight ** 2).sum()))
        # the lookup after the read: torch's documented pitfall
        g = wrap(_train(m, opt, lambda i: (m.weight ** 2).sum() + (m(i) ** 2).sum()))
        out = [_snap(f(mod.tensor([1, 2])))]
        for k in range(3):
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                g(mod.tensor([k + 3, 1]))
            out.append(_snap(m))
        return out
    _three(run)


def test_frozen_pretrained_embedding_max_norm_writes_the_callers_tensor():
    """``from_pretrained(W, freeze=True, max_norm=1)`` shares ``W``'s storage: the in-place
    renormalisation of a parameter that needs no grad shows in ``W`` after every call."""
    def run(mod, wrap):
        W = _data(mod, 0, 10, 4) * 2
        e = mod.nn.Embedding.from_pretrained(W, freeze=True, max_norm=1.0)
        lin = _init(mod.nn.Linear(4, 2), mod)
        opt = mod.optim.SGD(lin.parameters(), lr=0.1)
        f = wrap(_train(lin, opt, lambda i: lin(e(i)).pow(2).sum()))
        return _loop(f, [(mod.tensor([k, k + 2]),) for k in range(4)], e, W, lin)
    made = _three(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_embedding_padding_idx_and_scale_grad_by_freq_with_momentum():
    """The padding row gets no gradient (and no momentum); repeated indices scale their row's
    gradient down by their count in the batch, which changes per call."""
    def run(mod, wrap):
        m = _init(mod.nn.Embedding(10, 4, padding_idx=0, scale_grad_by_freq=True), mod, scale=1.0)
        opt = mod.optim.SGD(m.parameters(), lr=0.5, momentum=0.9)
        f = wrap(_train(m, opt, lambda i: (m(i) ** 2).sum()))
        return _loop(f, [(mod.tensor([[0, 2, 2], [3, k, 0]]),) for k in (2, 5, 0, 3)], m, opt)
    made = _three(run)
    assert _traces(made[0]) == 1, made[0].stats


# ---- BatchNorm and InstanceNorm statistics

def test_batchnorm_cumulative_average_with_num_batches_tracked_reset_eval_and_untracked():
    """``momentum=None`` averages with ``1 / num_batches_tracked``; the caller zeroes the counter
    after call 1, switches to eval after call 2 and turns ``track_running_stats`` off after 3
    (batch statistics, no update); the step returns the counter's value read with ``item()``."""
    def run(mod, wrap):
        m = _init(mod.nn.BatchNorm1d(3, momentum=None), mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        f = wrap(_train(m, opt, lambda x: m(x).pow(2).sum(), also=lambda: m.num_batches_tracked.item()))

        def before(i):
            if i == 2:
                m.num_batches_tracked.zero_()
            if i == 3:
                m.eval()
            if i == 4:
                m.train()
                m.track_running_stats = False
        return _loop(f, [(_data(mod, i, 4, 3),) for i in range(6)], m, opt, before=before)
    _three(run)


def test_batchnorm_eval_between_calls_one_program_per_mode():
    """``train()``/``eval()`` flipped between calls: running statistics move only in training,
    eval normalises with them; each mode's program is reused when the mode comes back."""
    def run(mod, wrap):
        nn = mod.nn
        m = _init(nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)), mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        f = wrap(_train(m, opt, lambda x: m(x).pow(2).mean()))
        return _loop(f, [(_data(mod, i, 5, 4),) for i in range(6)], m, opt,
                     before=lambda i: m.train(i % 2 == 0))
    made = _three(run)
    # call 0 runs eagerly (train); call 1 traces eval, call 2 train; the rest reuse them
    assert _traces(made[0]) == 2, made[0].stats


def test_batchnorm_batch_of_one_raises_value_error_naming_the_size():
    """A training batch of one value per channel (a short last batch of one) raises torch's
    ValueError, with the size printed as torch prints it, compiled or not."""
    torch = pytest.importorskip("torch")
    msgs = []
    for mod, wrap in ((torch, lambda f: f), (tracegrad, lambda f: f), (tracegrad, tracegrad.compile)):
        m = _init(mod.nn.Sequential(mod.nn.Linear(4, 3), mod.nn.BatchNorm1d(3)), mod)
        f = wrap(lambda x: m(x).pow(2).sum())
        for n in (3, 3):
            f(_data(mod, n, n, 4))
        with pytest.raises(ValueError) as e:
            f(_data(mod, 1, 1, 4))
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0] == msgs[2], msgs
    assert "torch.Size([1, 3])" in msgs[0]


def test_batchnorm_empty_batch_in_training():
    """An empty batch passes BatchNorm in training (no ValueError, as torch); its NaN batch
    statistics go into the running averages, and the next batches train on."""
    def run(mod, wrap):
        m = _init(mod.nn.BatchNorm1d(3), mod)
        f = wrap(lambda x: m(x).sum())
        return _loop(f, [(_data(mod, n, n, 3),) for n in (3, 3, 0, 3)], m)
    _three(run)


def test_instance_norm_running_stats_cumulative_train_and_eval():
    """InstanceNorm1d with ``track_running_stats=True, momentum=None``: per-instance statistics in
    training (running ones averaged over the batch), the running ones in eval."""
    def run(mod, wrap):
        nn = mod.nn
        m = _init(nn.Sequential(nn.Conv1d(2, 3, 3), nn.InstanceNorm1d(3, track_running_stats=True,
                                                                     momentum=None)), mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        f = wrap(_train(m, opt, lambda x: m(x).pow(2).mean()))
        return _loop(f, [(_data(mod, i, 2, 2, 6),) for i in range(6)], m, opt,
                     before=lambda i: m.train(i not in (2, 4)))
    _three(run)


# ---- parametrizations with buffers

def _fixed_uv(mod, u, v):
    with mod.no_grad():
        u.copy_(mod.tensor([0.6, 0.8, 0.0]))
        v.copy_(mod.tensor([0.5, 0.5, 0.5, 0.5]))


def test_spectral_norm_parametrization_iterates_in_training_not_in_eval():
    """``parametrizations.spectral_norm``: each training forward updates ``_u``/``_v`` by power
    iteration, eval forwards do not; eval is set for calls 2 and 3 only."""
    def run(mod, wrap):
        m = mod.nn.utils.parametrizations.spectral_norm(_init(mod.nn.Linear(4, 3), mod))
        pm = m.parametrizations.weight[0]
        _fixed_uv(mod, pm._u, pm._v)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        f = wrap(_train(m, opt, lambda x: m(x).pow(2).mean()))
        return _loop(f, [(_data(mod, i, 5, 4),) for i in range(6)], m, opt,
                     before=lambda i: m.train(i not in (2, 3)))
    made = _three(run)
    assert _traces(made[0]) == 2, made[0].stats


def test_old_spectral_norm_two_power_iterations_eval_between():
    """``nn.utils.spectral_norm(n_power_iterations=2)`` (forward pre-hook): two iterations per
    training call, none in eval, ``weight`` recomputed from ``weight_orig`` each call."""
    def run(mod, wrap):
        m = mod.nn.utils.spectral_norm(_init(mod.nn.Linear(4, 3), mod), n_power_iterations=2)
        _fixed_uv(mod, m.weight_u, m.weight_v)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        f = wrap(_train(m, opt, lambda x: m(x).pow(2).mean()))
        return _loop(f, [(_data(mod, i, 5, 4),) for i in range(6)], m, opt,
                     before=lambda i: m.train(i not in (2, 3)))
    _three(run)


def test_weight_norm_hook_with_adam_returning_the_weight():
    """The old weight_norm hook (``weight_g``/``weight_v``, ``dim=None``), the step returning
    ``m.weight.detach()``: ``module.weight`` holds a tensor needing grad that the result is a
    detached alias of (each call ran eagerly before: NOTE [a place holding what a result
    detaches] in carry.py)."""
    def run(mod, wrap):
        m = _init(mod.nn.Linear(4, 3), mod)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)      # the hook API is deprecated
            mod.nn.utils.weight_norm(m, dim=None)
        opt = mod.optim.Adam(m.parameters(), lr=0.1)
        f = wrap(_train(m, opt, lambda x: m(x).pow(3).mean(), also=lambda: m.weight.detach()))
        return _loop(f, [(_data(mod, i, 5, 4),) for i in range(4)], m, opt)
    made = _three(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_orthogonal_cayley_householder_and_matrix_exp_without_trivialization():
    """Three orthogonal maps trained together. Square weights: a wide or tall one is completed
    to a square basis from random numbers at registration (torch's too), whose sign shows in
    the gradient of ``original``."""
    def run(mod, wrap):
        P = mod.nn.utils.parametrizations
        ls = _init(mod.nn.ModuleList([mod.nn.Linear(4, 4), mod.nn.Linear(4, 4), mod.nn.Linear(4, 4)]), mod)
        P.orthogonal(ls[0], orthogonal_map="cayley")
        P.orthogonal(ls[1], orthogonal_map="householder")
        P.orthogonal(ls[2], orthogonal_map="matrix_exp", use_trivialization=False)
        opt = mod.optim.SGD(ls.parameters(), lr=0.1)
        f = wrap(_train(ls, opt, lambda x: ls[2](ls[1](ls[0](x))).pow(3).mean()))
        return _loop(f, [(_data(mod, i, 5, 4),) for i in range(4)], ls, opt)
    _three(run)


# ---- random layers: compiled draws equal eager's from the same seed

def _seeded(run):
    def seeded(mod, wrap):
        mod.manual_seed(3)
        return run(mod, wrap)
    return seeded


def test_rrelu_and_alpha_dropout_draw_as_eager_in_training_and_match_torch_in_eval():
    """RReLU's slopes and AlphaDropout's mask are drawn on every training call (as eager from
    the same seed); in eval both are deterministic (RReLU's mean slope), as torch."""
    def make(train):
        def run(mod, wrap):
            nn = mod.nn
            m = _init(nn.Sequential(nn.Linear(4, 6), nn.AlphaDropout(0.3), nn.Linear(6, 6), nn.RReLU(),
                                    nn.Linear(6, 4)), mod).train(train)
            opt = mod.optim.SGD(m.parameters(), lr=0.1)
            f = wrap(_train(m, opt, lambda x: m(x).pow(2).mean()))
            return _loop(f, [(_data(mod, i, 3, 4),) for i in range(4)], m, opt)
        return _seeded(run)
    made = _three(make(True), torch_too=False)
    assert _traces(made[0]) == 1, made[0].stats
    _three(make(False))


def test_dropout1d_dropout2d_and_feature_alpha_dropout_channel_masks():
    """Channel-wise masks from the seeded global generator, drawn anew per call."""
    def run(mod, wrap):
        nn = mod.nn
        c, c2 = _init(nn.Conv1d(2, 4, 3), mod), _init(nn.Conv2d(4, 4, 1), mod, seed=1)
        d1, d2, fa = nn.Dropout1d(0.4), nn.Dropout2d(0.5), nn.FeatureAlphaDropout(0.3)
        opt = mod.optim.SGD([*c.parameters(), *c2.parameters()], lr=0.1)
        f = wrap(_train(c, opt, lambda x: c2(d2(fa(d1(c(x)).unsqueeze(-1)))).pow(2).mean()))
        return _loop(f, [(_data(mod, i, 3, 2, 6),) for i in range(4)], c, c2, opt)
    made = _three(_seeded(run), torch_too=False)
    assert _traces(made[0]) == 1, made[0].stats


def test_sdpa_dropout_and_lstm_dropout_between_layers_then_eval():
    """``scaled_dot_product_attention(dropout_p=0.5, is_causal=True)`` and a two-layer LSTM's
    dropout between layers draw as eager does; after ``eval()`` the LSTM drops nothing."""
    def run(mod, wrap):
        lin = _init(mod.nn.Linear(4, 12), mod)
        lstm = _init(mod.nn.LSTM(4, 4, num_layers=2, dropout=0.5, batch_first=True), mod, seed=1)
        opt = mod.optim.SGD([*lin.parameters(), *lstm.parameters()], lr=0.1)

        def loss_of(x):
            q, k, v = lin(x).chunk(3, -1)
            a = mod.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.5)
            return lstm(a)[0].pow(2).sum()
        f = wrap(_train(lin, opt, loss_of))
        return _loop(f, [(_data(mod, i, 2, 3, 4),) for i in range(5)], lin, lstm, opt,
                     before=lambda i: lstm.train(i < 3))
    made = _three(_seeded(run), torch_too=False)
    assert _traces(made[0]) == 2, made[0].stats


# ---- recurrent layers and packed sequences

def _packed_loss(mod, m, out, h):
    """Position-weighted sums, so that a sequence or state put back in the wrong order shows."""
    o, lens = mod.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, padding_value=-1.0)
    pos = mod.arange(o.shape[1]).float().view(1, -1, 1)
    return (o * pos).sum() + (h * mod.arange(1, h.shape[1] + 1).float().view(1, -1, 1)).sum(), lens


def test_lstm_packed_lengths_list_changing_per_call_enforce_sorted_both_ways():
    """Lengths as a Python list, changing per call, ``enforce_sorted`` True and False: each
    (lengths, flag) is a constant of its program, reused when it comes back."""
    def run(mod, wrap):
        m = _init(mod.nn.LSTM(3, 4, batch_first=True), mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def step(x, lens, srt):
            opt.zero_grad()
            p = mod.nn.utils.rnn.pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=srt)
            out, (h, c) = m(p)
            o, got = mod.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=5)
            loss = o.pow(2).sum() + h.sum()
            loss.backward()
            opt.step()
            return loss, got
        L = [([5, 3, 2], True), ([2, 5, 4], False), ([5, 3, 2], True), ([4, 4, 1], True), ([2, 5, 4], False)]
        return _loop(wrap(step), [(_data(mod, i, 3, 5, 3), *L[i]) for i in range(5)], m, opt)
    made = _three(run)
    assert _traces(made[0]) == 3, made[0].stats


def test_lstm_packed_with_lengths_tensor_runs_eagerly_with_the_tolist_reason():
    """Lengths as a tensor are read with ``tolist()``: a graph break, the step runs eagerly on
    every call with the reason in ``stats``, equal to eager and torch."""
    def run(mod, wrap):
        m = _init(mod.nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True), mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def loss_of(x, lens):
            p = mod.nn.utils.rnn.pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=False)
            out, (h, c) = m(p)
            return _packed_loss(mod, m, out, h)[0] + c.mean()
        f = wrap(_train(m, opt, loss_of))
        L = [[3, 5, 2], [4, 1, 4], [2, 2, 5]]
        return _loop(f, [(_data(mod, i, 3, 5, 3), mod.tensor(L[i])) for i in range(3)], m, opt)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "tracegrad.compile: running")
        made = _three(run)
    assert _traces(made[0]) == 0 and made[0].stats["eager_calls"] == 3, made[0].stats
    assert _reasons(made[0])[0].startswith("tolist() reads a tensor's value"), made[0].stats


def test_gru_packed_unsorted_with_initial_state_bidirectional_two_layers():
    """``enforce_sorted=False`` with a given ``h0``: the state is taken in the caller's order
    and ``h_n`` comes back in it; lengths change per call."""
    def run(mod, wrap):
        m = _init(mod.nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True), mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def step(x, lens, h0):
            opt.zero_grad()
            out, h = m(mod.nn.utils.rnn.pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=False), h0)
            loss, _ = _packed_loss(mod, m, out, h)
            loss.backward()
            opt.step()
            return loss, h
        L = [[2, 5, 4], [5, 2, 4], [2, 5, 4], [3, 1, 2]]
        return _loop(wrap(step), [(_data(mod, i, 3, 5, 3), L[i], _data(mod, i + 9, 4, 3, 4)) for i in range(4)],
                     m, opt)
    made = _three(run)
    assert _traces(made[0]) == 3, made[0].stats     # call 0 ran eagerly: its lengths trace at call 2


def test_lstm_proj_size_bidirectional_from_pack_sequence():
    """``proj_size=2`` (h of size 2, c of size 4), two layers, bidirectional, fed by
    ``pack_sequence`` of sequences whose lengths change per call."""
    def run(mod, wrap):
        m = _init(mod.nn.LSTM(3, 4, num_layers=2, proj_size=2, bidirectional=True, batch_first=True), mod)
        opt = mod.optim.Adam(m.parameters(), lr=0.1)

        def step(seqs):
            opt.zero_grad()
            out, (h, c) = m(mod.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False))
            loss, lens = _packed_loss(mod, m, out, h)
            loss = loss + c.pow(2).sum()
            loss.backward()
            opt.step()
            return loss, lens
        L = [[2, 5, 4], [5, 2, 4], [3, 1, 2]]
        return _loop(wrap(step), [([_data(mod, i * 3 + j, n, 3) for j, n in enumerate(L[i])],) for i in range(3)],
                     m, opt)
    _three(run)


def test_lstmcell_loop_over_a_time_dimension_that_changes():
    """A Python loop over ``x.shape[0]`` steps of an LSTMCell: one program per length, reused
    when a length comes back."""
    def run(mod, wrap):
        m = _init(mod.nn.LSTMCell(3, 4), mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def loss_of(x):
            h = c = mod.zeros(2, 4)
            for t in range(x.shape[0]):
                h, c = m(x[t], (h, c))
            return h.pow(2).sum() + c.sum()
        f = wrap(_train(m, opt, loss_of))
        return _loop(f, [(_data(mod, i, n, 2, 3),) for i, n in enumerate([2, 3, 2, 4, 3, 1])], m, opt)
    made = _three(run)
    assert _traces(made[0]) == 4, made[0].stats     # 3, 2 (call 2), 4, 1; call 0 ran eagerly


# ---- attention

def test_multihead_attention_weight_flags_and_masks_as_arguments():
    """``need_weights``, ``average_attn_weights`` and bool / float / no ``attn_mask`` change per
    call: each combination is a program of its own, reused when it comes back."""
    def run(mod, wrap):
        m = _init(mod.nn.MultiheadAttention(4, 2, batch_first=True), mod, scale=0.2)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def step(x, nw, avg, mask):
            opt.zero_grad()
            o, w = m(x, x, x, need_weights=nw, average_attn_weights=avg, attn_mask=mask)
            loss = o.pow(2).sum() + (0 if w is None else w.pow(2).sum())
            loss.backward()
            opt.step()
            return loss, w
        bm = mod.tensor([[False, True, True], [False, False, True], [False, False, False]])
        fm = mod.zeros(3, 3).masked_fill(bm, float("-inf"))
        cfg = [(True, True, bm), (False, True, bm), (True, False, fm), (True, True, bm), (True, False, None),
               (False, False, fm)]
        return _loop(wrap(step), [(_data(mod, i, 2, 3, 4), *c) for i, c in enumerate(cfg)], m, opt)
    made = _three(run)
    assert _traces(made[0]) == 5, made[0].stats     # call 0 ran eagerly: call 3 traces its flags


def test_multihead_attention_key_padding_mask_changes_per_call():
    """A bool key padding mask whose values change per call is an input, not a constant."""
    def run(mod, wrap):
        m = _init(mod.nn.MultiheadAttention(4, 2, batch_first=True), mod, scale=0.2)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def loss_of(x, kpm):
            o, w = m(x, x, x, key_padding_mask=kpm, average_attn_weights=False)
            return o.pow(2).sum() + w.pow(2).sum()
        f = wrap(_train(m, opt, loss_of))
        return _loop(f, [(_data(mod, i, 2, 3, 4), mod.tensor([[False, False, i % 2 == 1], [False, i == 2, False]]))
                         for i in range(4)], m, opt)
    made = _three(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_multihead_attention_mismatched_masks_warn_on_every_call():
    """A bool key padding mask with a float attention mask: torch's deprecation UserWarning on
    every call, from the compiled calls too."""
    def warned(mod, wrap):
        m = _init(mod.nn.MultiheadAttention(4, 2, batch_first=True), mod, scale=0.2)
        f = wrap(lambda x, kpm, am: m(x, x, x, key_padding_mask=kpm, attn_mask=am)[0].sum())
        kpm, am = mod.tensor([[False, False, True], [False, True, False]]), mod.zeros(3, 3)
        out = []
        for i in range(3):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                out.append(_snap(f(_data(mod, i, 2, 3, 4), kpm, am)))
            out.append([(str(x.message).split(".")[0], x.category.__name__) for x in w
                        if not str(x.message).startswith("tracegrad.compile")])
        return out
    _three(warned)


def test_transformer_encoder_layer_activations_norm_first_causal_mask_train_and_eval():
    """Four layers with activation ``"gelu"``, ``F.gelu``, ``nn.GELU()`` and a lambda, post- and
    pre-norm, ``src_mask`` with ``is_causal=True`` on odd calls, eval on call 2."""
    def run(mod, wrap):
        nn, F = mod.nn, mod.nn.functional
        acts = [("gelu", False), (F.gelu, True), (nn.GELU(), False), (lambda t: F.silu(t), True)]
        m = _init(nn.ModuleList([nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, activation=a, batch_first=True,
                                                             norm_first=nf) for a, nf in acts]), mod, scale=0.3)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        cm = nn.Transformer.generate_square_subsequent_mask(3)

        def loss_of(x, mask):
            for layer in m:
                x = layer(x, src_mask=mask, is_causal=mask is not None)
            return x.pow(2).mean()
        f = wrap(_train(m, opt, loss_of))
        return _loop(f, [(_data(mod, i, 2, 3, 4), cm if i % 2 else None) for i in range(5)], m, opt,
                     before=lambda i: m.train(i != 2))
    made = _three(run)
    assert _traces(made[0]) == 3, made[0].stats


def test_transformer_encoder_eval_no_grad_with_padding_mask():
    """The eval / no_grad encoder (torch's fast path, nested tensors) with a padding mask: the
    same values as the regular path, padded positions included."""
    def run(mod, wrap):
        nn = mod.nn
        layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, batch_first=True)
        m = _init(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), mod).eval()

        def fwd(x, kpm):
            with mod.no_grad():
                return m(x, src_key_padding_mask=kpm)
        kpm = mod.tensor([[False, False, True], [False, True, False]])
        return _loop(wrap(fwd), [(_data(mod, i, 2, 3, 4), kpm) for i in range(3)])
    _three(run)


def test_sdpa_causal_with_a_sequence_length_that_changes_every_call_dynamic():
    """``is_causal=True`` with the length changing every call under ``dynamic=True``: one
    program per length, none refused by ``cache_size_limit``, no warning."""
    def run(mod, wrap):
        m = _init(mod.nn.Linear(4, 12), mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def loss_of(x):
            q, k, v = m(x).chunk(3, -1)
            return mod.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3).pow(2).mean()
        f = wrap(_train(m, opt, loss_of))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return _loop(f, [(_data(mod, i, 2, 1 + i, 4),) for i in range(6)], m, opt)
    made = _three(run, dynamic=True)
    assert _traces(made[0]) == 5 and made[0].stats["eager_calls"] == 1, made[0].stats


# ---- shapes that vary

def test_dataloader_short_last_batch_retraces_once_over_three_epochs():
    """11 samples in batches of 4: the short batch of 3 costs one more program, no more."""
    def run(mod, wrap):
        m = _h.small_mlp(mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        dl = mod.utils.data.DataLoader(mod.utils.data.TensorDataset(_data(mod, 0, 11, 4), _labels(mod, 0, 11, 3)),
                                       batch_size=4)
        f = wrap(_train(m, opt, lambda x, y: mod.nn.functional.cross_entropy(m(x), y)))
        return _loop(f, [b for _ in range(3) for b in dl], m, opt)
    made = _three(run)
    assert _traces(made[0]) == 2 and made[0].stats["eager_calls"] == 1, made[0].stats


def test_mark_dynamic_batch_dim_sizes_do_not_count_toward_the_limit():
    """``mark_dynamic(x, 0)`` on each batch: five batch sizes, every one traced once, none
    refused (the limit lowered to 2 to show it)."""
    def run(mod, wrap):
        m = _h.small_mlp(mod)
        opt = mod.optim.Adam(m.parameters(), lr=0.1)
        f = wrap(_train(m, opt, lambda x, y: mod.nn.functional.cross_entropy(m(x), y)))
        out = []
        for n in (5, 5, 3, 7, 2, 6):
            x, y = _data(mod, n, n, 4), _labels(mod, n, n, 3)
            if mod is tracegrad:
                tracegrad._dynamo.mark_dynamic(x, 0)
                tracegrad._dynamo.mark_dynamic(y, 0)
            out.append(_snap(f(x, y)))
        return out + [_snap(m), _snap(opt)]
    old = tracegrad.compiler.cache_size_limit
    tracegrad.compiler.cache_size_limit = 2
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            made = _three(run)
    finally:
        tracegrad.compiler.cache_size_limit = old
    assert _traces(made[0]) == 5 and made[0].stats["eager_calls"] == 1, made[0].stats


def test_empty_batches_between_full_ones():
    """Empty batches: a sum loss of zero and zero gradients (momentum decays), an LSTM over no
    sequences; the next full batch trains on."""
    def run(mod, wrap):
        m = _h.small_mlp(mod)
        lstm = _init(mod.nn.LSTM(3, 4, batch_first=True), mod, seed=1)
        opt = mod.optim.SGD([*m.parameters(), *lstm.parameters()], lr=0.1, momentum=0.9)

        def loss_of(x, y, s):
            out, (h, c) = lstm(s)
            return mod.nn.functional.cross_entropy(m(x), y, reduction="sum") + out.sum() + h.sum()
        f = wrap(_train(m, opt, loss_of))
        return _loop(f, [(_data(mod, i, n, 4), _labels(mod, i, n, 3), _data(mod, i, n, 2, 3))
                         for i, n in enumerate([5, 5, 0, 0, 5])], m, lstm, opt)
    made = _three(run)
    assert _traces(made[0]) == 2, made[0].stats


def test_buffer_rebound_in_forward_not_in_place():
    """``self.mean = 0.9 * self.mean + 0.1 * x.mean(0)`` rebinds the buffer in training (a new
    tensor each call, not ``copy_``): the module holds the new one after every call."""
    def run(mod, wrap):
        nn = mod.nn

        class Centred(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("mean", mod.zeros(4))
                self.lin = nn.Linear(4, 3)

            def forward(self, x):
                if self.training:
                    self.mean = 0.9 * self.mean + 0.1 * x.mean(0).detach()
                return self.lin(x - self.mean)
        m = _init(Centred(), mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        f = wrap(_train(m, opt, lambda x: m(x).pow(2).mean()))
        return _loop(f, [(_data(mod, i, 5, 4),) for i in range(6)], m, opt, before=lambda i: m.train(i != 3))
    made = _three(run)
    assert _traces(made[0]) == 2, made[0].stats


def test_positional_cache_grown_by_forward_breaks_and_runs_eagerly():
    """A rotary-style cache a forward rebuilds when the sequence is longer than ``self.cached``
    (an int attribute it sets): a graph break at the set; values equal eager and torch."""
    def run(mod, wrap):
        nn = mod.nn

        class Rot(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin, self.cached = nn.Linear(4, 4), 0
                self.register_buffer("cos", mod.zeros(0, 4), persistent=False)

            def forward(self, x):
                T = x.shape[1]
                if T > self.cached:
                    self.cos = (mod.arange(T).float().unsqueeze(1) * mod.tensor([1.0, 0.5, 0.25, 0.125])).cos()
                    self.cached = T
                return self.lin(x) * self.cos[:T]
        m = _init(Rot(), mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        f = wrap(_train(m, opt, lambda x: m(x).pow(2).mean()))
        out = _loop(f, [(_data(mod, i, 2, T, 4),) for i, T in enumerate([3, 3, 5, 2, 5, 6, 3, 6])], m, opt)
        return out + [m.cached]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "tracegrad.compile: running")
        made = _three(run)
    assert _traces(made[0]) == 2, made[0].stats
    assert _reasons(made[0]) == ["setting attribute 'cached' of Rot is a Python side effect: the program "
                                 "would not repeat it on later calls"], made[0].stats


# ---- NOTE [a place holding what a result detaches] (tracegrad/_lowering/carry.py)

def _hooked_weight_program(kind):
    """The old spectral_norm hook binds ``module.weight`` (needing grad) on every forward; the
    function returns a detached alias of the tensor at a place. After each call: the place's
    tensor (value, requires_grad, is_leaf, grad_fn or not), an in-place add on the result that
    shows there (one storage and version counter), and backward through it (an error after a
    backward in the function consumed its graph, as eagerly)."""
    def run(mod, wrap):
        m = mod.nn.utils.spectral_norm(_init(mod.nn.Linear(4, 3), mod))
        _fixed_uv(mod, m.weight_u, m.weight_v)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        holder = {}

        def step(x):
            if kind == "leaf":      # a tensor needing grad, made and bound by the function
                holder["w"] = (x * 2).requires_grad_()
                return holder["w"].detach()
            opt.zero_grad()
            loss = m(x).pow(3).mean()
            loss.backward()
            opt.step()
            return loss, m.weight.detach()
        f = wrap(step)
        out = []
        for i in range(4):
            r = f(_data(mod, i, 5, 4))
            w = holder["w"] if kind == "leaf" else m.weight
            out.append([_snap(r), _snap(w), w.grad_fn is None, w.requires_grad, w.is_leaf])
            (r if kind == "leaf" else r[1]).add_(1.0)
            out.append([_snap(w), w._version])
            try:
                w.sum().backward()
                out.append(["backward ran", _snap(w)])
            except RuntimeError:
                out.append("RuntimeError")
        return out
    return run


@pytest.mark.parametrize("kind", ["kept", "leaf"])
def test_result_detached_from_a_tensor_bound_to_a_place_is_one_program(kind):
    """``return loss, m.weight.detach()`` with the old spectral_norm hook (``kept``: the weight's
    graph consumed by the step's backward), and a leaf needing grad bound to a dict (``leaf``):
    one program, and after every call the place holds what eager's holds. Before the fix each
    call ran eagerly ("binds ... a tensor sharing a result's storage")."""
    made = _three(_hooked_weight_program(kind))
    assert _traces(made[0]) == 1 and made[0].stats["graph_breaks"] == [], made[0].stats


def test_result_detached_from_a_kept_graph_no_backward_still_breaks():
    """Without a backward in the function the weight's graph is live after the call (eager can
    backward through ``m.weight`` later): still a graph break, equal to eager and torch."""
    def run(mod, wrap):
        m = mod.nn.utils.spectral_norm(_init(mod.nn.Linear(4, 3), mod))
        _fixed_uv(mod, m.weight_u, m.weight_v)
        f = wrap(lambda x: (m(x).sum().detach(), m.weight.detach()))
        out = []
        for i in range(3):
            out.append(_snap(f(_data(mod, i, 5, 4))))
            m.weight.pow(2).sum().backward()
            out.append(_snap(m))
        return out
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "tracegrad.compile: running")
        made = _three(run)
    assert _traces(made[0]) == 0, made[0].stats
    assert "a tensor sharing a result's storage" in _reasons(made[0])[0], made[0].stats


@pytest.mark.parametrize("keep_first", [True, False, "rebound"])
def test_state_rebound_to_a_new_tensor_with_its_graph_on_the_traced_call(keep_first):
    """``holder["w"] = (holder["w"] * 0.5 + x).requires_grad_()``: from call 1 on the place holds
    a tensor whose graph runs through every earlier call back to call 0's leaf. The trace's own
    run linked its graph to the tensor the place held before, which nothing else held any more:
    AttributeError ('NoneType' object has no attribute '_base') at the traced call (when the
    caller keeps no reference to it). Later calls linked their graph to the traced call's tensor,
    not to the one the place held: backward after the calls reached call 0's leaf through one
    call, not all of them (a silently wrong gradient). ``rebound``: the caller binds a fresh
    leaf there after call 2, and the graph of calls 3-4 reaches it."""
    def run(mod, wrap):
        holder = {"w": mod.zeros(4)}

        def step(x):
            holder["w"] = (holder["w"] * 0.5 + x).requires_grad_()
            return holder["w"].detach() * 1
        f = wrap(step)
        out = [_snap(f(_data(mod, 0, 4)))]
        first = [holder["w"]] if keep_first else []
        for i in range(1, 5):
            out.append([_snap(f(_data(mod, i, 4))), _snap(holder["w"]), holder["w"].is_leaf])
            if i == 2 and keep_first == "rebound":
                holder["w"] = mod.ones(4, requires_grad=True)
                first.append(holder["w"])
        (holder["w"] * mod.arange(4.0)).sum().backward()
        return out + [_snap(first)]
    made = _three(run)
    assert _traces(made[0]) == 1, made[0].stats
