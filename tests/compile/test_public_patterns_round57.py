"""Compile patterns of the fifty-seventh round of public programs
(tests/api/test_public_programs_round57.py; sources in tests/public_programs_round57_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` over
three calls on the same initial state:

- codertimo/BERT-pytorch (Apache-2.0): the trainer's batch (forward, the two ``NLLLoss(ignore_index=0)``
  terms, ``ScheduledOptim.zero_grad``/``step_and_update_lr``). ``step_and_update_lr`` writes
  ``param_group['lr']`` inside the step: a graph break (``optim/optimizer._note_write``), every
  call eager, equal to torch. With the schedule's ``_update_learning_rate()`` called before the
  compiled step (the NumPy float64 lr is lifted: a new lr alone reuses a program) each call
  still traces again: the guards cover every attribute that the methods of a reached object's
  class load, and ``ScheduledOptim.n_current_steps`` (loaded only by ``_update_learning_rate``,
  which the step never calls; it calls ``zero_grad``) changes between calls. Equal to eager and
  torch; the one-program expectation is a strict xfail.
- facebookresearch/DeepSDF (MIT): ``train_batch`` (``batch_loss += chunk_loss.item()`` between
  the sub-batches) is a graph break at ``item()``, every call eager. Its sub-batch body with the
  clip and the step (the ``Embedding(max_norm=1)`` lookup renormalising codes in place inside
  the program, the weight-normed or layer-normed decoder in ``DataParallel``, the two-group
  Adam) is one program, equal to eager and torch.
- kimhc6028/relational-networks (BSD-3-Clause): ``RN.train_``/``CNN_MLP.train_`` (the model's
  own Adam, ``correct * 100. / len(label)``) is one program each, equal to eager and torch within
  the float32 rounding of Adam steps over ~1e-9 gradients.
Graph breaks are asserted as found.
"""
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import compiled_parity, arrays as _arr, state as _state
from public_programs_round57_src import (bert_batches, bert_setup, deepsdf_setup, deepsdf_specs, relational_setup,
                                        sort_of_clevr)

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # weight_norm's deprecation and the graph breaks' warnings
        yield


def _check(runner, ref_tol=2e-5, comp_tol=1e-5):
    return compiled_parity(torch, tracegrad, runner, ref_tol, comp_tol)


def _bert_runs(T, compiled):
    # BERTTrainer.iteration's training batch without its logging (the ``.item()`` reads), the
    # ScheduledOptim's NumPy-float64 learning rate changing on every call
    P, trainer = bert_setup(T)

    def step(data):
        next_sent_output, mask_lm_output = trainer.model.forward(data["bert_input"], data["segment_label"])
        next_loss = trainer.criterion(next_sent_output, data["is_next"])
        mask_loss = trainer.criterion(mask_lm_output.transpose(1, 2), data["bert_label"])
        loss = next_loss + mask_loss
        trainer.optim_schedule.zero_grad()
        loss.backward()
        trainer.optim_schedule.step_and_update_lr()
        return loss, next_sent_output.argmax(dim=-1).eq(data["is_next"]).sum()

    if compiled:
        step = T.compile(step)
    out = []
    for data in bert_batches(T, np.random.RandomState(3), 3):
        data["is_next"][0] = 1      # not all ignored (a NaN loss): see the eager tests for that case
        out += _arr(*step(data)) + [np.array(trainer.optim.param_groups[0]["lr"])]
    return out + _state(trainer.model), step


def test_bert_step_setting_lr_breaks():
    # ``step_and_update_lr`` writes ``param_group['lr']`` inside the step: a graph break
    # (``optim/optimizer._note_write``: the program would not repeat the write), every call eager
    st = _check(_bert_runs)
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert [b[0].split(" is ")[0] for b in st["graph_breaks"]] == [
        "setting the optimizer's param_groups option 'lr'"], st


def _bert_outside_lr_runs(T, compiled):
    # the same batch with ScheduledOptim's ``_update_learning_rate()`` (the NumPy float64 learning
    # rates) called before the compiled step and ``optim.step()`` inside it
    P, trainer = bert_setup(T)

    def step(data):
        next_sent_output, mask_lm_output = trainer.model(data["bert_input"], data["segment_label"])
        loss = (trainer.criterion(next_sent_output, data["is_next"])
                + trainer.criterion(mask_lm_output.transpose(1, 2), data["bert_label"]))
        trainer.optim_schedule.zero_grad()
        loss.backward()
        trainer.optim.step()
        return loss

    if compiled:
        step = T.compile(step)
    out = []
    for data in bert_batches(T, np.random.RandomState(3), 3):
        data["is_next"][0] = 1
        trainer.optim_schedule._update_learning_rate()
        out += _arr(step(data))
    return out + _state(trainer.model), step


