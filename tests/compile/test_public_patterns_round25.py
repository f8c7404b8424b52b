"""Round-24 public programs (``tests/api/test_public_programs_round24.py`` runs them whole and
eagerly against torch), condensed to their model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- esceptico/perceiver-io: a ``PerceiverIO`` classifier's training step (trainable latents
  ``repeat``-ed over the batch into a multi-head ``CrossAttention``, one ``SelfAttention`` layer
  applied in two weight-shared blocks, star-unpacked ``view``/``reshape`` sizes, a
  ``ProjectionDecoder`` mean over latents, cross-entropy, SGD with momentum): one trace, no break, the trace
  reused on new data.
"""
import tracegrad
from tests.api.test_public_programs_round24 import _perceiver_module

from ._harness import check_compiled, data, labels, np_init


# ---- esceptico/perceiver-io src/perceiver_io/{attention,encoder,decoders,perceiver}.py (the
# classes as the eager round-24 test defines them; the unmasked path, dropout 0 as in the
# defaults), with a train step in place of the repository's pytorch-lightning module -----------
def _perceiver_program(mod, wrap):
    PerceiverEncoder, ProjectionDecoder, PerceiverIO = _perceiver_module(mod)
    encoder = PerceiverEncoder(num_latents=4, latent_dim=8, input_dim=8, num_self_attn_per_block=1, num_blocks=2,
                               num_cross_attn_heads=2, num_self_attn_heads=2)
    model = np_init(PerceiverIO(encoder, ProjectionDecoder(latent_dim=8, num_classes=3)), mod)
    # SGD with momentum, not Adam: the key projection's bias gets a gradient that is zero but for
    # rounding (softmax over keys ignores a per-query constant), and Adam's ``g / sqrt(v)`` turns
    # that noise into lr-sized steps that differ with the summation order
    opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(inputs, targets):
        opt.zero_grad()
        logits = model(inputs)
        loss = mod.nn.functional.cross_entropy(logits, targets)
        loss.backward()
        opt.step()
        return loss, logits

    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 2, 4, 8), labels(mod, i, 2, 3))


def test_perceiver_io_train_step_compiled():
    # call 0 runs eagerly, call 1 traces, call 2 (new data) reuses the program
    run = check_compiled(_perceiver_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1 and run.step.stats["eager_calls"] == 1, run.step.stats
    loss, logits = run.step(data(tracegrad, 7, 2, 4, 8), labels(tracegrad, 7, 2, 3))
    assert run.step.stats["traces"] == 1, run.step.stats
    assert tuple(logits.shape) == (2, 3) and logits.grad_fn is not None and loss.dim() == 0
