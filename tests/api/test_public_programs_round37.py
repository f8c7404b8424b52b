"""A thirty-seventh round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from a repository
no earlier round used, yanx27/Pointnet_Pointnet2_pytorch:

- ``models/pointnet_utils.py`` (at 40ab12b), ``models/pointnet_cls.py`` (at 00d88de),
  ``provider.py`` and ``train_classification.py`` (at bfd5b39): a PointNet classifier with its
  input and 64-d feature T-nets (``STN3d``/``STNkd``: 1x1 ``Conv1d``s, ``torch.max(x, 2,
  keepdim=True)[0]`` over the points, an identity added from ``Variable(torch.from_numpy(...))
  .view(1, 9).repeat(batchsize, 1)``, ``bmm`` by the predicted transforms), the
  ``feature_transform_reguliarzer`` (``torch.norm(..., dim=(1, 2))`` of ``trans @ trans^T - I``
  with ``I = torch.eye(d)[None, :, :]``), the ``get_loss`` nll plus regulariser, the CORAL loss
  (``torch.ones(n).resize(1, n)``, ``torch.mm``/``torch.div``/``torch.add``) and the MMD loss's
  ``guassian_kernel`` (a bandwidth summed from ``L2_distance.data`` and divided in place); the
  training loop of ``train_classification.py`` (numpy augmentation of ``points.data.numpy()``
  back through ``torch.Tensor(points)``, its SGD-with-momentum branch, ``StepLR``,
  ``pred.data.max(1)[1].eq(...).cpu().sum()``) and its ``test`` (per-class accuracy from
  ``np.unique(target.cpu())`` and boolean masks ``target == cat`` with a numpy integer ``cat``).

The PointNet++ semantic-segmentation program of the same repository is in
``test_public_programs_round37_pn2.py``, and dome272/Diffusion-Models-pytorch's conditional DDPM
(a noise schedule, sinusoidal time embeddings, classifier-free-guidance sampling, an EMA model)
in ``test_public_programs_round37_ddpm.py`` (one file each for the time a file may take); the
PointNet++ training step runs under ``tracegrad.compile`` in
``tests/compile/test_public_patterns_round37.py``.

Changes to the programs, the same on both sides: parameters are overwritten from numpy after
construction, dropout probabilities are 0, ``.cuda()`` calls are left out (CPU), sizes are tiny
(4 clouds of 16 points, 4 classes), ``tqdm`` bars and the file logger are left out
(``log_string`` prints), and the data are seeded numpy point clouds in place of ModelNet40. The
MMD loss's ``forward`` reads ``self.alpha``, which its ``__init__`` never sets: the
``AttributeError`` is logged on both sides and the kernel is called directly.
"""
import numpy as np
import pytest
from parity import init_params, log_outcome, run_both

torch = pytest.importorskip("torch")


