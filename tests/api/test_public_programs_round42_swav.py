"""Round 42's third file of public PyTorch programs, run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from a repository no
earlier round used, facebookresearch/swav at 06b1b7c (Caron et al. 2020):

- ``main_swav.py``: ``train`` (the prototypes re-normalised under ``no_grad`` by
  ``F.normalize`` of ``weight.data.clone()`` and ``weight.copy_``; the learning rate written into
  ``param_groups`` from a numpy warm-up + cosine schedule, a numpy float; the swav loss over
  ``crops_for_assign``: the queue of past embeddings used once its last row is not all zeros
  (``torch.all(queue[i, -1, :] == 0)``), shifted by ``queue[i, bs:] = queue[i, :-bs].clone()``
  and refilled, codes from ``torch.exp(out / epsilon).t()``, predictions of every other crop
  picked by ``np.delete(np.arange(...), crop_id)`` (numpy integers in tensor slices),
  ``subloss -= torch.mean(torch.sum(q * torch.log(p), dim=1))``; the prototypes' gradients
  cancelled with ``p.grad = None`` for the first iterations; ``AverageMeter``) and
  ``distributed_sinkhorn`` (in-place ``Q /= sum_Q`` and ``Q *= (...).unsqueeze(...)`` under
  ``no_grad``, ``dist.all_reduce`` on a one-process gloo group, ``.t().float()``).
- ``src/resnet50.py``: ``ResNet.forward`` (crops grouped by size with ``torch.cumsum`` of
  ``torch.unique_consecutive(..., return_counts=True)[1]``, a Python list sliced by 0-d tensors)
  and ``forward_head`` (projection head with ``BatchNorm1d``, ``F.normalize``, the prototypes
  ``Linear``), and ``MultiPrototypes`` (``add_module`` by name, ``getattr`` in ``forward``).

Changes, the same on both sides: the backbone is a small convolutional stand-in for the ResNet-50
trunk (``forward_backbone``), ``.cuda(non_blocking=True)`` is left out, LARC/apex and the
``DistributedDataParallel`` wrapper (``model.module``) are a plain SGD and ``nn.DataParallel``
(which has ``.module`` too) on one process; sizes are tiny (2 crops of 8 x 8 and 2 of 4 x 4,
batches of 2, feature dim 4, 5 prototypes, a queue of 4, 4 iterations, a base learning rate of
0.05 instead of 4.8 with LARC); the images are seeded
numpy arrays, and the weights are overwritten from numpy after construction.
"""
import math
import os
import tempfile

import numpy as np
import pytest
from parity import init_params, run_both

torch = pytest.importorskip("torch")


