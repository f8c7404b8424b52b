"""Round 37's PointNet++ program from yanx27/Pointnet_Pointnet2_pytorch, in its own file for the
time limit (the round's notes are in ``test_public_programs_round37.py``):
``models/pointnet2_utils.py`` (at 0c51a35), ``models/pointnet2_sem_seg.py`` (at 0c51a35) and
``train_semseg.py`` (at c28e1b6), unchanged: ``square_distance`` (``-2 * matmul`` then two
in-place ``+=`` of broadcast views), ``index_points`` (advanced indexing ``points[batch_indices,
idx, :]`` with a repeated ``arange`` batch index, 2-d and 3-d ``idx``),
``farthest_point_sample`` (a Python loop writing ``centroids[:, i] = farthest``, a boolean-mask
assignment ``distance[mask] = dist[mask]`` and ``torch.max(distance, -1)[1]``),
``query_ball_point`` (``group_idx[sqrdists > radius ** 2] = N``, ``sort(dim=-1)[0]``, a masked
copy from a repeated first column), ``PointNetSetAbstraction`` (1x1 ``Conv2d``/``BatchNorm2d``
on ``permute(0, 3, 2, 1)``-ed groups, ``torch.max(new_points, 2)[0]``) and
``PointNetFeaturePropagation`` (``dists.sort(dim=-1)`` of the three nearest, inverse-distance
weights); the sem-seg ``get_model`` (set abstractions, then
propagations back, ``log_softmax`` then ``permute``) and its ``nll_loss(weight=)``; the training
step of ``train_semseg.py`` (``classifier.apply(inplace_relu)``, a ``weights_init`` applied with
``Module.apply``, BatchNorm momentum set through ``apply(lambda ...)``, the learning rate set in
``param_groups``, ``seg_pred.contiguous().view(-1, NUM_CLASSES)``, ``target.view(-1, 1)[:, 0]
.cpu().data.numpy()``, ``loss_sum += loss`` printed with ``'%f'``) and its evaluation pass
(``np.argmax`` of ``seg_pred.contiguous().cpu().data.numpy()``, per-class IoU in numpy).

Changes, the same on both sides: ``farthest_point_sample``'s ``torch.randint`` start draws from a
seeded numpy stream (random streams differ by design), the ``xavier_normal_`` initialisation is
overwritten from numpy after ``weights_init`` has run, dropout is 0, ``.cuda()`` is left out,
``get_model`` keeps the first two of its four levels, scaled down (32 and 8 centroids of up to 8
neighbours in place of 1024 and 256 of 32, widths an eighth; the second level's features stand
for ``l4_points``), one training and one evaluation batch of 2 seeded 64-point scenes with 9
channels replace S3DIS, the label weights are seeded, the optimizer is the program's SGD branch
(``--optimizer SGD``, for the time a cold fused Adam step over many tensors compiles),
``tqdm`` and the file logger are left out (``log_string`` prints), and numpy's removed
``np.float`` is ``np.float64``.
"""
import numpy as np
import pytest
from parity import init_params, run_both

torch = pytest.importorskip("torch")


class _SeededRandint:
    """``torch`` with ``randint(low, high, size, dtype=)`` from a seeded numpy stream (the
    starting points of ``farthest_point_sample``); every other name is the module's own."""

    def __init__(self, mod, seed):
        self._mod = mod
        self._rs = np.random.RandomState(seed)

    def __getattr__(self, name):
        return getattr(self._mod, name)

    def randint(self, low, high, size, dtype=None):
        return self._mod.tensor(self._rs.randint(low, high, size), dtype=dtype)


