"""Round-32 public programs (``tests/api/test_public_programs_round32.py`` runs them whole and
eagerly against torch), with a training step under ``tracegrad.compile`` (compiled == eager ==
torch over the harness's calls; tiny sizes, numpy weights and data):
- pytorch/tutorials knowledge_distillation_tutorial.py: ``train_cosine_loss``'s batch (the
  teacher in ``eval()`` run under ``torch.no_grad()`` inside the compiled step, its
  ``avg_pool1d``-ed flattened features, ``nn.CosineEmbeddingLoss`` against a ``torch.ones`` target
  made in the step, cross-entropy, Adam): one trace, no break, the teacher's parameters left
  without gradients (``train_knowledge_distillation``'s temperature-softmax batch, the same
  program with another loss, runs eagerly against torch in the round-32 file only: a second
  compiled step would double this file's compile time).
"""
import numpy as np

from tests.api.test_public_programs_round32 import _np_init
from tests.api.test_public_programs_round32_kd import _kd_classes

from ._harness import check_compiled


def _kd_batch(mod, i):
    rs = np.random.RandomState(60 + i)
    return (mod.tensor(rs.standard_normal((3, 3, 8, 8)).astype(np.float32)), mod.tensor(rs.randint(0, 4, 3)))


def _kd_cosine_program(mod, wrap):
    nn = mod.nn
    _, _, ModifiedDeepNNCosine, ModifiedLightNNCosine = _kd_classes(mod)
    teacher = _np_init(mod, ModifiedDeepNNCosine(num_classes=4), 42, scale=0.6)
    student = _np_init(mod, ModifiedLightNNCosine(num_classes=4), 7)
    ce_loss = nn.CrossEntropyLoss()
    cosine_loss = nn.CosineEmbeddingLoss()
    optimizer = mod.optim.Adam(student.parameters(), lr=0.01)
    teacher.eval()  # Teacher set to evaluation mode
    student.train()  # Student to train mode
    hidden_rep_loss_weight, ce_loss_weight = 0.25, 0.75

    # train_cosine_loss's loop body, the loss returned instead of added to running_loss with .item()
    def step(inputs, labels):
        optimizer.zero_grad()
        with mod.no_grad():
            _, teacher_hidden_representation = teacher(inputs)
        student_logits, student_hidden_representation = student(inputs)
        hidden_rep_loss = cosine_loss(student_hidden_representation, teacher_hidden_representation,
                                      target=mod.ones(inputs.size(0)))
        label_loss = ce_loss(student_logits, labels)
        loss = hidden_rep_loss_weight * hidden_rep_loss + ce_loss_weight * label_loss
        loss.backward()
        optimizer.step()
        return loss.detach()

    return wrap(step), {"student": student, "teacher": teacher, "optim": optimizer}, lambda i: _kd_batch(mod, i)


def test_knowledge_distillation_cosine_step_compiled():
    # call 0 runs eagerly, call 1 traces the whole step (teacher under no_grad, student, losses,
    # backward, Adam), call 2 reuses it; losses, weights, grads and Adam state equal eager
    # tracegrad's and torch's
    run = check_compiled(_kd_cosine_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    stats = run.step.stats
    assert (stats["traces"], stats["eager_calls"], stats["graph_breaks"]) == (1, 1, []), stats
    assert all(p.grad is not None for p in run.state["student"].parameters())
    assert all(p.grad is None for p in run.state["teacher"].parameters())