# ---- yanx27/Pointnet_Pointnet2_pytorch: models/pointnet_utils.py, models/pointnet_cls.py -------
def _pointnet_classes(torch):
    nn, F = torch.nn, torch.nn.functional
    Variable = torch.autograd.Variable

    class STN3d(nn.Module):
        def __init__(self, channel):
            super(STN3d, self).__init__()
            self.conv1 = torch.nn.Conv1d(channel, 64, 1)
            self.conv2 = torch.nn.Conv1d(64, 128, 1)
            self.conv3 = torch.nn.Conv1d(128, 1024, 1)
            self.fc1 = nn.Linear(1024, 512)
            self.fc2 = nn.Linear(512, 256)
            self.fc3 = nn.Linear(256, 9)
            self.relu = nn.ReLU()

            self.bn1 = nn.BatchNorm1d(64)
            self.bn2 = nn.BatchNorm1d(128)
            self.bn3 = nn.BatchNorm1d(1024)
            self.bn4 = nn.BatchNorm1d(512)
            self.bn5 = nn.BatchNorm1d(256)

        def forward(self, x):
            batchsize = x.size()[0]
            x = F.relu(self.bn1(self.conv1(x)))
            x = F.relu(self.bn2(self.conv2(x)))
            x = F.relu(self.bn3(self.conv3(x)))
            x = torch.max(x, 2, keepdim=True)[0]
            x = x.view(-1, 1024)

            x = F.relu(self.bn4(self.fc1(x)))
            x = F.relu(self.bn5(self.fc2(x)))
            x = self.fc3(x)

            iden = Variable(torch.from_numpy(np.array([1, 0, 0, 0, 1, 0, 0, 0, 1]).astype(np.float32))).view(1, 9).repeat(
                batchsize, 1)
            if x.is_cuda:
                iden = iden.cuda()
            x = x + iden
            x = x.view(-1, 3, 3)
            return x

    class STNkd(nn.Module):
        def __init__(self, k=64):
            super(STNkd, self).__init__()
            self.conv1 = torch.nn.Conv1d(k, 64, 1)
            self.conv2 = torch.nn.Conv1d(64, 128, 1)
            self.conv3 = torch.nn.Conv1d(128, 1024, 1)
            self.fc1 = nn.Linear(1024, 512)
            self.fc2 = nn.Linear(512, 256)
            self.fc3 = nn.Linear(256, k * k)
            self.relu = nn.ReLU()

            self.bn1 = nn.BatchNorm1d(64)
            self.bn2 = nn.BatchNorm1d(128)
            self.bn3 = nn.BatchNorm1d(1024)
            self.bn4 = nn.BatchNorm1d(512)
            self.bn5 = nn.BatchNorm1d(256)

            self.k = k

        def forward(self, x):
            batchsize = x.size()[0]
            x = F.relu(self.bn1(self.conv1(x)))
            x = F.relu(self.bn2(self.conv2(x)))
            x = F.relu(self.bn3(self.conv3(x)))
            x = torch.max(x, 2, keepdim=True)[0]
            x = x.view(-1, 1024)

            x = F.relu(self.bn4(self.fc1(x)))
            x = F.relu(self.bn5(self.fc2(x)))
            x = self.fc3(x)

            iden = Variable(torch.from_numpy(np.eye(self.k).flatten().astype(np.float32))).view(1, self.k * self.k).repeat(
                batchsize, 1)
            if x.is_cuda:
                iden = iden.cuda()
            x = x + iden
            x = x.view(-1, self.k, self.k)
            return x

    class PointNetEncoder(nn.Module):
        def __init__(self, global_feat=True, feature_transform=False, channel=3):
            super(PointNetEncoder, self).__init__()
            self.stn = STN3d(channel)
            self.conv1 = torch.nn.Conv1d(channel, 64, 1)
            self.conv2 = torch.nn.Conv1d(64, 128, 1)
            self.conv3 = torch.nn.Conv1d(128, 1024, 1)
            self.bn1 = nn.BatchNorm1d(64)
            self.bn2 = nn.BatchNorm1d(128)
            self.bn3 = nn.BatchNorm1d(1024)
            self.global_feat = global_feat
            self.feature_transform = feature_transform
            if self.feature_transform:
                self.fstn = STNkd(k=64)

        def forward(self, x):
            B, D, N = x.size()
            trans = self.stn(x)
            x = x.transpose(2, 1)
            if D > 3:
                feature = x[:, :, 3:]
                x = x[:, :, :3]
            x = torch.bmm(x, trans)
            if D > 3:
                x = torch.cat([x, feature], dim=2)
            x = x.transpose(2, 1)
            x = F.relu(self.bn1(self.conv1(x)))

            if self.feature_transform:
                trans_feat = self.fstn(x)
                x = x.transpose(2, 1)
                x = torch.bmm(x, trans_feat)
                x = x.transpose(2, 1)
            else:
                trans_feat = None

            pointfeat = x
            x = F.relu(self.bn2(self.conv2(x)))
            x = self.bn3(self.conv3(x))
            x = torch.max(x, 2, keepdim=True)[0]
            x = x.view(-1, 1024)
            if self.global_feat:
                return x, trans, trans_feat
            else:
                x = x.view(-1, 1024, 1).repeat(1, 1, N)
                return torch.cat([x, pointfeat], 1), trans, trans_feat

    def feature_transform_reguliarzer(trans):
        d = trans.size()[1]
        I = torch.eye(d)[None, :, :]
        if trans.is_cuda:
            I = I.cuda()
        loss = torch.mean(torch.norm(torch.bmm(trans, trans.transpose(2, 1) - I), dim=(1, 2)))
        return loss

    def coral(source, target):

        d = source.size(1)  # dim vector

        source_c = compute_covariance(source)
        target_c = compute_covariance(target)

        loss = torch.sum(torch.mul((source_c - target_c), (source_c - target_c)))

        loss = loss / (4 * d * d)
        return loss

    def compute_covariance(input_data):
        """
        Compute Covariance matrix of the input data
        """
        n = input_data.size(0)  # batch_size

        # Check if using gpu or cpu
        if input_data.is_cuda:
            device = torch.device('cuda')
        else:
            device = torch.device('cpu')

        id_row = torch.ones(n).resize(1, n).to(device=device)
        sum_column = torch.mm(id_row, input_data)
        mean_column = torch.div(sum_column, n)
        term_mul_2 = torch.mm(mean_column.t(), mean_column)
        d_t_d = torch.mm(input_data.t(), input_data)
        c = torch.add(d_t_d, (-1 * term_mul_2)) * 1 / (n - 1)
        return c

    class get_model(nn.Module):
        def __init__(self, k=40, normal_channel=True):
            super(get_model, self).__init__()
            if normal_channel:
                channel = 6
            else:
                channel = 3
            self.feat = PointNetEncoder(global_feat=True, feature_transform=True, channel=channel)
            self.fc1 = nn.Linear(1024, 512)
            self.fc2 = nn.Linear(512, 256)
            self.fc3 = nn.Linear(256, k)
            self.dropout = nn.Dropout(p=0.4)
            self.bn1 = nn.BatchNorm1d(512)
            self.bn2 = nn.BatchNorm1d(256)
            self.relu = nn.ReLU()

        def forward(self, x):
            x, trans, trans_feat = self.feat(x)
            x = F.relu(self.bn1(self.fc1(x)))
            x = F.relu(self.bn2(self.dropout(self.fc2(x))))
            x = self.fc3(x)
            x = F.log_softmax(x, dim=1)
            return x, trans_feat

    class get_loss(torch.nn.Module):
        def __init__(self, mat_diff_loss_scale=0.001):
            super(get_loss, self).__init__()
            self.mat_diff_loss_scale = mat_diff_loss_scale

        def forward(self, pred, target, trans_feat):
            loss = F.nll_loss(pred, target)
            mat_diff_loss = feature_transform_reguliarzer(trans_feat)
            total_loss = loss + mat_diff_loss * self.mat_diff_loss_scale
            return total_loss

    class get_coral_loss(torch.nn.Module):
        def __init__(self, DA_alpha=0.1, DA_lamda=0.5, mat_diff_loss_scale=0.001):
            super(get_coral_loss, self).__init__()
            self.mat_diff_loss_scale = mat_diff_loss_scale
            self.DA_lamda = DA_lamda
            self.DA_alpha = DA_alpha

        def forward(self, pred, target, trans_feat, feature_dense, feature_sparse):
            loss = F.nll_loss(pred, target)
            mat_diff_loss = feature_transform_reguliarzer(trans_feat)
            coral_loss = coral(feature_dense, feature_sparse)
            total_loss = self.alpha * loss + mat_diff_loss * self.mat_diff_loss_scale + self.DA_lamda * coral_loss
            return total_loss

    class get_mmd_loss(torch.nn.Module):
        def __init__(self, DA_alpha=0.1, DA_lamda=0.5, mat_diff_loss_scale=0.001, kernel_mul = 2.0, kernel_num = 5):
            super(get_mmd_loss, self).__init__()
            self.DA_lamda = DA_lamda
            self.DA_alpha = DA_alpha
            self.mat_diff_loss_scale = mat_diff_loss_scale
            self.kernel_num = kernel_num
            self.kernel_mul = kernel_mul
            self.fix_sigma = None

        def guassian_kernel(self, source, target, kernel_mul=2.0, kernel_num=5, fix_sigma=None):
            n_samples = int(source.size()[0])+int(target.size()[0])
            total = torch.cat([source, target], dim=0)
            total0 = total.unsqueeze(0).expand(int(total.size(0)), int(total.size(0)), int(total.size(1)))
            total1 = total.unsqueeze(1).expand(int(total.size(0)), int(total.size(0)), int(total.size(1)))
            L2_distance = ((total0-total1)**2).sum(2)
            if fix_sigma:
                bandwidth = fix_sigma
            else:
                bandwidth = torch.sum(L2_distance.data) / (n_samples**2-n_samples)

            bandwidth /= kernel_mul ** (kernel_num // 2)
            bandwidth_list = [bandwidth * (kernel_mul**i) for i in range(kernel_num)]
            kernel_val = [torch.exp(-L2_distance / bandwidth_temp) for bandwidth_temp in bandwidth_list]
            return sum(kernel_val)

        def forward(self, pred, target, trans_feat, feature_dense, feature_sparse):
            loss = F.nll_loss(pred, target)
            mat_diff_loss = feature_transform_reguliarzer(trans_feat)
            batch_size = int(pred.size()[0])
            kernels = self.guassian_kernel(feature_dense, feature_sparse, kernel_mul=self.kernel_mul,
                                      kernel_num=self.kernel_num, fix_sigma=self.fix_sigma)

            XX = torch.mean(kernels[:batch_size, :batch_size])
            YY = torch.mean(kernels[batch_size:, batch_size:])
            XY = torch.mean(kernels[:batch_size, batch_size:])
            YX = torch.mean(kernels[batch_size:, :batch_size])
            mmd_loss = torch.mean(XX + YY - XY -YX)
            total_loss =self.alpha * loss + mat_diff_loss * self.mat_diff_loss_scale + self.DA_lamda * mmd_loss
            return total_loss

    return get_model, get_loss, get_coral_loss, get_mmd_loss, coral


# ---- provider.py (numpy only; the three augmentations train_classification.py uses) -------------
def shift_point_cloud(batch_data, shift_range=0.1):
    B, N, C = batch_data.shape
    shifts = np.random.uniform(-shift_range, shift_range, (B,3))
    for batch_index in range(B):
        batch_data[batch_index,:,:] += shifts[batch_index,:]
    return batch_data


def random_scale_point_cloud(batch_data, scale_low=0.8, scale_high=1.25):
    B, N, C = batch_data.shape
    scales = np.random.uniform(scale_low, scale_high, B)
    for batch_index in range(B):
        batch_data[batch_index,:,:] *= scales[batch_index]
    return batch_data


def random_point_dropout(batch_pc, max_dropout_ratio=0.875):
    ''' batch_pc: BxNx3 '''
    for b in range(batch_pc.shape[0]):
        dropout_ratio =  np.random.random()*max_dropout_ratio # 0~0.875
        drop_idx = np.where(np.random.random((batch_pc.shape[1]))<=dropout_ratio)[0]
        if len(drop_idx)>0:
            batch_pc[b,drop_idx,:] = batch_pc[b,0,:] # set to the first point
    return batch_pc


def _clouds(n, num_point, seed):
    """Seeded point clouds of 4 kinds (a blob's centre moves with the label), in place of
    ModelNet40's resampled files."""
    rs = np.random.RandomState(seed)
    labels = np.arange(n) % 4
    pts = rs.normal(0, 0.3, (n, num_point, 3)).astype(np.float32)
    pts[:, :, 0] += (labels[:, None] - 1.5) * 0.4
    return pts, labels.astype(np.int64)


# ---- train_classification.py: test() and the training loop of main() ----------------------------
def test_pointnet_classification():
    def program(torch, log):
        get_model, get_loss, get_coral_loss, get_mmd_loss, coral = _pointnet_classes(torch)
        np.random.seed(0)   # provider's augmentations draw from numpy's global stream

        def log_string(str):
            print(str)

        class Args:
            use_cpu = True
        args = Args()

        def test(model, loader, num_class=40):
            mean_correct = []
            class_acc = np.zeros((num_class, 3))
            classifier = model.eval()

            for j, (points, target) in enumerate(loader):

                if not args.use_cpu:
                    points, target = points.cuda(), target.cuda()

                points = points.transpose(2, 1)
                pred, _ = classifier(points)
                pred_choice = pred.data.max(1)[1]

                for cat in np.unique(target.cpu()):
                    classacc = pred_choice[target == cat].eq(target[target == cat].long().data).cpu().sum()
                    class_acc[cat, 0] += classacc.item() / float(points[target == cat].size()[0])
                    class_acc[cat, 1] += 1

                correct = pred_choice.eq(target.long().data).cpu().sum()
                mean_correct.append(correct.item() / float(points.size()[0]))

            class_acc[:, 2] = class_acc[:, 0] / class_acc[:, 1]
            class_acc = np.mean(class_acc[:, 2])
            instance_acc = np.mean(mean_correct)

            return instance_acc, class_acc

        train_pts, train_lab = _clouds(4, 16, 1)
        test_pts, test_lab = _clouds(4, 16, 2)
        train_dataset = torch.utils.data.TensorDataset(torch.from_numpy(train_pts), torch.from_numpy(train_lab))
        test_dataset = torch.utils.data.TensorDataset(torch.from_numpy(test_pts), torch.from_numpy(test_lab))
        trainDataLoader = torch.utils.data.DataLoader(train_dataset, batch_size=4, shuffle=False)
        testDataLoader = torch.utils.data.DataLoader(test_dataset, batch_size=4, shuffle=False)

        num_class = 4
        classifier = get_model(num_class, normal_channel=False)
        init_params(torch, classifier, 3, scale=0.05)
        classifier.dropout.p = 0.0
        criterion = get_loss()
        optimizer_name = 'SGD'    # args.optimizer: its other branch (a cold fused Adam step over
        # this model's ~90 tensors compiles for seconds; AdamW runs in the DDPM file)
        if optimizer_name == 'Adam':
            optimizer = torch.optim.Adam(
                classifier.parameters(),
                lr=0.001,
                betas=(0.9, 0.999),
                eps=1e-08,
                weight_decay=1e-4
            )
        else:
            optimizer = torch.optim.SGD(classifier.parameters(), lr=0.01, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.7)
        global_epoch = 0
        global_step = 0
        best_instance_acc = 0.0
        best_class_acc = 0.0

        for epoch in range(0, 1):
            log_string('Epoch %d (%d/%s):' % (global_epoch + 1, epoch + 1, 1))
            mean_correct = []
            classifier = classifier.train()

            scheduler.step()
            for batch_id, (points, target) in enumerate(trainDataLoader, 0):
                optimizer.zero_grad()

                points = points.data.numpy()
                points = random_point_dropout(points)
                points[:, :, 0:3] = random_scale_point_cloud(points[:, :, 0:3])
                points[:, :, 0:3] = shift_point_cloud(points[:, :, 0:3])
                points = torch.Tensor(points)
                points = points.transpose(2, 1)

                pred, trans_feat = classifier(points)
                loss = criterion(pred, target.long(), trans_feat)
                pred_choice = pred.data.max(1)[1]
                log("pred", pred)
                log("trans_feat", trans_feat)
                log("loss", loss)

                correct = pred_choice.eq(target.long().data).cpu().sum()
                mean_correct.append(correct.item() / float(points.size()[0]))
                loss.backward()
                log("fstn.fc3.grad", classifier.feat.fstn.fc3.bias.grad)
                optimizer.step()
                global_step += 1

            train_instance_acc = np.mean(mean_correct)
            log_string('Train Instance Accuracy: %f' % train_instance_acc)
            log("lr", scheduler.get_last_lr())
            log("running_var", classifier.feat.bn3.running_var)

            with torch.no_grad():
                instance_acc, class_acc = test(classifier.eval(), testDataLoader, num_class=num_class)
                log_string('Test Instance Accuracy: %f, Class Accuracy: %f' % (instance_acc, class_acc))

        # the domain-adaptation losses of pointnet_cls.py on the encoder's global features
        classifier.train()
        pts = torch.from_numpy(train_pts).transpose(2, 1)
        feats, _, trans_feat = classifier.feat(pts)
        dense, sparse = feats[:2], feats[2:]
        log("coral", coral(dense, sparse))
        pred, trans_feat = classifier(pts)
        target = torch.from_numpy(train_lab)
        mmd = get_mmd_loss()
        log_outcome(log, "mmd forward", lambda: mmd(pred, target, trans_feat, dense, sparse))
        log_outcome(log, "coral forward", lambda: get_coral_loss()(pred, target, trans_feat, dense, sparse))
        kernels = mmd.guassian_kernel(dense, sparse, kernel_mul=mmd.kernel_mul, kernel_num=mmd.kernel_num)
        log("kernels", kernels)
        batch_size = 2
        XX = torch.mean(kernels[:batch_size, :batch_size])
        YY = torch.mean(kernels[batch_size:, batch_size:])
        XY = torch.mean(kernels[:batch_size, batch_size:])
        YX = torch.mean(kernels[batch_size:, :batch_size])
        mmd_loss = torch.mean(XX + YY - XY - YX)
        mmd_loss.backward()
        log("mmd", mmd_loss)
        log("conv3.grad", classifier.feat.conv3.bias.grad)

    # rtol 1e-4: the T-nets' BatchNorm1d layers normalise batches of 4 whose variances are about
    # 1e-6 (under eps 1e-5), amplifying float32 rounding of the 1024-wide convs (~1e2 times; in
    # float64 the two libraries agree to 1e-14 on the same model)
    run_both(program, rtol=1e-4, atol=1e-5)
