"""Round 43's compiled program: locuslab/convmixer-cifar10's training step (``train.py`` at
2d3d9b7, ported in ``tests/api/test_public_programs_round43.py`` and loaded from there) under
``tracegrad.compile``, against torch and tracegrad eager after every call: ``zero_grad``, the
forward under ``torch.cuda.amp.autocast()`` (disabled without CUDA), ``CrossEntropyLoss``, the
disabled ``GradScaler``'s ``scale(loss).backward()``, ``unscale_`` and ``clip_grad_norm_`` (the
``--clip-norm`` branch), ``scaler.step(opt)`` (AdamW) and ``scaler.update()``; BatchNorm's running
statistics are written back. The learning rate of the ``np.interp`` schedule is set between calls,
as the loop does before each step.

Also jankrepl/mildlyoverfitted's ``vision_transformer/custom.py`` (22f0ecc): forward.py's
inference and a training step of the ViT, each compiled.
"""
import warnings

import numpy as np
import pytest

from parity import init_params

from ._dynamo_port import api_programs, compare, compare_programs

torch = pytest.importorskip("torch")

ARGS = ['--batch-size', '4', '--hdim', '8', '--depth', '2', '--conv-ks', '3', '--epochs', '0',
        '--clip-norm']


def test_convmixer_train_step_compiled():
    progs = api_programs('test_public_programs_round43.py')

    def build(T, wrap):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, opt, criterion, scaler, loader = progs._convmixer_train(
                T, lambda *a: None, ARGS)
        nn = T.nn
        batches = list(loader)

        @wrap
        def step(X, y):
            # train.py's loop body with --clip-norm
            model.train()
            opt.zero_grad()
            with T.cuda.amp.autocast():
                output = model(X)
                loss = criterion(output, y)

            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            return loss, output.max(1)[1], norm

        def run(i):
            lr = np.interp([i + 1], [0, 2, 4, 5], [0, 0.01, 0.0005, 0])[0]
            opt.param_groups[0].update(lr=lr)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                loss, pred, norm = step(*batches[i % len(batches)])
            inner = model.module
            return [loss, pred, norm, inner[0].weight.detach(), inner[0].weight.grad,
                    inner[2].running_mean, inner[2].running_var, inner[-1].bias.detach()]
        return run

    made = compare_programs(build, calls=3, traces=1)
    # one program for the three calls; the first call runs eagerly (AdamW's state and the .grad
    # buffers do not exist before it), the other two run the compiled program
    assert made.stats["eager_calls"] == 1, made.stats


def test_vit_forward_topk_compiled():
    """jankrepl/mildlyoverfitted's vision_transformer (``custom.py`` at 22f0ecc, ported in the api
    file): forward.py's inference (the model in eval mode, ``softmax``, ``probs[0].topk(k)``)
    compiled, then a training step of the same model (cross entropy, backward, Adam) compiled."""
    progs = api_programs('test_public_programs_round43.py')

    config = {"img_size": 8, "in_chans": 3, "patch_size": 4, "embed_dim": 8, "depth": 2,
              "n_heads": 2, "qkv_bias": True, "mlp_ratio": 4, "n_classes": 10}

    def build(T, wrap):
        model = init_params(T, progs._vit_classes(T)(**config), 19, scale=0.5)
        opt = T.optim.Adam(model.parameters(), lr=1e-2)
        rs = np.random.RandomState(3)
        imgs = [T.from_numpy((rs.randint(0, 256, (2, 8, 8, 3)) / 128) - 1) for _ in range(3)]
        ys = [T.tensor(rs.randint(0, 10, 2)) for _ in range(3)]

        @wrap
        def infer(img):
            inp = img.permute(0, 3, 1, 2).to(T.float32)
            logits = model(inp)
            probs = T.nn.functional.softmax(logits, dim=-1)
            return probs[0].topk(5)

        @wrap
        def train(img, y):
            opt.zero_grad()
            loss = T.nn.functional.cross_entropy(model(img.permute(0, 3, 1, 2).to(T.float32)), y)
            loss.backward()
            opt.step()
            return loss

        def run(i):
            model.eval()
            top_probs, top_ixs = infer(imgs[i])
            model.train()
            loss = train(imgs[i], ys[i])
            return [top_probs, top_ixs, loss, model.cls_token.detach(), model.pos_embed.grad,
                    model.blocks[0].attn.qkv.weight.detach()]
        return run

    compare(build, calls=3)