def _swav(torch, args):
    """src/resnet50.py's ResNet.forward/forward_head and MultiPrototypes, main_swav.py's
    train and distributed_sinkhorn, as written but for the stand-ins listed above."""
    nn = torch.nn
    dist = torch.distributed

    class ResNet(nn.Module):
        """The swav ResNet's head and multi-crop forward over a small trunk."""

        def __init__(self, normalize=False, output_dim=0, hidden_mlp=0, nmb_prototypes=0, eval_mode=False):
            super(ResNet, self).__init__()
            self.eval_mode = eval_mode
            # stand-in for the ResNet-50 trunk
            self.trunk = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(inplace=True))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            num_out_filters = 6
            # normalize output features
            self.l2norm = normalize
            # projection head
            if output_dim == 0:
                self.projection_head = None
            elif hidden_mlp == 0:
                self.projection_head = nn.Linear(num_out_filters, output_dim)
            else:
                self.projection_head = nn.Sequential(
                    nn.Linear(num_out_filters, hidden_mlp),
                    nn.BatchNorm1d(hidden_mlp),
                    nn.ReLU(inplace=True),
                    nn.Linear(hidden_mlp, output_dim),
                )
            # prototype layer
            self.prototypes = None
            if isinstance(nmb_prototypes, list):
                self.prototypes = MultiPrototypes(output_dim, nmb_prototypes)
            elif nmb_prototypes > 0:
                self.prototypes = nn.Linear(output_dim, nmb_prototypes, bias=False)

        def forward_backbone(self, x):
            x = self.trunk(x)
            if self.eval_mode:
                return x
            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            return x

        def forward_head(self, x):
            if self.projection_head is not None:
                x = self.projection_head(x)
            if self.l2norm:
                x = nn.functional.normalize(x, dim=1, p=2)
            if self.prototypes is not None:
                return x, self.prototypes(x)
            return x

        def forward(self, inputs):
            if not isinstance(inputs, list):
                inputs = [inputs]
            idx_crops = torch.cumsum(torch.unique_consecutive(
                torch.tensor([inp.shape[-1] for inp in inputs]),
                return_counts=True,
            )[1], 0)
            start_idx = 0
            for end_idx in idx_crops:
                _out = self.forward_backbone(torch.cat(inputs[start_idx: end_idx]))
                if start_idx == 0:
                    output = _out
                else:
                    output = torch.cat((output, _out))
                start_idx = end_idx
            return self.forward_head(output)

    class MultiPrototypes(nn.Module):
        def __init__(self, output_dim, nmb_prototypes):
            super(MultiPrototypes, self).__init__()
            self.nmb_heads = len(nmb_prototypes)
            for i, k in enumerate(nmb_prototypes):
                self.add_module("prototypes" + str(i), nn.Linear(output_dim, k, bias=False))

        def forward(self, x):
            out = []
            for i in range(self.nmb_heads):
                out.append(getattr(self, "prototypes" + str(i))(x))
            return out

    class AverageMeter(object):
        """computes and stores the average and current value"""

        def __init__(self):
            self.reset()

        def reset(self):
            self.val = 0
            self.avg = 0
            self.sum = 0
            self.count = 0

        def update(self, val, n=1):
            self.val = val
            self.sum += val * n
            self.count += n
            self.avg = self.sum / self.count

    def train(train_loader, model, optimizer, epoch, lr_schedule, queue, log):
        losses = AverageMeter()

        softmax = nn.Softmax(dim=1)
        model.train()
        use_the_queue = False

        for it, inputs in enumerate(train_loader):
            # update learning rate
            iteration = epoch * len(train_loader) + it
            for param_group in optimizer.param_groups:
                param_group["lr"] = lr_schedule[iteration]

            # normalize the prototypes
            with torch.no_grad():
                w = model.module.prototypes.weight.data.clone()
                w = nn.functional.normalize(w, dim=1, p=2)
                model.module.prototypes.weight.copy_(w)

            # ============ multi-res forward passes ... ============
            embedding, output = model(inputs)
            embedding = embedding.detach()
            bs = inputs[0].size(0)

            # ============ swav loss ... ============
            loss = 0
            for i, crop_id in enumerate(args.crops_for_assign):
                with torch.no_grad():
                    out = output[bs * crop_id: bs * (crop_id + 1)]

                    # time to use the queue
                    if queue is not None:
                        if use_the_queue or not torch.all(queue[i, -1, :] == 0):
                            use_the_queue = True
                            out = torch.cat((torch.mm(
                                queue[i],
                                model.module.prototypes.weight.t()
                            ), out))
                        # fill the queue
                        queue[i, bs:] = queue[i, :-bs].clone()
                        queue[i, :bs] = embedding[crop_id * bs: (crop_id + 1) * bs]
                    # get assignments
                    q = torch.exp(out / args.epsilon).t()
                    q = distributed_sinkhorn(q, args.sinkhorn_iterations)[-bs:]

                # cluster assignment prediction
                subloss = 0
                for v in np.delete(np.arange(np.sum(args.nmb_crops)), crop_id):
                    p = softmax(output[bs * v: bs * (v + 1)] / args.temperature)
                    subloss -= torch.mean(torch.sum(q * torch.log(p), dim=1))
                loss += subloss / (np.sum(args.nmb_crops) - 1)
            loss /= len(args.crops_for_assign)

            # ============ backward and optim step ... ============
            optimizer.zero_grad()
            loss.backward()
            # cancel some gradients
            if iteration < args.freeze_prototypes_niters:
                for name, p in model.named_parameters():
                    if "prototypes" in name:
                        p.grad = None
            optimizer.step()

            # ============ misc ... ============
            losses.update(loss.item(), inputs[0].size(0))
            log("loss", loss)
            log("use_the_queue", use_the_queue)
            if args.rank == 0 and it % 1 == 0:
                print(
                    "Epoch: [{0}][{1}]\t"
                    "Loss {loss.val:.4f} ({loss.avg:.4f})\t"
                    "Lr: {lr:.4f}".format(
                        epoch,
                        it,
                        loss=losses,
                        lr=optimizer.param_groups[0]["lr"],
                    )
                )
        return (epoch, losses.avg), queue

    def distributed_sinkhorn(Q, nmb_iters):
        with torch.no_grad():
            sum_Q = torch.sum(Q)
            dist.all_reduce(sum_Q)
            Q /= sum_Q

            u = torch.zeros(Q.shape[0])
            r = torch.ones(Q.shape[0]) / Q.shape[0]
            c = torch.ones(Q.shape[1]) / (args.world_size * Q.shape[1])

            curr_sum = torch.sum(Q, dim=1)
            dist.all_reduce(curr_sum)

            for it in range(nmb_iters):
                u = curr_sum
                Q *= (r / u).unsqueeze(1)
                Q *= (c / torch.sum(Q, dim=0)).unsqueeze(0)
                curr_sum = torch.sum(Q, dim=1)
                dist.all_reduce(curr_sum)
            return (Q / torch.sum(Q, dim=0, keepdim=True)).t().float()

    return ResNet, train, distributed_sinkhorn