# ---- models/pointnet2_utils.py and models/pointnet2_sem_seg.py ----------------------------------
def _pointnet2_classes(torch):
    nn, F = torch.nn, torch.nn.functional

    def square_distance(src, dst):
        B, N, _ = src.shape
        _, M, _ = dst.shape
        dist = -2 * torch.matmul(src, dst.permute(0, 2, 1))
        dist += torch.sum(src ** 2, -1).view(B, N, 1)
        dist += torch.sum(dst ** 2, -1).view(B, 1, M)
        return dist

    def index_points(points, idx):
        device = points.device
        B = points.shape[0]
        view_shape = list(idx.shape)
        view_shape[1:] = [1] * (len(view_shape) - 1)
        repeat_shape = list(idx.shape)
        repeat_shape[0] = 1
        batch_indices = torch.arange(B, dtype=torch.long).to(device).view(view_shape).repeat(repeat_shape)
        new_points = points[batch_indices, idx, :]
        return new_points

    def farthest_point_sample(xyz, npoint):
        device = xyz.device
        B, N, C = xyz.shape
        centroids = torch.zeros(B, npoint, dtype=torch.long).to(device)
        distance = torch.ones(B, N).to(device) * 1e10
        farthest = torch.randint(0, N, (B,), dtype=torch.long).to(device)
        batch_indices = torch.arange(B, dtype=torch.long).to(device)
        for i in range(npoint):
            centroids[:, i] = farthest
            centroid = xyz[batch_indices, farthest, :].view(B, 1, 3)
            dist = torch.sum((xyz - centroid) ** 2, -1)
            mask = dist < distance
            distance[mask] = dist[mask]
            farthest = torch.max(distance, -1)[1]
        return centroids

    def query_ball_point(radius, nsample, xyz, new_xyz):
        device = xyz.device
        B, N, C = xyz.shape
        _, S, _ = new_xyz.shape
        group_idx = torch.arange(N, dtype=torch.long).to(device).view(1, 1, N).repeat([B, S, 1])
        sqrdists = square_distance(new_xyz, xyz)
        group_idx[sqrdists > radius ** 2] = N
        group_idx = group_idx.sort(dim=-1)[0][:, :, :nsample]
        group_first = group_idx[:, :, 0].view(B, S, 1).repeat([1, 1, nsample])
        mask = group_idx == N
        group_idx[mask] = group_first[mask]
        return group_idx

    def sample_and_group(npoint, radius, nsample, xyz, points, returnfps=False):
        B, N, C = xyz.shape
        S = npoint
        fps_idx = farthest_point_sample(xyz, npoint) # [B, npoint, C]
        torch.cuda.empty_cache()
        new_xyz = index_points(xyz, fps_idx)
        torch.cuda.empty_cache()
        idx = query_ball_point(radius, nsample, xyz, new_xyz)
        torch.cuda.empty_cache()
        grouped_xyz = index_points(xyz, idx) # [B, npoint, nsample, C]
        torch.cuda.empty_cache()
        grouped_xyz_norm = grouped_xyz - new_xyz.view(B, S, 1, C)
        torch.cuda.empty_cache()

        if points is not None:
            grouped_points = index_points(points, idx)
            new_points = torch.cat([grouped_xyz_norm, grouped_points], dim=-1) # [B, npoint, nsample, C+D]
        else:
            new_points = grouped_xyz_norm
        if returnfps:
            return new_xyz, new_points, grouped_xyz, fps_idx
        else:
            return new_xyz, new_points

    def sample_and_group_all(xyz, points):
        device = xyz.device
        B, N, C = xyz.shape
        new_xyz = torch.zeros(B, 1, C).to(device)
        grouped_xyz = xyz.view(B, 1, N, C)
        if points is not None:
            new_points = torch.cat([grouped_xyz, points.view(B, 1, N, -1)], dim=-1)
        else:
            new_points = grouped_xyz
        return new_xyz, new_points

    class PointNetSetAbstraction(nn.Module):
        def __init__(self, npoint, radius, nsample, in_channel, mlp, group_all):
            super(PointNetSetAbstraction, self).__init__()
            self.npoint = npoint
            self.radius = radius
            self.nsample = nsample
            self.mlp_convs = nn.ModuleList()
            self.mlp_bns = nn.ModuleList()
            last_channel = in_channel
            for out_channel in mlp:
                self.mlp_convs.append(nn.Conv2d(last_channel, out_channel, 1))
                self.mlp_bns.append(nn.BatchNorm2d(out_channel))
                last_channel = out_channel
            self.group_all = group_all

        def forward(self, xyz, points):
            xyz = xyz.permute(0, 2, 1)
            if points is not None:
                points = points.permute(0, 2, 1)

            if self.group_all:
                new_xyz, new_points = sample_and_group_all(xyz, points)
            else:
                new_xyz, new_points = sample_and_group(self.npoint, self.radius, self.nsample, xyz, points)
            # new_xyz: sampled points position data, [B, npoint, C]
            # new_points: sampled points data, [B, npoint, nsample, C+D]
            new_points = new_points.permute(0, 3, 2, 1) # [B, C+D, nsample,npoint]
            for i, conv in enumerate(self.mlp_convs):
                bn = self.mlp_bns[i]
                new_points =  F.relu(bn(conv(new_points)))

            new_points = torch.max(new_points, 2)[0]
            new_xyz = new_xyz.permute(0, 2, 1)
            return new_xyz, new_points

    class PointNetFeaturePropagation(nn.Module):
        def __init__(self, in_channel, mlp):
            super(PointNetFeaturePropagation, self).__init__()
            self.mlp_convs = nn.ModuleList()
            self.mlp_bns = nn.ModuleList()
            last_channel = in_channel
            for out_channel in mlp:
                self.mlp_convs.append(nn.Conv1d(last_channel, out_channel, 1))
                self.mlp_bns.append(nn.BatchNorm1d(out_channel))
                last_channel = out_channel

        def forward(self, xyz1, xyz2, points1, points2):
            xyz1 = xyz1.permute(0, 2, 1)
            xyz2 = xyz2.permute(0, 2, 1)

            points2 = points2.permute(0, 2, 1)
            B, N, C = xyz1.shape
            _, S, _ = xyz2.shape

            if S == 1:
                interpolated_points = points2.repeat(1, N, 1)
            else:
                dists = square_distance(xyz1, xyz2)
                dists, idx = dists.sort(dim=-1)
                dists, idx = dists[:, :, :3], idx[:, :, :3]  # [B, N, 3]

                dist_recip = 1.0 / (dists + 1e-8)
                norm = torch.sum(dist_recip, dim=2, keepdim=True)
                weight = dist_recip / norm
                interpolated_points = torch.sum(index_points(points2, idx) * weight.view(B, N, 3, 1), dim=2)

            if points1 is not None:
                points1 = points1.permute(0, 2, 1)
                new_points = torch.cat([points1, interpolated_points], dim=-1)
            else:
                new_points = interpolated_points

            new_points = new_points.permute(0, 2, 1)
            for i, conv in enumerate(self.mlp_convs):
                bn = self.mlp_bns[i]
                new_points = F.relu(bn(conv(new_points)))
            return new_points

    class get_model(nn.Module):
        def __init__(self, num_classes):
            super(get_model, self).__init__()
            # scaled down: the first two of the program's four levels (1024 and 256 centroids of
            # 32 neighbours, widths 8 times these; sa3/sa4 and fp4/fp3 left out for the time limit)
            self.sa1 = PointNetSetAbstraction(32, 0.2, 8, 9 + 3, [8, 8, 16], False)
            self.sa2 = PointNetSetAbstraction(8, 0.5, 8, 16 + 3, [16, 16, 32], False)
            self.fp2 = PointNetFeaturePropagation(48, [32, 32])
            self.fp1 = PointNetFeaturePropagation(32, [32, 32, 32])
            self.conv1 = nn.Conv1d(32, 32, 1)
            self.bn1 = nn.BatchNorm1d(32)
            self.drop1 = nn.Dropout(0.5)
            self.conv2 = nn.Conv1d(32, num_classes, 1)

        def forward(self, xyz):
            l0_points = xyz
            l0_xyz = xyz[:,:3,:]

            l1_xyz, l1_points = self.sa1(l0_xyz, l0_points)
            l2_xyz, l2_points = self.sa2(l1_xyz, l1_points)
            l4_points = l2_points   # (sa3, sa4, fp4, fp3 left out)

            l1_points = self.fp2(l1_xyz, l2_xyz, l1_points, l2_points)
            l0_points = self.fp1(l0_xyz, l1_xyz, None, l1_points)

            x = self.drop1(F.relu(self.bn1(self.conv1(l0_points))))
            x = self.conv2(x)
            x = F.log_softmax(x, dim=1)
            x = x.permute(0, 2, 1)
            return x, l4_points

    class get_loss(nn.Module):
        def __init__(self):
            super(get_loss, self).__init__()
        def forward(self, pred, target, trans_feat, weight):
            total_loss = F.nll_loss(pred, target, weight=weight)

            return total_loss

    return get_model, get_loss


