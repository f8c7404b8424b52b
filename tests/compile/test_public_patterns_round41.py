"""Round 41's compiled programs: tkipf/c-swm's training steps (``modules.py``, ``utils.py``,
``train.py`` at e944b24, ported in ``tests/api/test_public_programs_round41.py`` and loaded from
there) under ``tracegrad.compile``, against torch and tracegrad eager after every call.

- The ``--decoder`` step (encoder ``medium``): the object encoders, ``DecoderCNNMedium``'s
  ``ConvTranspose2d``/``BatchNorm2d`` (running statistics written back), both summed
  ``binary_cross_entropy`` terms with ``loss +=``, the transition GNN (its edge list built and
  cached on the module by the first, eager call; ``scatter_add_`` of the edge messages), and two
  Adam steps in one compiled program over the loader's two batches in turn (one shape: one
  program).
- The contrastive step as written draws its negatives with ``np.random.permutation`` inside
  ``contrastive_loss``: a compiled program would repeat the first draw forever, so
  ``tracegrad.compile`` runs that step eagerly, saying why (numpy's global generator changes),
  and its results still equal eager's call after call (each call reseeds numpy, the same in
  all three runs).
- kamenbliznashki/normalizing_flows ``bnaf.py`` (97a73a0, ported in
  ``tests/api/test_public_programs_round41_bnaf.py``): a density-estimation step whose
  ``MaskedLinear`` picks its log-determinant blocks with ``logdet[self.mask_d.byte()]``, an
  output shape read from the mask's values: the step runs eagerly, the reason naming
  ``nonzero()`` and that line, and equals eager.
"""
import warnings

import numpy as np
import pytest

from ._dynamo_port import api_programs, compare, compare_programs

torch = pytest.importorskip("torch")

SIZES = ['--batch-size', '4', '--epochs', '1', '--hidden-dim', '32', '--num-objects', '3',
         '--dataset', 'data/shapes_train.h5']


def _programs():
    return api_programs('test_public_programs_round41.py')


def test_cswm_decoder_train_step_compiled():
    progs = _programs()

    def build(T, wrap):
        b = progs.build(T, SIZES + ['--decoder', '--encoder', 'medium'])
        F = T.nn.functional
        model, decoder = b.model, b.decoder
        optimizer, optimizer_dec = b.optimizer, b.optimizer_dec
        batches = list(b.train_loader)

        @wrap
        def step(obs, action, next_obs):
            # train.py's loop body with args.decoder
            optimizer.zero_grad()
            optimizer_dec.zero_grad()
            objs = model.obj_extractor(obs)
            state = model.obj_encoder(objs)

            rec = T.sigmoid(decoder(state))
            loss = F.binary_cross_entropy(
                rec, obs, reduction='sum') / obs.size(0)

            next_state_pred = state + model.transition_model(state, action)
            next_rec = T.sigmoid(decoder(next_state_pred))
            next_loss = F.binary_cross_entropy(
                next_rec, next_obs,
                reduction='sum') / obs.size(0)
            loss += next_loss
            loss.backward()
            optimizer.step()
            optimizer_dec.step()
            return loss, rec[:, :, :2, :2]

        def run(i):
            model.train()
            decoder.train()
            loss, rec = step(*batches[i % 2])
            return [loss, rec, model.transition_model.edge_list,
                    # running_var, not running_mean: deconv1's bias (BatchNorm's input) moves by
                    # Adam steps on rounding noise (see the eager test), which the mean carries
                    decoder.ln1.running_var, decoder.deconv2.weight.detach(),
                    model.obj_encoder.fc1.weight.grad,
                    model.transition_model.node_mlp[0].weight.grad]
        return run

    compare_programs(build, calls=3, traces=1)


def test_cswm_contrastive_step_numpy_draw_runs_eagerly():
    progs = _programs()

    made = []

    def build(T, wrap):
        b = progs.build(T, SIZES + ['--encoder', 'small'])
        model, optimizer = b.model, b.optimizer
        batches = list(b.train_loader)

        def step(*data_batch):
            # train.py's loop body, contrastive
            optimizer.zero_grad()
            loss = model.contrastive_loss(*data_batch)
            loss.backward()
            optimizer.step()
            return loss
        step = wrap(step)
        made.append(step)

        def run(i):
            np.random.seed(10 + i)
            loss = step(*batches[i % 2])
            return [loss, model.pos_loss, model.neg_loss,
                    model.obj_encoder.fc3.weight.detach()]
        return run

    with pytest.warns(UserWarning, match="numpy.random's global generator"):
        compare(build, calls=3)
    st = made[2].stats
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert [why for why, _ in st["graph_breaks"]] == [
        "the function changes the Python value 'numpy.random's global generator' (a counter, "
        "an append, an attribute...): the program would not repeat that on later calls"], st


def test_bnaf_step_with_mask_indexing_runs_eagerly():
    progs = api_programs('test_public_programs_round41_bnaf.py')
    made = []

    def build(T, wrap):
        torch = progs._SeededTorch(T, 0)
        p = progs._program_classes(torch, None)
        model = progs.init_params(T, p.BNAF(2, 1, 4), 5, scale=0.5)
        optimizer = T.optim.Adam(model.parameters(), lr=0.01)
        data = [T.tensor(np.random.RandomState(i).randn(8, 2).astype(np.float32))
                for i in range(3)]

        def step(sample):
            # compute_kl_pq_loss on a given sample, then train_flow's update
            z, logdet = model(sample)
            loss = (- T.sum(model.base_dist.log_prob(z) + logdet, dim=1)).mean(0)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss
        step = wrap(step)
        made.append(step)

        def run(i):
            with warnings.catch_warnings():
                # the uint8 mask's deprecation (not the compiler's warning)
                warnings.filterwarnings("ignore", message="indexing with dtype")
                loss = step(data[i])
            return [loss, model.net[2].weight.detach(), model.net[0].logg.grad]
        return run

    with pytest.warns(UserWarning, match="nonzero"):
        compare(build, calls=3)
    st = made[2].stats
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    (why, where), = st["graph_breaks"]
    assert why.startswith("nonzero() reads a tensor's value in Python"), st
    assert "test_public_programs_round41_bnaf.py" in where, st
