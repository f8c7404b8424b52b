"""Round 36's kuc2477/pytorch-wgan-gp program (``model.py``, ``train.py``, ``utils.py``), in its own
file for the time limit; the round's notes are in ``test_public_programs_round36.py``.
"""
import os
import tempfile

import numpy as np
import pytest
from parity import SeededTorch, init_params, run_both

torch = pytest.importorskip("torch")


# ---- kuc2477/pytorch-wgan-gp ------------------------------------------------------------------
def _wgan_classes(torch):
    nn, F, autograd, Variable = torch.nn, torch.nn.functional, torch.autograd, torch.autograd.Variable

    class Critic(nn.Module):
        def __init__(self, image_size, image_channel_size, channel_size):
            # configurations
            super().__init__()
            self.image_size = image_size
            self.image_channel_size = image_channel_size
            self.channel_size = channel_size

            # layers
            self.conv1 = nn.Conv2d(
                image_channel_size, channel_size,
                kernel_size=3, stride=2, padding=1
            )
            self.conv2 = nn.Conv2d(
                channel_size, channel_size*2,
                kernel_size=3, stride=2, padding=1
            )
            self.conv3 = nn.Conv2d(
                channel_size*2, channel_size*4,
                kernel_size=3, stride=2, padding=1
            )
            self.fc = nn.Linear((image_size//8)**2 * channel_size*4, 1)

        def forward(self, x):
            x = F.leaky_relu(self.conv1(x))
            x = F.leaky_relu(self.conv2(x))
            x = F.leaky_relu(self.conv3(x))
            x = x.view(-1, (self.image_size//8)**2 * self.channel_size*4)
            return self.fc(x)

    class Generator(nn.Module):
        def __init__(self, z_size, image_size, image_channel_size, channel_size):
            # configurations
            super().__init__()
            self.z_size = z_size
            self.image_size = image_size
            self.image_channel_size = image_channel_size
            self.channel_size = channel_size

            # layers
            self.fc = nn.Linear(z_size, (image_size//8)**2 * channel_size*8)
            self.bn0 = nn.BatchNorm2d(channel_size*8)
            self.bn1 = nn.BatchNorm2d(channel_size*4)
            self.deconv1 = nn.ConvTranspose2d(
                channel_size*8, channel_size*4,
                kernel_size=4, stride=2, padding=1
            )
            self.bn2 = nn.BatchNorm2d(channel_size*2)
            self.deconv2 = nn.ConvTranspose2d(
                channel_size*4, channel_size*2,
                kernel_size=4, stride=2, padding=1,
            )
            self.bn3 = nn.BatchNorm2d(channel_size)
            self.deconv3 = nn.ConvTranspose2d(
                channel_size*2, channel_size,
                kernel_size=4, stride=2, padding=1
            )
            self.deconv4 = nn.ConvTranspose2d(
                channel_size, image_channel_size,
                kernel_size=3, stride=1, padding=1,
            )

        def forward(self, z):
            g = F.relu(self.bn0(self.fc(z).view(
                z.size(0),
                self.channel_size*8,
                self.image_size//8,
                self.image_size//8,
            )))
            g = F.relu(self.bn1(self.deconv1(g)))
            g = F.relu(self.bn2(self.deconv2(g)))
            g = F.relu(self.bn3(self.deconv3(g)))
            g = self.deconv4(g)
            return F.tanh(g) if self.image_channel_size > 1 else F.sigmoid(g)

    class WGAN(nn.Module):
        def __init__(self, label, z_size,
                     image_size, image_channel_size,
                     c_channel_size, g_channel_size):
            # configurations
            super().__init__()
            self.label = label
            self.z_size = z_size
            self.image_size = image_size
            self.image_channel_size = image_channel_size
            self.c_channel_size = c_channel_size
            self.g_channel_size = g_channel_size

            # components
            self.critic = Critic(
                image_size=self.image_size,
                image_channel_size=self.image_channel_size,
                channel_size=self.c_channel_size,
            )
            self.generator = Generator(
                z_size=self.z_size,
                image_size=self.image_size,
                image_channel_size=self.image_channel_size,
                channel_size=self.g_channel_size,
            )

        @property
        def name(self):
            return (
                'WGAN-GP'
                '-z{z_size}'
                '-c{c_channel_size}'
                '-g{g_channel_size}'
                '-{label}-{image_size}x{image_size}x{image_channel_size}'
            ).format(
                z_size=self.z_size,
                c_channel_size=self.c_channel_size,
                g_channel_size=self.g_channel_size,
                label=self.label,
                image_size=self.image_size,
                image_channel_size=self.image_channel_size,
            )

        def c_loss(self, x, z, return_g=False):
            g = self.generator(z)
            c_x = self.critic(x).mean()
            c_g = self.critic(g).mean()
            l = -(c_x-c_g)
            return (l, g) if return_g else l

        def g_loss(self, z, return_g=False):
            g = self.generator(z)
            l = -self.critic(g).mean()
            return (l, g) if return_g else l

        def sample_image(self, size):
            return self.generator(self.sample_noise(size))

        def sample_noise(self, size):
            z = Variable(torch.randn(size, self.z_size))
            return z.cuda() if self._is_on_cuda() else z

        def gradient_penalty(self, x, g, lamda):
            assert x.size() == g.size()
            a = torch.rand(x.size(0), 1)
            a = a.cuda() if self._is_on_cuda() else a
            a = a\
                .expand(x.size(0), x.nelement()//x.size(0))\
                .contiguous()\
                .view(
                    x.size(0),
                    self.image_channel_size,
                    self.image_size,
                    self.image_size
                )
            interpolated = Variable(a*x.data + (1-a)*g.data, requires_grad=True)
            c = self.critic(interpolated)
            gradients = autograd.grad(
                c, interpolated, grad_outputs=(
                    torch.ones(c.size()).cuda() if self._is_on_cuda() else
                    torch.ones(c.size())
                ),
                create_graph=True,
                retain_graph=True,
            )[0]
            return lamda * ((1-gradients.norm(2, dim=1))**2).mean()

        def _is_on_cuda(self):
            return next(self.parameters()).is_cuda

    def get_data_loader(dataset, batch_size, cuda=False, collate_fn=None):
        # utils.py, with shuffle=False (a shuffled order comes from torch's random stream)
        return torch.utils.data.DataLoader(
            dataset, batch_size=batch_size, shuffle=False, drop_last=True,
            **({'num_workers': 1, 'pin_memory': True} if cuda else {})
        )

    def save_checkpoint(model, model_dir, iteration):
        path = os.path.join(model_dir, model.name)

        # save the checkpoint.
        if not os.path.exists(model_dir):
            os.makedirs(model_dir)
        torch.save({
            'state': model.state_dict(),
            'iteration': iteration,
        }, path)

        # notify that we successfully saved the checkpoint.
        print('=> saved the model {name} to {path}'.format(
            name=model.name, path=os.path.basename(path)
        ))

        return iteration

    def load_checkpoint(model, model_dir):
        path = os.path.join(model_dir, model.name)

        # load the checkpoint.
        checkpoint = torch.load(path)
        print('=> loaded checkpoint of {name} from {path}'.format(
            name=model.name, path=os.path.basename(path)
        ))

        # load parameters and return the checkpoint's epoch and precision.
        model.load_state_dict(checkpoint['state'])
        iteration = checkpoint['iteration']
        return iteration

    def train(model, dataset, log, collate_fn=None,
              lr=1e-04, weight_decay=1e-04, beta1=0.5, beta2=.999, lamda=10.,
              batch_size=32, sample_size=32, epochs=10,
              d_trains_per_g_train=2,
              checkpoint_dir='checkpoints',
              checkpoint_interval=1000,
              image_log_interval=100,
              loss_log_interval=30,
              resume=False, cuda=False, first_d_trains=30):
        # train.py; ``first_d_trains`` is its hard-coded 30 (fewer here); the tqdm bar's text
        # and the visdom scalars go to ``log``.
        optim = torch.optim
        generator_optimizer = optim.Adam(
            model.generator.parameters(), lr=lr, betas=(beta1, beta2),
            weight_decay=weight_decay
        )
        critic_optimizer = optim.Adam(
            model.critic.parameters(), lr=lr, betas=(beta1, beta2),
            weight_decay=weight_decay
        )

        # prepare the model and statistics.
        model.train()
        epoch_start = 1

        # load checkpoint if needed.
        if resume:
            iteration = load_checkpoint(model, checkpoint_dir)
            epoch_start = iteration // (len(dataset) // batch_size) + 1

        for epoch in range(epoch_start, epochs+1):
            data_loader = get_data_loader(
                dataset, batch_size,
                cuda=cuda, collate_fn=collate_fn,
            )
            data_stream = enumerate(data_loader, 1)
            for batch_index, data in data_stream:
                # unpack the data if needed.
                try:
                    x, _ = data
                except ValueError:
                    x = data

                # where are we?
                dataset_size = len(data_loader.dataset)
                dataset_batches = len(data_loader)
                iteration = (
                    (epoch-1)*(dataset_size // batch_size) +
                    batch_index + 1
                )

                # prepare the data.
                x = Variable(x).cuda() if cuda else Variable(x)
                d_trains = (
                    first_d_trains if (batch_index < 25 or batch_index % 500 == 0) else
                    d_trains_per_g_train
                )

                # run the critic and backpropagate the errors.
                for _ in range(d_trains):
                    critic_optimizer.zero_grad()
                    z = model.sample_noise(batch_size)
                    c_loss, g = model.c_loss(x, z, return_g=True)
                    c_loss_gp = c_loss + model.gradient_penalty(x, g, lamda=lamda)
                    c_loss_gp.backward()
                    critic_optimizer.step()

                # run the generator and backpropagate the errors.
                generator_optimizer.zero_grad()
                z = model.sample_noise(batch_size)
                g_loss = model.g_loss(z)
                g_loss.backward()
                generator_optimizer.step()

                try:
                    g_loss.data[0]
                except IndexError as e:
                    log("data[0] of a 0-d loss", type(e))

                # update the progress.
                log("description", (
                    'epoch: {epoch}/{epochs} | '
                    'iteration: {iteration} | '
                    'progress: [{trained}/{total}] ({progress:.0f}%) | '
                    'loss => '
                    'g: {g_loss:.4} / '
                    'w: {w_dist:.4}'
                ).format(
                    epoch=epoch,
                    epochs=epochs,
                    iteration=iteration,
                    trained=batch_index*batch_size,
                    total=dataset_size,
                    progress=(100.*batch_index/dataset_batches),
                    g_loss=g_loss.item(),
                    w_dist=-c_loss.item(),
                ))
                log("losses", [c_loss_gp, c_loss, g_loss])

                # send losses to the visdom server.
                if iteration % loss_log_interval == 0:
                    log("w distance", -c_loss.data)

                # send sample images to the visdom server.
                if iteration % image_log_interval == 0:
                    log("samples", model.sample_image(sample_size).data)

                # save the model at checkpoints.
                if iteration % checkpoint_interval == 0:
                    # notify that we've reached to a new checkpoint.
                    print()
                    print()
                    print('#############')
                    print('# checkpoint!')
                    print('#############')
                    print()

                    save_checkpoint(model, checkpoint_dir, iteration)

                    print()

    return WGAN, train


# 8x8 two-channel images (``tanh`` output), 8 images in batches of 4, one epoch of two batches
# with 2 critic steps each, a checkpoint after every batch, then a resumed run of the second
# epoch (1 critic step a batch) from the checkpoint into a fresh model.
def test_wgan_gp():
    def program(mod, log):
        T = SeededTorch(mod, 0)
        WGAN, train = _wgan_classes(T)
        rs = np.random.RandomState(1)
        images = mod.tensor(np.tanh(rs.standard_normal((8, 2, 8, 8))).astype(np.float32))
        labels = mod.tensor(rs.randint(0, 3, 8))
        dataset = mod.utils.data.TensorDataset(images, labels)
        model = WGAN(label='toy', z_size=4, image_size=8, image_channel_size=2,
                     c_channel_size=2, g_channel_size=2)
        init_params(mod, model, 2, scale=0.3)
        log("name", model.name)
        tmp = tempfile.mkdtemp()
        train(model, dataset, log, batch_size=4, sample_size=2, epochs=1, lr=1e-3,
              first_d_trains=2, checkpoint_dir=tmp, checkpoint_interval=1,
              image_log_interval=2, loss_log_interval=1)
        log("state", list(model.state_dict().items()))
        fresh = WGAN(label='toy', z_size=4, image_size=8, image_channel_size=2,
                     c_channel_size=2, g_channel_size=2)
        train(fresh, dataset, log, batch_size=4, sample_size=2, epochs=2, lr=1e-3,
              first_d_trains=1, checkpoint_dir=tmp, checkpoint_interval=100, resume=True)
        log("resumed state", list(fresh.state_dict().items()))

    run_both(program)