def _rotate_point_cloud_z(batch_data):
    """provider.py's ``rotate_point_cloud_z`` (numpy only)."""
    rotated_data = np.zeros(batch_data.shape, dtype=np.float32)
    for k in range(batch_data.shape[0]):
        rotation_angle = np.random.uniform() * 2 * np.pi
        cosval = np.cos(rotation_angle)
        sinval = np.sin(rotation_angle)
        rotation_matrix = np.array([[cosval, sinval, 0],
                                    [-sinval, cosval, 0],
                                    [0, 0, 1]])
        shape_pc = batch_data[k, ...]
        rotated_data[k, ...] = np.dot(shape_pc.reshape((-1, 3)), rotation_matrix)
    return rotated_data


def _scenes(n, num_point, num_classes, seed):
    """Seeded 9-channel blocks (xyz in the unit cube, rgb, normalised xyz) and per-point labels,
    in place of S3DIS's chopped rooms."""
    rs = np.random.RandomState(seed)
    xyz = rs.uniform(0, 1, (n, num_point, 3))
    rgb = rs.uniform(0, 1, (n, num_point, 3))
    pts = np.concatenate([xyz, rgb, xyz - 0.5], -1).astype(np.float32)
    labels = (np.floor(xyz[:, :, 2] * num_classes) % num_classes).astype(np.int64)
    return pts, labels


