"""Round-33 public programs (``tests/api/test_public_programs_round33.py`` and
``test_public_programs_round33_edl.py`` run them whole and eagerly against torch), with a
training step under ``tracegrad.compile`` (compiled == eager == torch over the harness's calls;
tiny sizes, numpy weights and data):
- dougbrion/pytorch-classification-uncertainty train.py: ``train_model``'s training batch with
  ``uncertainty=True`` (``one_hot_embedding``'s ``torch.eye(10)[labels]`` made in the step, the
  LeNet, ``edl_digamma_loss``: ReLU evidence, ``digamma`` of the Dirichlet strengths, the KL term
  to the uniform Dirichlet through ``lgamma``/``digamma`` of a ``torch.ones`` made in the step,
  the annealing coefficient ``torch.min`` of two 0-d ``torch.tensor``s built from Python floats),
  ``backward``, Adam with weight decay: one trace, no break, the trace reused on new data.
Michaelvll/DeepCCA's step is not compiled here: ``cca_loss`` selects eigenpairs with
``gt(D, eps).nonzero()`` (a data-dependent size, a graph break in ``torch.compile`` too), so its
compiled step would only rerun eager code.
"""
import numpy as np

from tests.api.test_public_programs_round33 import _np_init
from tests.api.test_public_programs_round33_edl import _edl_functions

from ._harness import check_compiled


def _edl_batch(mod, i):
    rs = np.random.RandomState(70 + i)
    return (mod.tensor(rs.uniform(0, 1, (4, 1, 28, 28)).astype(np.float32)),
            mod.tensor(rs.randint(0, 10, 4)))


def _edl_program(mod, wrap):
    fns = _edl_functions(mod)
    one_hot_embedding, criterion = fns["one_hot_embedding"], fns["edl_digamma_loss"]
    model = _np_init(mod, fns["LeNet"](), 3, scale=0.3)
    optimizer = mod.optim.Adam(model.parameters(), lr=1e-3, weight_decay=0.005)
    device = fns["get_device"]()
    num_classes, epoch = 10, 3   # epoch 3 of annealing_step 10: the KL term weighs 0.3
    model.train()

    # train_model's batch in the "train" phase, the loss returned instead of summed with .item()
    def step(inputs, labels):
        inputs = inputs.to(device)
        labels = labels.to(device)
        optimizer.zero_grad()
        with mod.set_grad_enabled(True):
            y = one_hot_embedding(labels)
            y = y.to(device)
            outputs = model(inputs)
            _, preds = mod.max(outputs, 1)
            loss = criterion(outputs, y.float(), epoch, num_classes, 10, device)
            loss.backward()
            optimizer.step()
        return loss.detach(), preds

    return wrap(step), {"model": model, "optim": optimizer}, lambda i: _edl_batch(mod, i)


def test_evidential_digamma_step_compiled():
    # call 0 runs eagerly, call 1 traces the whole step, call 2 reuses it; losses, predictions,
    # weights, grads and Adam state equal eager tracegrad's and torch's
    run = check_compiled(_edl_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    stats = run.step.stats
    assert (stats["traces"], stats["eager_calls"], stats["graph_breaks"]) == (1, 1, []), stats
