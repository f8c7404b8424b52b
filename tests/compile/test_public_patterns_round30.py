"""Round-30 public programs (``tests/api/test_public_programs_round30.py`` runs them whole and
eagerly against torch), with their training step under ``tracegrad.compile`` (compiled == eager
== torch over the harness's calls; tiny sizes, numpy weights and data):

- gokulrameshd/ERA4_assignment_9 train_test_modules.py: ``train_one_epoch_imagenet``'s batch
  (``channels_last`` inputs and model, CPU ``autocast`` in float16 around a conv net with batch
  norm and ``CrossEntropyLoss(label_smoothing=0.1)``, ``scaler.scale(loss).backward()``,
  ``unscale_``, ``clip_grad_norm_``, ``scaler.step``/``update``, SGD with momentum and weight
  decay, the EMA's in-place ``mul_``/``add_(alpha=)`` under ``no_grad``), with the per-batch
  ``OneCycleLR`` step (lr and momentum) taken between the calls: one trace, no break, when the
  scaler is ``training_loop_with_scaler``'s ``torch.cuda.amp.GradScaler()`` (disabled without
  CUDA). With an enabled ``GradScaler("cpu")``, ``scaler.step`` reads the inf check back
  (``.item()``, as torch's ``GradScaler`` does): a graph break, the step finishing eagerly.

bentrevett's packed LSTM step is not compiled here: ``pack_padded_sequence`` reads the lengths
back (data-dependent batch sizes, a graph break in ``torch.compile`` too), so its compiled step
would only rerun eager code.
"""
import warnings

import numpy as np

import tracegrad

from tests.api.test_public_programs_round30 import _era4_create_model

from ._harness import check_compiled


def _era4_batch(mod, i):
    rs = np.random.RandomState(50 + i)
    return mod.tensor(rs.standard_normal((4, 1, 4, 4)).astype(np.float32)), mod.tensor(rs.randint(0, 3, 4))


def _era4_program(scaler_kind):
    def make(mod, wrap):
        model = _era4_create_model(mod, 3).to(memory_format=mod.channels_last)
        ema_model = _era4_create_model(mod, 3)
        for p in ema_model.parameters():
            p.requires_grad_(False)
        optimizer = mod.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, weight_decay=1e-4)
        scheduler = mod.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, steps_per_epoch=2, epochs=4,
                                                      pct_start=0.15, anneal_strategy="cos")
        if scaler_kind == "cpu":
            scaler = mod.amp.GradScaler(device="cpu")
        else:   # training_loop_with_scaler's torch.cuda.amp.GradScaler(): disabled without CUDA
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scaler = mod.cuda.amp.GradScaler()
        criterion = mod.nn.CrossEntropyLoss(label_smoothing=0.1)
        decay = 0.9

        # train_one_epoch_imagenet's loop body (ENABLE_EMA, channels_last, no mixup), the loss
        # and the correct count returned instead of summed with .item()
        def step(inputs, labels):
            inputs = inputs.to("cpu", non_blocking=True).to(memory_format=mod.channels_last)
            optimizer.zero_grad(set_to_none=True)
            with mod.autocast(device_type="cpu", dtype=mod.float16):
                outputs = model(inputs)
                loss = criterion(outputs, labels)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            mod.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            scaler.step(optimizer)
            scaler.update()
            with mod.no_grad():
                for ema_p, model_p in zip(ema_model.parameters(), model.parameters()):
                    if model_p.dtype.is_floating_point:
                        ema_p.mul_(decay).add_(model_p, alpha=1 - decay)
            _, preds = outputs.max(1)
            return loss.detach(), preds.eq(labels).sum()

        return (wrap(step), {"model": model, "ema": ema_model, "optim": optimizer, "sched": scheduler},
                lambda i: _era4_batch(mod, i))
    return make


def _era4_schedule(state, i):
    """The step's per-batch ``OneCycleLR`` step, taken between the compiled calls."""
    scheduler = state["sched"]
    if scheduler._step_count < scheduler.total_steps:
        scheduler.step()


def test_era4_train_step_compiled():
    # call 0 runs eagerly, call 1 traces, call 2 reuses the program with OneCycleLR's next lr and
    # momentum (lifted inputs); losses, correct counts, weights, EMA weights and SGD state equal
    # eager tracegrad's and torch's
    run = check_compiled(_era4_program("cuda_on_cpu"), calls=3, between=_era4_schedule, torch_too=True,
                         rtol=1e-4, atol=1e-5)
    stats = run.step.stats
    assert (stats["traces"], stats["eager_calls"], stats["graph_breaks"]) == (1, 1, []), stats
    group = run.state["optim"].param_groups[0]
    assert group["lr"] != 0.1 / 25 and group["momentum"] < 0.95, group   # the schedule moved
    model, ema = run.state["model"], run.state["ema"]
    assert model[0].weight.is_contiguous(memory_format=tracegrad.channels_last)
    assert all(p.grad is None for p in ema.parameters())


def test_era4_train_step_with_cpu_scaler_compiled():
    # train_standard.py's GradScaler(device="cpu") is enabled: its skip decision (found_inf)
    # stays in the program (NOTE [skipped steps in a trace]): one program after the first call
    run = check_compiled(_era4_program("cpu"), calls=3, between=_era4_schedule, torch_too=True,
                         rtol=1e-4, atol=1e-5)
    stats = run.step.stats
    assert (stats["traces"], stats["eager_calls"], stats["graph_breaks"]) == (1, 1, []), stats