def test_bert_step_with_numpy_lr_set_outside_compiled():
    st = _check(_bert_outside_lr_runs)
    # the first call runs eagerly (Adam's lazy state); the NumPy float64 learning rates are lifted
    # (a changed lr alone reuses the program); ScheduledOptim.n_current_steps, loaded only by
    # _update_learning_rate (called outside; the step calls its zero_grad), moves between calls
    # unguarded: one trace
    assert st["traces"] == 1 and st["eager_calls"] == 1 and not st["graph_breaks"], st


def _deepsdf_runs(T, compiled, weight_norm=True):
    specs = deepsdf_specs(weight_norm)
    P, lr_schedules, decoder, lat_vecs, optimizer_all, loss_l1 = deepsdf_setup(T, specs)
    loss_log = []

    def step(sdf_data, indices, epoch):
        P.train_batch(sdf_data, indices, lat_vecs, decoder, optimizer_all, loss_l1, epoch, 1,
                      specs["SamplesPerScene"], -0.1, 0.1, True, True, specs["CodeRegularizationLambda"],
                      specs["GradientClipNorm"], loss_log)

    if compiled:
        step = T.compile(step)
    rs = np.random.RandomState(4)
    for _ in range(3):
        P.adjust_learning_rate(lr_schedules, optimizer_all, 1)
        sdf_data = T.tensor(rs.uniform(-0.15, 0.15, (2, 6, 4)).astype(np.float32))
        step(sdf_data, T.tensor(rs.choice(5, 2, replace=False)), 1)
    return [np.array(loss_log)] + _state(decoder) + _state(lat_vecs), step


def test_deepsdf_batch_breaks_at_item():
    # ``batch_loss += chunk_loss.item()`` between the sub-batches: a graph break, every call eager
    st = _check(_deepsdf_runs)
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert [b[0].split(" ")[0] for b in st["graph_breaks"]] == ["item()"], st


def _deepsdf_chunk_runs(T, compiled, weight_norm):
    # ``train_batch``'s sub-batch body without its ``.item()`` log, then the clip and the step:
    # the ``Embedding(max_norm=...)`` lookup renormalises the looked-up codes in place inside the
    # program, the weight-normed (or layer-normed) decoder in ``DataParallel``
    specs = deepsdf_specs(weight_norm)
    P, lr_schedules, decoder, lat_vecs, optimizer_all, loss_l1 = deepsdf_setup(T, specs)

    def step(xyz, sdf_gt, indices, epoch):
        optimizer_all.zero_grad()
        batch_vecs = lat_vecs(indices)
        pred_sdf = T.clamp(decoder(T.cat([batch_vecs, xyz], dim=1)), -0.1, 0.1)
        chunk_loss = loss_l1(pred_sdf, T.clamp(sdf_gt, -0.1, 0.1)) / xyz.shape[0]
        l2_size_loss = T.sum(T.norm(batch_vecs, dim=1))
        chunk_loss = chunk_loss + (0.1 * min(1, epoch / 100) * l2_size_loss) / xyz.shape[0]
        chunk_loss.backward()
        T.nn.utils.clip_grad_norm_(decoder.parameters(), specs["GradientClipNorm"])
        optimizer_all.step()
        return chunk_loss

    if compiled:
        step = T.compile(step)
    rs, out = np.random.RandomState(4), []
    for _ in range(3):
        P.adjust_learning_rate(lr_schedules, optimizer_all, 2)
        data = rs.uniform(-0.15, 0.15, (12, 4)).astype(np.float32)
        indices = T.tensor(rs.choice(5, 2, replace=False)).unsqueeze(-1).repeat(1, 6).view(-1)
        out += _arr(step(T.tensor(data[:, :3]), T.tensor(data[:, 3:]), indices, 2))
    return out + _state(decoder) + _state(lat_vecs), step


@pytest.mark.parametrize("weight_norm", [True, False])
def test_deepsdf_chunk_step_compiled(weight_norm):
    st = _check(lambda T, c: _deepsdf_chunk_runs(T, c, weight_norm))
    # the first call runs eagerly (Adam's lazy state), the second traces, the third reuses it
    assert st["traces"] == 1 and st["eager_calls"] == 1 and not st["graph_breaks"], st


def _relational_runs(T, compiled, model_name):
    P, model = relational_setup(T, model_name)
    g = P.tensor_data.__globals__
    step = T.compile(model.train_) if compiled else model.train_
    rs, out = np.random.RandomState(7), []
    data = P.cvt_data_axis(sort_of_clevr(rs, 6))
    for batch_idx in range(3):
        P.tensor_data(data, batch_idx)
        out += _arr(*step(g["input_img"], g["input_qst"], g["label"]))
    return out + _state(model), step


@pytest.mark.parametrize("model_name", ["RN", "CNN_MLP"])
def test_relational_step_compiled(model_name):
    # Adam at lr 1e-4 over gradients of ~1e-9 for some elements: the steps of those differ in
    # sign with float32 rounding (XLA's fusions against eager's ops too), up to 3e-4 in 3 steps
    st = _check(lambda T, c: _relational_runs(T, c, model_name), ref_tol=3e-4, comp_tol=3e-4)
    assert st["traces"] == 1 and st["eager_calls"] == 1 and not st["graph_breaks"], st