# ---- train_semseg.py: one epoch of main() with one training and one evaluation batch --------------
def test_pointnet2_semantic_segmentation():
    def program(torch, log):
        T = _SeededRandint(torch, 0)
        get_model, get_loss = _pointnet2_classes(T)
        np.random.seed(0)

        def log_string(str):
            print(str)

        def inplace_relu(m):
            classname = m.__class__.__name__
            if classname.find('ReLU') != -1:
                m.inplace=True

        classes = ['ceiling', 'floor', 'wall', 'beam', 'column', 'window', 'door', 'table', 'chair', 'sofa', 'bookcase',
                   'board', 'clutter']
        class2label = {cls: i for i, cls in enumerate(classes)}
        seg_classes = class2label
        seg_label_to_cat = {}
        for i, cat in enumerate(seg_classes.keys()):
            seg_label_to_cat[i] = cat

        NUM_CLASSES = 13
        NUM_POINT = 64
        BATCH_SIZE = 2
        train_pts, train_lab = _scenes(2, NUM_POINT, NUM_CLASSES, 1)
        test_pts, test_lab = _scenes(2, NUM_POINT, NUM_CLASSES, 2)
        trainDataLoader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.from_numpy(train_pts), torch.from_numpy(train_lab)),
            batch_size=BATCH_SIZE, shuffle=False, drop_last=True)
        testDataLoader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.from_numpy(test_pts), torch.from_numpy(test_lab)),
            batch_size=BATCH_SIZE, shuffle=False, drop_last=True)
        labelweights = np.random.RandomState(3).uniform(0.5, 1.5, NUM_CLASSES)
        weights = torch.Tensor(labelweights)

        classifier = get_model(NUM_CLASSES)
        criterion = get_loss()
        classifier.apply(inplace_relu)

        def weights_init(m):
            classname = m.__class__.__name__
            if classname.find('Conv2d') != -1:
                torch.nn.init.xavier_normal_(m.weight.data)
                torch.nn.init.constant_(m.bias.data, 0.0)
            elif classname.find('Linear') != -1:
                torch.nn.init.xavier_normal_(m.weight.data)
                torch.nn.init.constant_(m.bias.data, 0.0)

        start_epoch = 0
        classifier = classifier.apply(weights_init)
        log("sa1 conv bias after weights_init", classifier.sa1.mlp_convs[0].bias)
        init_params(torch, classifier, 5, scale=0.2)
        classifier.drop1.p = 0.0

        optimizer_name = 'SGD'    # args.optimizer: its other branch
        if optimizer_name == 'Adam':
            optimizer = torch.optim.Adam(
                classifier.parameters(),
                lr=0.001,
                betas=(0.9, 0.999),
                eps=1e-08,
                weight_decay=1e-4
            )
        else:
            optimizer = torch.optim.SGD(classifier.parameters(), lr=0.001, momentum=0.9)

        def bn_momentum_adjust(m, momentum):
            if isinstance(m, torch.nn.BatchNorm2d) or isinstance(m, torch.nn.BatchNorm1d):
                m.momentum = momentum

        LEARNING_RATE_CLIP = 1e-5
        MOMENTUM_ORIGINAL = 0.1
        MOMENTUM_DECCAY = 0.5
        MOMENTUM_DECCAY_STEP = 10
        learning_rate, lr_decay, step_size = 0.001, 0.7, 10

        global_epoch = 0
        best_iou = 0

        for epoch in range(start_epoch, 1):
            '''Train on chopped scenes'''
            log_string('**** Epoch %d (%d/%s) ****' % (global_epoch + 1, epoch + 1, 1))
            lr = max(learning_rate * (lr_decay ** (epoch // step_size)), LEARNING_RATE_CLIP)
            log_string('Learning rate:%f' % lr)
            for param_group in optimizer.param_groups:
                param_group['lr'] = lr
            momentum = MOMENTUM_ORIGINAL * (MOMENTUM_DECCAY ** (epoch // MOMENTUM_DECCAY_STEP))
            if momentum < 0.01:
                momentum = 0.01
            print('BN momentum updated to: %f' % momentum)
            classifier = classifier.apply(lambda x: bn_momentum_adjust(x, momentum))
            num_batches = len(trainDataLoader)
            total_correct = 0
            total_seen = 0
            loss_sum = 0
            classifier = classifier.train()

            for i, (points, target) in enumerate(trainDataLoader):
                optimizer.zero_grad()

                points = points.data.numpy()
                points[:, :, :3] = _rotate_point_cloud_z(points[:, :, :3])
                points = torch.Tensor(points)
                points, target = points.float(), target.long()
                points = points.transpose(2, 1)

                seg_pred, trans_feat = classifier(points)
                log("seg_pred", seg_pred)
                log("l4_points", trans_feat)
                seg_pred = seg_pred.contiguous().view(-1, NUM_CLASSES)

                batch_label = target.view(-1, 1)[:, 0].cpu().data.numpy()
                target = target.view(-1, 1)[:, 0]
                loss = criterion(seg_pred, target, trans_feat, weights)
                loss.backward()
                log("loss", loss)
                log("sa1 conv0 grad", classifier.sa1.mlp_convs[0].weight.grad)
                log("conv2 grad", classifier.conv2.weight.grad)
                optimizer.step()

                pred_choice = seg_pred.cpu().data.max(1)[1].numpy()
                correct = np.sum(pred_choice == batch_label)
                total_correct += correct
                total_seen += (BATCH_SIZE * NUM_POINT)
                loss_sum += loss
            log_string('Training mean loss: %f' % (loss_sum / num_batches))
            log_string('Training accuracy: %f' % (total_correct / float(total_seen)))
            log("sa2 running_mean", classifier.sa2.mlp_bns[2].running_mean)

            '''Evaluate on chopped scenes'''
            with torch.no_grad():
                num_batches = len(testDataLoader)
                total_correct = 0
                total_seen = 0
                loss_sum = 0
                labelweights = np.zeros(NUM_CLASSES)
                total_seen_class = [0 for _ in range(NUM_CLASSES)]
                total_correct_class = [0 for _ in range(NUM_CLASSES)]
                total_iou_deno_class = [0 for _ in range(NUM_CLASSES)]
                classifier = classifier.eval()

                log_string('---- EPOCH %03d EVALUATION ----' % (global_epoch + 1))
                for i, (points, target) in enumerate(testDataLoader):
                    points = points.data.numpy()
                    points = torch.Tensor(points)
                    points, target = points.float(), target.long()
                    points = points.transpose(2, 1)

                    seg_pred, trans_feat = classifier(points)
                    pred_val = seg_pred.contiguous().cpu().data.numpy()
                    seg_pred = seg_pred.contiguous().view(-1, NUM_CLASSES)

                    batch_label = target.cpu().data.numpy()
                    target = target.view(-1, 1)[:, 0]
                    loss = criterion(seg_pred, target, trans_feat, weights)
                    loss_sum += loss
                    log("eval seg_pred", seg_pred)
                    pred_val = np.argmax(pred_val, 2)
                    correct = np.sum((pred_val == batch_label))
                    total_correct += correct
                    total_seen += (BATCH_SIZE * NUM_POINT)
                    tmp, _ = np.histogram(batch_label, range(NUM_CLASSES + 1))
                    labelweights += tmp

                    for l in range(NUM_CLASSES):
                        total_seen_class[l] += np.sum((batch_label == l))
                        total_correct_class[l] += np.sum((pred_val == l) & (batch_label == l))
                        total_iou_deno_class[l] += np.sum(((pred_val == l) | (batch_label == l)))

                labelweights = labelweights.astype(np.float32) / np.sum(labelweights.astype(np.float32))
                mIoU = np.mean(np.array(total_correct_class) / (np.array(total_iou_deno_class, dtype=np.float64) + 1e-6))
                log_string('eval mean loss: %f' % (loss_sum / float(num_batches)))
                log_string('eval point avg class IoU: %f' % (mIoU))
                log_string('eval point accuracy: %f' % (total_correct / float(total_seen)))
                log_string('eval point avg class acc: %f' % (
                    np.mean(np.array(total_correct_class) / (np.array(total_seen_class, dtype=np.float64) + 1e-6))))

                iou_per_class_str = '------- IoU --------\n'
                for l in range(NUM_CLASSES):
                    iou_per_class_str += 'class %s weight: %.3f, IoU: %.3f \n' % (
                        seg_label_to_cat[l] + ' ' * (14 - len(seg_label_to_cat[l])), labelweights[l - 1],
                        total_correct_class[l] / float(total_iou_deno_class[l]))

                log_string(iou_per_class_str)
                log_string('Eval mean loss: %f' % (loss_sum / num_batches))
                log_string('Eval accuracy: %f' % (total_correct / float(total_seen)))
            global_epoch += 1

    run_both(program)
