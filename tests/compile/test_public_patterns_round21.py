"""Round-20 public programs (``tests/api/test_public_programs_round20.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager (and == torch where the step draws no random numbers) with the harness (tiny
sizes, numpy data):

- HobbitLong/SupContrast: the SupCon step (two views through an MLP + ``F.normalize`` head,
  ``torch.split``/``cat`` of the views, ``SupConLoss``'s ``torch.eq(labels, labels.T)`` mask and
  ``torch.scatter`` self-contrast mask, SGD with momentum): one trace, no break;
- caogang/wgan-gp gan_toy.py: the critic step with the gradient penalty, i.e.
  ``autograd.grad(..., create_graph=True)`` inside the compiled step, three ``backward(one)`` /
  ``backward(mone)`` calls accumulating into the critic's ``.grad`` and the program's own
  ``torch.rand`` interpolation weights (so compiled == eager only, the generator state
  included): one trace, no break;
- KaiyangZhou/deep-person-reid: the batch-hard triplet + label-smoothing step; the deprecated
  ``dist.addmm_(1, -2, x, x.t())`` traces (its warning is once per process, as torch's), but the
  ``dist[i][mask[i]]`` rows have data-dependent sizes, so the step breaks there (``nonzero()``),
  as torch.compile's does, and every call runs eagerly with torch's values.
"""
from ._harness import check_compiled, data, labels, np_init


# ---- HobbitLong/SupContrast losses.py (SupConLoss) + main_supcon.py train() ----------------------
def _supcon_loss(mod, features, labels, temperature=0.5, base_temperature=0.07):
    # SupConLoss.forward, contrast_mode='all', labels given (the other branches dropped)
    batch_size = features.shape[0]
    labels = labels.contiguous().view(-1, 1)
    if labels.shape[0] != batch_size:
        raise ValueError('Num of labels does not match num of features')
    mask = mod.eq(labels, labels.T).float()
    contrast_count = features.shape[1]
    contrast_feature = mod.cat(mod.unbind(features, dim=1), dim=0)
    anchor_feature = contrast_feature
    anchor_count = contrast_count
    anchor_dot_contrast = mod.div(mod.matmul(anchor_feature, contrast_feature.T), temperature)
    logits_max, _ = mod.max(anchor_dot_contrast, dim=1, keepdim=True)
    logits = anchor_dot_contrast - logits_max.detach()
    mask = mask.repeat(anchor_count, contrast_count)
    logits_mask = mod.scatter(mod.ones_like(mask), 1, mod.arange(batch_size * anchor_count).view(-1, 1), 0)
    mask = mask * logits_mask
    exp_logits = mod.exp(logits) * logits_mask
    log_prob = logits - mod.log(exp_logits.sum(1, keepdim=True) + 1e-9)
    mean_log_prob_pos = (mask * log_prob).sum(1) / mask.sum(1)
    loss = - (temperature / base_temperature) * mean_log_prob_pos
    return loss.view(anchor_count, batch_size).mean()