def _program_swav(mod, log):
    from types import SimpleNamespace
    torch = mod
    nn = torch.nn
    dist = torch.distributed
    args = SimpleNamespace(nmb_crops=[2, 2], size_crops=[8, 4], crops_for_assign=[0, 1], temperature=0.1,
                           epsilon=0.05, sinkhorn_iterations=3, feat_dim=4, nmb_prototypes=5, queue_length=4,
                           epoch_queue_starts=0, epochs=2, base_lr=0.05, final_lr=0.0005,
                           freeze_prototypes_niters=1, wd=1e-6, warmup_epochs=1, start_warmup=0.01,
                           world_size=1, rank=0, hidden_mlp=6, batch_size=2)
    ResNet, train, distributed_sinkhorn = _swav(torch, args)

    rs = np.random.RandomState(0)
    # two iterations per epoch of multi-crop batches: 2 crops of 8 x 8, then 2 of 4 x 4
    train_loader = [[torch.tensor(rs.normal(0, 1, (args.batch_size, 3, s, s)).astype(np.float32))
                     for s, n in zip(args.size_crops, args.nmb_crops) for _ in range(n)] for _ in range(2)]

    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, f"store_{torch.__name__}")
        dist.init_process_group(backend="gloo", init_method=f"file://{store}", world_size=1, rank=0)
        try:
            model = ResNet(normalize=True, hidden_mlp=args.hidden_mlp, output_dim=args.feat_dim,
                           nmb_prototypes=args.nmb_prototypes)
            init_params(torch, model, 1, scale=0.5)
            multi = ResNet(output_dim=args.feat_dim, nmb_prototypes=[3, 2])
            init_params(torch, multi, 2, scale=0.5)
            emb, outs = multi(train_loader[0])
            log("multi prototypes", [emb] + outs)
            model = nn.DataParallel(model)

            optimizer = torch.optim.SGD(model.parameters(), lr=args.base_lr, momentum=0.9, weight_decay=args.wd)
            warmup_lr_schedule = np.linspace(args.start_warmup, args.base_lr, len(train_loader) * args.warmup_epochs)
            iters = np.arange(len(train_loader) * (args.epochs - args.warmup_epochs))
            cosine_lr_schedule = np.array([args.final_lr + 0.5 * (args.base_lr - args.final_lr) * (1 + \
                                 math.cos(math.pi * t / (len(train_loader) * (args.epochs - args.warmup_epochs)))) for t in iters])
            lr_schedule = np.concatenate((warmup_lr_schedule, cosine_lr_schedule))

            queue = None
            for epoch in range(args.epochs):
                # optionally starts a queue
                if args.queue_length > 0 and epoch >= args.epoch_queue_starts and queue is None:
                    queue = torch.zeros(
                        len(args.crops_for_assign),
                        args.queue_length // args.world_size,
                        args.feat_dim,
                    )
                scores, queue = train(train_loader, model, optimizer, epoch, lr_schedule, queue, log)
                log("scores", scores)
            log("queue", queue)
            for name, p in model.named_parameters():
                log(name, p)
            log("state", [type(optimizer.param_groups[0]["lr"]).__name__])
            log("sinkhorn", distributed_sinkhorn(torch.tensor(rs.uniform(0.1, 2, (5, 4)).astype(np.float32)), 3))
        finally:
            dist.destroy_process_group()


def test_facebookresearch_swav_sinkhorn_queue_training():
    # rtol 1e-4: the codes exp(out / 0.05) and the predictions softmax(out / 0.1) scale float32
    # rounding by 20 and 10 each step (the losses of the two sides part by 2e-6 after 4 steps)
    run_both(_program_swav, rtol=1e-4, atol=1e-5)
