"""Round-34 public programs (``tests/api/test_public_programs_round34.py`` and its ``_cpc``/``_favor``
companions run them whole and eagerly against torch), with a training step under
``tracegrad.compile`` (compiled == eager == torch over the harness's calls; tiny sizes, numpy weights
and data):
- lukasruff/Deep-SVDD-PyTorch src/optim/deepSVDD_trainer.py: ``DeepSVDDTrainer.train``'s batch with
  the soft-boundary objective (the bias-free ``MNIST_LeNet`` with ``BatchNorm2d(affine=False)`` in
  train mode, distances to the centre ``c`` found under ``no_grad`` by ``init_center_c``,
  ``R ** 2 + (1 / nu) * mean(max(zeros_like(scores), scores))``, ``backward``, Adam). The radius
  update ``self.R.data = torch.tensor(get_radius(dist, nu))`` (a numpy quantile) runs between calls,
  as the trainer runs it after each step: the step reads ``R`` through the trainer, and each update
  swaps the storage under the same tensor object, so the compiled step must read each new value.
jefflai108's CPC step is not compiled here: ``CDCK2.forward`` calls ``correct.item()`` and draws
its time stamp on the host (a graph break in ``torch.compile`` too), and aliutkus/favor redraws its
features from the user's numpy randomizer on every call.
"""

from tests.api.test_public_programs_round34 import _np_init, _svdd_classes, _svdd_dataset

from ._harness import check_compiled


def _svdd_program(mod, wrap):
    classes = _svdd_classes(mod, warm_up_n_epochs=0)
    dataset = _svdd_dataset(mod, classes)
    svdd = classes["DeepSVDD"]('soft-boundary', 0.25)
    svdd.set_network('mnist_LeNet')
    net = _np_init(mod, svdd.net, 1, scale=0.2)
    trainer = classes["DeepSVDDTrainer"]('soft-boundary', svdd.R, svdd.c, svdd.nu, 'adam', lr=1e-3,
                                          n_epochs=1, batch_size=4, weight_decay=1e-6, device='cpu')
    train_loader, _ = dataset.loaders(batch_size=trainer.batch_size)
    trainer.c = trainer.init_center_c(train_loader, net)
    optimizer = mod.optim.Adam(net.parameters(), lr=trainer.lr, weight_decay=trainer.weight_decay,
                               amsgrad=trainer.optimizer_name == 'amsgrad')
    batches = [inputs for inputs, _, _ in train_loader]
    net.train()
    get_radius = classes["get_radius"]

    # the trainer's batch, the loss and distances returned instead of summed with .item()
    def step(inputs):
        inputs = inputs.to(trainer.device)

        # Zero the network parameter gradients
        optimizer.zero_grad()

        # Update network parameters via backpropagation: forward + backward + optimize
        outputs = net(inputs)
        dist = mod.sum((outputs - trainer.c) ** 2, dim=1)
        if trainer.objective == 'soft-boundary':
            scores = dist - trainer.R ** 2
            loss = trainer.R ** 2 + (1 / trainer.nu) * mod.mean(mod.max(mod.zeros_like(scores), scores))
        else:
            loss = mod.mean(dist)
        loss.backward()
        optimizer.step()
        return loss.detach(), dist.detach()

    compiled = wrap(step)
    state = {"model": net, "optim": optimizer, "trainer": trainer.__dict__, "dists": [], "step": compiled}

    def call(inputs):
        loss, dist = compiled(inputs)
        state["dists"].append(dist)
        return loss, dist

    def update_radius(i):
        # Update hypersphere radius R on mini-batch distances (the trainer's line, after the step)
        trainer.R.data = mod.tensor(get_radius(state["dists"][-1], trainer.nu), device=trainer.device)

    state["change"] = update_radius
    return call, state, lambda i: (batches[i % len(batches)],)


def _update_radius(state, i):
    state["change"](i)


def test_deep_svdd_soft_boundary_step_compiled():
    # four calls over the two training batches with the radius updated after each: the losses,
    # distances, weights, BatchNorm statistics, Adam state and the radius equal eager
    # tracegrad's and torch's (atol 1e-4: conv2's gradient entries of ~0.1 are sums of terms
    # of ~30 through the affine-free BatchNorm, so float32 sums in another order differ by ~6e-5;
    # rtol 3e-4: conv1's gradient entries of ~4 differ from torch's by up to 1.7e-4 relative on an
    # AVX-512 CPU with native 16-bit arithmetic, where XLA's convolution sums in another order)
    run = check_compiled(_svdd_program, calls=4, between=_update_radius, torch_too=True, rtol=3e-4, atol=1e-4)
    stats = run.state["step"].stats
    assert stats["graph_breaks"] == [], stats
    assert stats["traces"] == 1, stats     # a new R.data is the same tensor: no retrace
    assert float(run.state["trainer"]["R"]) > 0   # the last update landed