def test_supcon_two_view_step():
    def make(mod, wrap):
        nn, F = mod.nn, mod.nn.functional

        class SupConMLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True))
                self.head = nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True), nn.Linear(4, 3))

            def forward(self, x):
                return F.normalize(self.head(self.encoder(x)), dim=1)

        model = np_init(SupConMLP(), mod, seed=1, scale=0.5)
        optimizer = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)

        def step(view1, view2, labels):
            images = mod.cat([view1, view2], dim=0)
            bsz = labels.shape[0]
            features = model(images)
            f1, f2 = mod.split(features, [bsz, bsz], dim=0)
            features = mod.cat([f1.unsqueeze(1), f2.unsqueeze(1)], dim=1)
            loss = _supcon_loss(mod, features, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss

        return wrap(step), {"model": model, "opt": optimizer}, lambda i: (
            data(mod, i, 3, 4), data(mod, i, 3, 4, seed=300), labels(mod, i, 3, 2))

    run = check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1, run.step.stats


# ---- caogang/wgan-gp gan_toy.py (Discriminator, calc_gradient_penalty, the critic update) --------
def test_wgan_gp_critic_step_create_graph():
    BATCH_SIZE, DIM, LAMBDA = 6, 4, .1

    def make(mod, wrap):
        nn, autograd = mod.nn, mod.autograd

        class Discriminator(nn.Module):
            def __init__(self):
                super().__init__()
                self.main = nn.Sequential(nn.Linear(2, DIM), nn.ReLU(True), nn.Linear(DIM, DIM), nn.ReLU(True),
                                          nn.Linear(DIM, 1))

            def forward(self, inputs):
                return self.main(inputs).view(-1)

        def calc_gradient_penalty(netD, real_data, fake_data):
            alpha = mod.rand(BATCH_SIZE, 1)
            alpha = alpha.expand(real_data.size())
            interpolates = alpha * real_data + ((1 - alpha) * fake_data)
            interpolates = autograd.Variable(interpolates, requires_grad=True)
            disc_interpolates = netD(interpolates)
            gradients = autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                                      grad_outputs=mod.ones(BATCH_SIZE),
                                      create_graph=True, only_inputs=True)[0]
            return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA

        netD = np_init(Discriminator(), mod, seed=3, scale=0.6)
        optimizerD = mod.optim.Adam(netD.parameters(), lr=1e-2, betas=(0.5, 0.9))
        one = mod.tensor(1, dtype=mod.float)
        mone = one * -1

        def step(real_data, fake):
            netD.zero_grad()
            D_real = netD(real_data).mean()
            D_real.backward(mone)
            D_fake = netD(fake).mean()
            D_fake.backward(one)
            gradient_penalty = calc_gradient_penalty(netD, real_data, fake)
            gradient_penalty.backward(one)
            optimizerD.step()
            return D_fake - D_real + gradient_penalty, D_real - D_fake

        return wrap(step), {"netD": netD, "opt": optimizerD}, lambda i: (
            data(mod, i, BATCH_SIZE, 2), data(mod, i, BATCH_SIZE, 2, seed=400))

    run = check_compiled(make, calls=3, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1, run.step.stats


# ---- KaiyangZhou/deep-person-reid torchreid/losses (TripletLoss, CrossEntropyLoss) ---------------
def test_reid_batch_hard_triplet_step_breaks_on_mask_rows():
    def make(mod, wrap):
        nn = mod.nn

        class TripletLoss(nn.Module):
            def __init__(self, margin=0.3):
                super().__init__()
                self.ranking_loss = nn.MarginRankingLoss(margin=margin)

            def forward(self, inputs, targets):
                n = inputs.size(0)
                dist = mod.pow(inputs, 2).sum(dim=1, keepdim=True).expand(n, n)
                dist = dist + dist.t()
                dist.addmm_(1, -2, inputs, inputs.t())
                dist = dist.clamp(min=1e-12).sqrt()
                mask = targets.expand(n, n).eq(targets.expand(n, n).t())
                dist_ap, dist_an = [], []
                for i in range(n):
                    dist_ap.append(dist[i][mask[i]].max().unsqueeze(0))
                    dist_an.append(dist[i][mask[i] == 0].min().unsqueeze(0))
                dist_ap = mod.cat(dist_ap)
                dist_an = mod.cat(dist_an)
                y = mod.ones_like(dist_an)
                return self.ranking_loss(dist_an, dist_ap, y)

        class CrossEntropyLoss(nn.Module):
            def __init__(self, num_classes, epsilon=0.1):
                super().__init__()
                self.num_classes, self.epsilon = num_classes, epsilon
                self.logsoftmax = nn.LogSoftmax(dim=1)

            def forward(self, inputs, targets):
                log_probs = self.logsoftmax(inputs)
                targets = mod.zeros(log_probs.size()).scatter_(1, targets.unsqueeze(1).data.cpu(), 1)
                targets = (1 - self.epsilon) * targets + self.epsilon / self.num_classes
                return (- targets * log_probs).mean(0).sum()

        feat = np_init(nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 3)), mod, seed=2, scale=0.5)
        classifier = np_init(nn.Linear(3, 3), mod, seed=5, scale=0.5)
        params = list(feat.parameters()) + list(classifier.parameters())
        optimizer = mod.optim.Adam(params, lr=0.01, weight_decay=5e-4)
        criterion_t, criterion_x = TripletLoss(), CrossEntropyLoss(3)
        pids = mod.tensor([0, 0, 1, 1, 2, 2])

        def step(x):
            f = feat(x)
            loss = criterion_x(classifier(f), pids) + criterion_t(f, pids)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss

        return wrap(step), {"feat": feat, "classifier": classifier, "opt": optimizer}, lambda i: (data(mod, i, 6, 4),)

    run = check_compiled(make, calls=2, torch_too=True, rtol=1e-4, atol=1e-5)
    breaks = run.step.stats["graph_breaks"]
    # the boolean-mask row read, not the deprecated addmm_ overload (it warns once per process,
    # as torch's, so tracing it is no break)
    assert len(breaks) == 1 and "nonzero()" in breaks[0][0], run.step.stats
    assert run.step.stats["eager_calls"] == 2 and run.step.stats["traces"] == 0, run.step.stats
