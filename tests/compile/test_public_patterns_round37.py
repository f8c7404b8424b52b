"""Round 37's compiled program: yanx27/Pointnet_Pointnet2_pytorch's PointNet++ semantic
segmentation training step (``models/pointnet2_utils.py``, ``models/pointnet2_sem_seg.py``,
``train_semseg.py``; ported in ``tests/api/test_public_programs_round37_pn2.py`` and loaded from
there) under ``tracegrad.compile``, against torch and tracegrad eager after every call: farthest
point sampling's Python loop of boolean-mask assignments (``distance[mask] = dist[mask]``), the
ball query's masked fills and ``sort``, ``index_points``' advanced indexing, the set-abstraction
and feature-propagation layers, the weighted ``nll_loss``, ``backward`` and an SGD step in one
compiled call; the BatchNorm running statistics read after each call. The boolean-mask
assignment of the sampling loop breaks the graph (named in the stats), so the step runs
eagerly under the compiled wrapper, with the same values."""
import numpy as np
import pytest

from ._dynamo_port import api_programs, compare

torch = pytest.importorskip("torch")


def _programs():
    return api_programs('test_public_programs_round37_pn2.py')


class _FixedRandint:
    """``torch`` whose ``randint`` gives the same seeded draw on every call: a compiled step
    replays the draw it traced, so eager and compiled runs must draw alike each call."""

    def __init__(self, mod):
        self._mod = mod

    def __getattr__(self, name):
        return getattr(self._mod, name)

    def randint(self, low, high, size, dtype=None):
        return self._mod.tensor(np.random.RandomState(0).randint(low, high, size), dtype=dtype)


def test_pointnet2_semseg_train_step_compiled():
    progs = _programs()

    def build(T, wrap):
        from parity import init_params
        get_model, get_loss = progs._pointnet2_classes(_FixedRandint(T))
        classifier = get_model(13)
        init_params(T, classifier, 5, scale=0.2)
        classifier.drop1.p = 0.0
        criterion = get_loss()
        optimizer = T.optim.SGD(classifier.parameters(), lr=0.001, momentum=0.9)
        pts, lab = progs._scenes(2, 64, 13, 1)
        points = T.from_numpy(pts).transpose(2, 1)
        target = T.from_numpy(lab)
        weights = T.Tensor(np.random.RandomState(3).uniform(0.5, 1.5, 13))

        @wrap
        def step(points, target):
            optimizer.zero_grad()
            seg_pred, trans_feat = classifier(points)
            seg_pred = seg_pred.contiguous().view(-1, 13)
            target = target.view(-1, 1)[:, 0]
            loss = criterion(seg_pred, target, trans_feat, weights)
            loss.backward()
            optimizer.step()
            return loss, seg_pred

        def run(i):
            classifier.train()
            loss, seg_pred = step(points, target)
            bn = classifier.sa2.mlp_bns[2]
            return [loss, seg_pred, bn.running_mean.detach(), bn.running_var.detach(),
                    classifier.conv2.weight.detach()]
        return run

    made = []
    compare(lambda T, wrap: build(T, lambda f: made.append(wrap(f)) or made[-1]), calls=3)
    # farthest_point_sample's ``distance[mask] = dist[mask]`` takes a boolean mask's nonzero
    # entries (a data-dependent shape, which torch.compile does not capture by default either):
    # the step runs eagerly with that graph break named, and gives the same values
    breaks = made[2].stats["graph_breaks"]
    assert len(breaks) == 1 and "nonzero" in breaks[0][0], breaks
    path, line = breaks[0][1].rsplit(":", 1)
    assert path.endswith("test_public_programs_round37_pn2.py"), breaks
    with open(path) as f:
        assert f.read().splitlines()[int(line) - 1].strip() == "distance[mask] = dist[mask]", breaks
