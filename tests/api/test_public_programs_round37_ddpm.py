"""Round 37's diffusion program, from dome272/Diffusion-Models-pytorch (``ddpm_conditional.py``
and ``modules.py`` at 3ed73b9), in its own file for the time limit (the round's notes are in
``test_public_programs_round37.py``): the ``Diffusion`` class (a ``linspace`` beta schedule,
``cumprod`` alphas indexed by a batch of timesteps with ``[:, None, None, None]``,
``noise_images``, ``sample_timesteps``, and the classifier-free-guidance ``sample`` loop under
``no_grad`` with ``torch.lerp(uncond, cond, cfg_scale)``, ``clamp`` and ``.type(torch.uint8)``),
the ``EMA`` helper (``load_state_dict`` of the model's ``state_dict`` until its start step, then
``ma_params.data = old * beta + (1 - beta) * new``), the UNet's blocks (``DoubleConv`` with
``GroupNorm(1, C)``/``GELU`` and a residual ``F.gelu``, ``Down`` with ``MaxPool2d`` and a time
embedding broadcast by ``[:, :, None, None].repeat``, ``Up`` with a bilinear ``Upsample
(align_corners=True)`` and ``cat`` of the skip, ``SelfAttention`` through a batch-first
``nn.MultiheadAttention`` and ``swapaxes``), the sinusoidal ``pos_encoding`` and the label
embedding added in place (``t += self.label_emb(y)``), and ``train``'s loop (``copy.deepcopy(model)
.eval().requires_grad_(False)`` for the EMA model, labels dropped when ``np.random.random() <
0.1``, ``nn.MSELoss``, AdamW).

Changes, the same on both sides: ``UNet_conditional``'s fixed widths (64 to 512 channels, six
attention blocks at 64x64 images) are scaled down to one ``Down``/``SelfAttention``/``Up`` level
of the same blocks at 8x8 images (the class below keeps its ``pos_encoding`` and ``forward``
order); ``torch.randn``/``randn_like``/``randint`` draw from seeded numpy streams; the EMA starts
averaging after one step (its ``step_start_ema`` argument); 4 noise steps; two batches of two
seeded 8x8 images with labels replace CIFAR-10; ``tqdm``, logging, TensorBoard and image saving are
left out.
"""
import copy

import numpy as np
import pytest
from parity import SeededTorch, init_params, run_both

torch = pytest.importorskip("torch")


class _Seeded(SeededTorch):
    """``SeededTorch`` that also takes ``randn((n, c, h, w))`` (one size tuple) and
    ``randint(low=, high=, size=)`` from its numpy stream."""

    def randn(self, *size):
        if len(size) == 1 and isinstance(size[0], tuple):
            size = size[0]
        return super().randn(*size)

    def randint(self, low, high, size, dtype=None):
        return self._mod.tensor(self._rs.randint(low, high, size))


def _ddpm_classes(torch):
    nn, F = torch.nn, torch.nn.functional

    class EMA:
        def __init__(self, beta):
            super().__init__()
            self.beta = beta
            self.step = 0

        def update_model_average(self, ma_model, current_model):
            for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):
                old_weight, up_weight = ma_params.data, current_params.data
                ma_params.data = self.update_average(old_weight, up_weight)

        def update_average(self, old, new):
            if old is None:
                return new
            return old * self.beta + (1 - self.beta) * new

        def step_ema(self, ema_model, model, step_start_ema=2000):
            if self.step < step_start_ema:
                self.reset_parameters(ema_model, model)
                self.step += 1
                return
            self.update_model_average(ema_model, model)
            self.step += 1

        def reset_parameters(self, ema_model, model):
            ema_model.load_state_dict(model.state_dict())

    class SelfAttention(nn.Module):
        def __init__(self, channels, size):
            super(SelfAttention, self).__init__()
            self.channels = channels
            self.size = size
            self.mha = nn.MultiheadAttention(channels, 4, batch_first=True)
            self.ln = nn.LayerNorm([channels])
            self.ff_self = nn.Sequential(
                nn.LayerNorm([channels]),
                nn.Linear(channels, channels),
                nn.GELU(),
                nn.Linear(channels, channels),
            )

        def forward(self, x):
            x = x.view(-1, self.channels, self.size * self.size).swapaxes(1, 2)
            x_ln = self.ln(x)
            attention_value, _ = self.mha(x_ln, x_ln, x_ln)
            attention_value = attention_value + x
            attention_value = self.ff_self(attention_value) + attention_value
            return attention_value.swapaxes(2, 1).view(-1, self.channels, self.size, self.size)

    class DoubleConv(nn.Module):
        def __init__(self, in_channels, out_channels, mid_channels=None, residual=False):
            super().__init__()
            self.residual = residual
            if not mid_channels:
                mid_channels = out_channels
            self.double_conv = nn.Sequential(
                nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
                nn.GroupNorm(1, mid_channels),
                nn.GELU(),
                nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
                nn.GroupNorm(1, out_channels),
            )

        def forward(self, x):
            if self.residual:
                return F.gelu(x + self.double_conv(x))
            else:
                return self.double_conv(x)

    class Down(nn.Module):
        def __init__(self, in_channels, out_channels, emb_dim=256):
            super().__init__()
            self.maxpool_conv = nn.Sequential(
                nn.MaxPool2d(2),
                DoubleConv(in_channels, in_channels, residual=True),
                DoubleConv(in_channels, out_channels),
            )

            self.emb_layer = nn.Sequential(
                nn.SiLU(),
                nn.Linear(
                    emb_dim,
                    out_channels
                ),
            )

        def forward(self, x, t):
            x = self.maxpool_conv(x)
            emb = self.emb_layer(t)[:, :, None, None].repeat(1, 1, x.shape[-2], x.shape[-1])
            return x + emb

    class Up(nn.Module):
        def __init__(self, in_channels, out_channels, emb_dim=256):
            super().__init__()

            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = nn.Sequential(
                DoubleConv(in_channels, in_channels, residual=True),
                DoubleConv(in_channels, out_channels, in_channels // 2),
            )

            self.emb_layer = nn.Sequential(
                nn.SiLU(),
                nn.Linear(
                    emb_dim,
                    out_channels
                ),
            )

        def forward(self, x, skip_x, t):
            x = self.up(x)
            x = torch.cat([skip_x, x], dim=1)
            x = self.conv(x)
            emb = self.emb_layer(t)[:, :, None, None].repeat(1, 1, x.shape[-2], x.shape[-1])
            return x + emb

    class UNet_conditional(nn.Module):
        # one level of the program's three (its widths 64..512 and 64x64 attention sizes scaled
        # down); pos_encoding and the order of forward as written
        def __init__(self, c_in=3, c_out=3, time_dim=16, num_classes=None, device="cuda"):
            super().__init__()
            self.device = device
            self.time_dim = time_dim
            self.inc = DoubleConv(c_in, 8)
            self.down1 = Down(8, 16, emb_dim=time_dim)
            self.sa1 = SelfAttention(16, 4)
            self.up3 = Up(24, 8, emb_dim=time_dim)
            self.outc = nn.Conv2d(8, c_out, kernel_size=1)

            if num_classes is not None:
                self.label_emb = nn.Embedding(num_classes, time_dim)

        def pos_encoding(self, t, channels):
            inv_freq = 1.0 / (
                10000
                ** (torch.arange(0, channels, 2, device=self.device).float() / channels)
            )
            pos_enc_a = torch.sin(t.repeat(1, channels // 2) * inv_freq)
            pos_enc_b = torch.cos(t.repeat(1, channels // 2) * inv_freq)
            pos_enc = torch.cat([pos_enc_a, pos_enc_b], dim=-1)
            return pos_enc

        def forward(self, x, t, y):
            t = t.unsqueeze(-1).type(torch.float)
            t = self.pos_encoding(t, self.time_dim)

            if y is not None:
                t += self.label_emb(y)

            x1 = self.inc(x)
            x2 = self.down1(x1, t)
            x2 = self.sa1(x2)
            x = self.up3(x2, x1, t)
            output = self.outc(x)
            return output

    class Diffusion:
        def __init__(self, noise_steps=1000, beta_start=1e-4, beta_end=0.02, img_size=256, device="cuda"):
            self.noise_steps = noise_steps
            self.beta_start = beta_start
            self.beta_end = beta_end

            self.beta = self.prepare_noise_schedule().to(device)
            self.alpha = 1. - self.beta
            self.alpha_hat = torch.cumprod(self.alpha, dim=0)

            self.img_size = img_size
            self.device = device

        def prepare_noise_schedule(self):
            return torch.linspace(self.beta_start, self.beta_end, self.noise_steps)

        def noise_images(self, x, t):
            sqrt_alpha_hat = torch.sqrt(self.alpha_hat[t])[:, None, None, None]
            sqrt_one_minus_alpha_hat = torch.sqrt(1 - self.alpha_hat[t])[:, None, None, None]
            Ɛ = torch.randn_like(x)
            return sqrt_alpha_hat * x + sqrt_one_minus_alpha_hat * Ɛ, Ɛ

        def sample_timesteps(self, n):
            return torch.randint(low=1, high=self.noise_steps, size=(n,))

        def sample(self, model, n, labels, cfg_scale=3):
            model.eval()
            with torch.no_grad():
                x = torch.randn((n, 3, self.img_size, self.img_size)).to(self.device)
                for i in reversed(range(1, self.noise_steps)):
                    t = (torch.ones(n) * i).long().to(self.device)
                    predicted_noise = model(x, t, labels)
                    if cfg_scale > 0:
                        uncond_predicted_noise = model(x, t, None)
                        predicted_noise = torch.lerp(uncond_predicted_noise, predicted_noise, cfg_scale)
                    alpha = self.alpha[t][:, None, None, None]
                    alpha_hat = self.alpha_hat[t][:, None, None, None]
                    beta = self.beta[t][:, None, None, None]
                    if i > 1:
                        noise = torch.randn_like(x)
                    else:
                        noise = torch.zeros_like(x)
                    x = 1 / torch.sqrt(alpha) * (x - ((1 - alpha) / (torch.sqrt(1 - alpha_hat))) * predicted_noise) + torch.sqrt(beta) * noise
            model.train()
            x = (x.clamp(-1, 1) + 1) / 2
            return x, (x * 255).type(torch.uint8)

    return EMA, UNet_conditional, Diffusion


def test_ddpm_conditional_train_and_sample():
    def program(mod, log):
        torch = _Seeded(mod, 0)
        EMA, UNet_conditional, Diffusion = _ddpm_classes(torch)
        nn, optim = torch.nn, torch.optim
        np.random.seed(1)    # the label dropout's np.random.random()

        device = "cpu"
        rs = np.random.RandomState(2)
        images_all = torch.tensor(rs.uniform(-1, 1, (4, 3, 8, 8)).astype(np.float32))
        labels_all = torch.tensor(np.array([0, 1, 2, 1]))
        dataloader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(images_all, labels_all), batch_size=2, shuffle=False)

        model = UNet_conditional(num_classes=3, device=device).to(device)
        init_params(mod, model, 4, scale=0.3)
        optimizer = optim.AdamW(model.parameters(), lr=3e-4)
        mse = nn.MSELoss()
        diffusion = Diffusion(noise_steps=4, img_size=8, device=device)
        log("alpha_hat", diffusion.alpha_hat)
        ema = EMA(0.995)
        ema_model = copy.deepcopy(model).eval().requires_grad_(False)

        for epoch in range(1):
            for i, (images, labels) in enumerate(dataloader):
                images = images.to(device)
                labels = labels.to(device)
                t = diffusion.sample_timesteps(images.shape[0]).to(device)
                x_t, noise = diffusion.noise_images(images, t)
                if np.random.random() < 0.1:
                    labels = None
                predicted_noise = model(x_t, t, labels)
                loss = mse(noise, predicted_noise)

                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                ema.step_ema(ema_model, model, step_start_ema=1)

                log("t", t)
                log("x_t", x_t)
                log("MSE", loss.item())
                log("label_emb grad", model.label_emb.weight.grad)
                log("ema inc weight", ema_model.inc.double_conv[0].weight)
                log("ema requires_grad", [p.requires_grad for p in ema_model.parameters()])

            labels = torch.arange(2).long().to(device)
            x, sampled_images = diffusion.sample(model, n=len(labels), labels=labels)
            log("sampled", x)
            log("sampled images", sampled_images)
            x, ema_sampled_images = diffusion.sample(ema_model, n=len(labels), labels=labels)
            log("ema sampled", x)
            log("model training", (model.training, ema_model.training))

    run_both(program)
