"""Sources of the round-66 public programs (tests/api/test_public_programs_round66.py and
tests/compile/test_public_patterns_round66.py), executed with ``torch`` bound to torch or
tracegrad by ``program(T, SRC)``. Kept as in their repositories apart from the ``import`` lines
(the names are given as globals) and the changes noted in place; see the test files for the
repositories, paths, commits and licenses."""
import public_programs_round65_src as _r65

module = _r65.module


def program(T, src, **extra):
    """Execute a program source with round 65's globals (``torch``, ``nn``, ``F``, ``optim``,
    ``np``, ``math``, ``Tensor``, ``Variable``, ``DataLoader``, ...)."""
    return _r65.program(T, src, **extra)


# William-f-12/SimCLR (no license file) src/loss.py at 0b618f1, but for its imports
NTXENT = r'''
class NTXentLoss(nn.Module):
    def __init__(self, temperature=0.5):
        super().__init__()
        self.temperature = temperature

    def forward(self, z1, z2):
        """
        z1, z2: [B, D]  already L2 normalized
        return: scalar loss
        """
        batch_size = z1.size(0)
        z = torch.cat([z1, z2], dim=0)

        sim = (z @ z.T) / self.temperature
        sim.fill_diagonal_(float('-inf')) # mask out self-contrast cases

        targets = torch.arange(batch_size, device=z.device)
        targets = torch.cat([targets + batch_size, targets], dim=0)  # 1st B -> 2nd B，2nd B -> 1st B

        # do cross entropy on fp32
        loss = F.cross_entropy(sim.to(dtype=torch.float32), targets)
        return loss
'''

# William-f-12/SimCLR src/model.py at 0b618f1: its ProjectionHead (``build_resnet`` needs
# torchvision's resnet18; the tests give a stand-in of the same signature as a global)
PROJECTION_HEAD = r'''
class ProjectionHead(nn.Module):
    def __init__(self, in_dim, hidden_dim=2048, out_dim=128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden_dim, bias=False),
            nn.BatchNorm1d(hidden_dim),
            nn.ReLU(inplace=True),
            nn.Linear(hidden_dim, out_dim, bias=True),
        )

    def forward(self, x):
        z = self.net(x)
        return F.normalize(z, dim=1) # p = 2 by default
'''

# William-f-12/SimCLR src/SimCLR.py at d797ec6, but for its imports
SIMCLR = r'''
class SimCLR(nn.Module):
    def __init__(self, arch="resnet18", proj_hidden=2048, proj_out=128, head="cifar"):
        super().__init__()
        self.encoder, feat_dim = build_resnet(arch=arch, cifar_head=(head=="cifar"))
        self.projector = ProjectionHead(in_dim=feat_dim, hidden_dim=proj_hidden, out_dim=proj_out)

    @torch.no_grad()
    def encode(self, x):
        return self.encoder(x)

    def forward(self, x1, x2):
        h1, h2 = self.encoder(x1), self.encoder(x2)
        z1, z2 = self.projector(h1), self.projector(h2)
        return z1, z2
'''

# William-f-12/SimCLR src/timer.py at 7e8912e, whole
SIMCLR_TIMER = r'''
class EMAMeter:
    def __init__(self, beta: float = 0.9):
        self.beta = beta
        self.ema = None

    def update(self, x: float):
        if self.ema is None:
            self.ema = x
        else:
            self.ema = self.beta * self.ema + (1 - self.beta) * x

    @property
    def avg(self):
        return self.ema if self.ema is not None else 0.0

def format_time(sec: float) -> str:
    sec = int(sec)
    h, rem = divmod(sec, 3600)
    m, s = divmod(rem, 60)
    if h > 0: return f"{h}h{m:02d}m{s:02d}s"
    if m > 0: return f"{m}m{s:02d}s"
    return f"{s}s"
'''

# William-f-12/SimCLR src/train_loop.py at 3fd0f3c: its ``train`` (``MyImageDataset`` and
# ``main`` read PNG files through PIL and torchvision); ``tqdm``, ``time`` and the checkpoint
# path's ``torch.save`` are stand-ins the tests give as globals
SIMCLR_TRAIN = r'''
def train(model, train_loader, optimizer, loss_fn, device, start_epoch, epochs):
    total_iters = len(train_loader) * (epochs - start_epoch + 1)
    ema_time = EMAMeter(beta=0.9)
    global_start = time.time()

    model.train()
    for epoch in range(start_epoch-1, epochs):
        epoch_start = time.time()
        pbar = tqdm(enumerate(train_loader),
                    total=len(train_loader),
                    desc=f"Epoch {epoch+1}/{epochs}",
                    leave=False)
        
        total_loss = 0
        for step, (x_i, x_j) in pbar:
            iter_start = time.time()

            x_i, x_j = x_i.to(device), x_j.to(device)

            # forward pass
            z_i, z_j = model(x_i, x_j)

            # compute loss
            loss = loss_fn(z_i, z_j)

            # backward pass and update
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

            # calculate total loss
            total_loss += loss.item()

            # update EMA timer
            iter_time = time.time() - iter_start
            ema_time.update(iter_time)

            iters_done = epoch * len(train_loader) + (step + 1)
            iters_left = total_iters - iters_done
            eta_sec = ema_time.avg * iters_left

            pbar.set_postfix(
                loss=f"{loss.item():.4f}",
                bt=f"{iter_time*1000:.0f}ms",
                eta=format_time(eta_sec)
            )

        torch.save({"epoch": epoch,
              "model_state_dict": model.state_dict(),
              "optimizer_state_dict": optimizer.state_dict(),
              "loss": loss}, f"/content/drive/MyDrive/Colab_Notebooks/SimCLR/saved_model/checkpoint{epoch+1}.pth")

        epoch_time = time.time() - epoch_start
        print(f"Epoch {epoch+1}/{epochs} finished in {format_time(epoch_time)} "
              f"| avg batch ~ {ema_time.avg*1000:.0f} ms")

        print(f"Epoch [{epoch+1}/{epochs}], Loss: {total_loss/len(train_loader):.4f}")

    total_time = time.time() - global_start
    print(f"Training done in {format_time(total_time)}")
'''

# 0nEwEi/Test (no license file) WGANGP/model.py at ebd0777, but for its imports and its
# ``__main__`` shape check
WGANGP_MODEL = r'''
class Discriminator(nn.Module):
    def __init__(self, img_channels, features_d):
        super(Discriminator, self).__init__()
        self.disc = nn.Sequential(
            # Input: N x img_channels x 64 x 64
            nn.Conv2d(img_channels, features_d, kernel_size=4, stride=2, padding=1), # 32 x 32
            nn.LeakyReLU(0.2),
            self._block(features_d, features_d*2, 4, 2, 1), # 16 x 16
            self._block(features_d*2, features_d*4, 4, 2, 1), # 8 x 8
            self._block(features_d*4, features_d*8, 4, 2, 1), # 4 x 4
            nn.Conv2d(features_d*8, 1, kernel_size=4, stride=2, padding=0), # 1 x 1
        )

    def _block(self, in_channels, out_channels, kernel_size, stride, padding):
        return nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, bias=False),
            nn.InstanceNorm2d(out_channels, affine=True), # LayerNorm <-> InstanceNorm
            nn.LeakyReLU(0.2),
        )
    
    def forward(self, x):
        return self.disc(x)

class Generator(nn.Module):
    def __init__(self, z_dim, img_channels, features_g):
        super(Generator, self).__init__()
        self.gen = nn.Sequential(
            # Input: N x z_dim x 1 x 1
            self._block(z_dim, features_g*16, 4, 1, 0), # 4 x 4
            self._block(features_g*16, features_g*8, 4, 2, 1), # 8 x 8
            self._block(features_g*8, features_g*4, 4, 2, 1), # 16 x 16
            self._block(features_g*4, features_g*2, 4, 2, 1), # 32 x 32
            nn.ConvTranspose2d(features_g*2, img_channels, kernel_size=4, stride=2, padding=1), # 64 x 64
            nn.Tanh() # normalized to [-1, 1] (actually [0, 1])
        )
    
    def _block(self, in_channels, out_channels, kernel_size, stride, padding):
        return nn.Sequential(
            nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride, padding, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )
    
    def forward(self, x):
        return self.gen(x)
    
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)
'''

# 0nEwEi/Test WGANGP/utils.py at 8a79b0d, but for its imports
WGANGP_GP = r'''
def gradient_penalty(critic, real, fake, device="cpu"):
    BATCH_SIZE, C, H, W = real.shape

    epsilon = torch.rand((BATCH_SIZE, 1, 1, 1)).repeat(1, C, H, W).to(device)
    interpolated_images = real * epsilon + fake * (1 - epsilon)
    # RuntimeError: One of the differentiated Tensors does not require grad
    interpolated_images.requires_grad_(True) # if False, RuntimeError above occurs (line 19)
    
    # calculate critic scores
    mixed_scores = critic(interpolated_images)

    gradient = torch.autograd.grad(
        inputs=interpolated_images,
        outputs=mixed_scores,
        grad_outputs=torch.ones_like(mixed_scores),
        create_graph=True,
        # retain_graph=True, # perhaps use this to reuse fake in Generator training
    )[0]

    gradient = gradient.view(gradient.shape[0], -1)
    gradient_norm = gradient.norm(2, dim=1)
    gradient_penalty = torch.mean((gradient_norm - 1) ** 2)
    
    return gradient_penalty
'''

# 0nEwEi/Test WGANGP/train.py at 8a79b0d from its models to the end of the loop, but for its
# imports: the hyper-parameters, ``dataloader``, ``device`` and the writers are globals the tests
# set (it reads an ImageFolder of CelebA through torchvision); the tensorboard image grids under
# ``no_grad`` go to a ``torchvision.utils.make_grid`` stand-in
WGANGP_TRAIN = r'''
gen = Generator(Z_DIM, IMG_CHANNELS, FEATURES_G).to(device)
critic = Discriminator(IMG_CHANNELS, FEATURES_D).to(device)
weights_init(gen)
weights_init(critic)

opt_gen = optim.Adam(gen.parameters(), lr=LEARNING_RATE, betas=(0.0, 0.9))
opt_critic = optim.Adam(critic.parameters(), lr=LEARNING_RATE, betas=(0.0, 0.9))

fixed_noise = torch.randn(32, Z_DIM, 1, 1).to(device)

step = 0

gen.train()
critic.train()

for epoch in range(NUM_EPOCHS):
    for batch_idx, (real, _) in enumerate(dataloader):
        real = real.to(device)

        # Train Discriminator
        for _ in range(CRITIC_ITERATIONS):
            noise = torch.randn((BATCH_SIZE, Z_DIM, 1, 1)).to(device)
            fake = gen(noise).detach() # fake here doesn't need gradient
            
            critic_real = critic(real).reshape(-1)
            critic_fake = critic(fake).reshape(-1)

            # use gradient penalty to get smooth Discriminator
            gp = gradient_penalty(critic, real, fake, device=device)
            # original WGAN loss + gradient penalty
            loss_critic = (-(torch.mean(critic_real) - torch.mean(critic_fake)) + LAMBDA_GP*gp)
            
            critic.zero_grad()
            loss_critic.backward()
            # loss_critic.backward(retain_graph=True) # use this to reuse fake in Generator training
            opt_critic.step()

        # Train Generator--min -E[critic(gen(z))]
        noise = torch.randn((BATCH_SIZE, Z_DIM, 1, 1)).to(device)
        fake = gen(noise)
        output = critic(fake).reshape(-1)

        loss_gen = -torch.mean(output)

        gen.zero_grad()
        loss_gen.backward()
        opt_gen.step()

        # print to tensorboard
        if batch_idx % 100 == 0:
            print(f"Epoch [{epoch}/{NUM_EPOCHS}] Batch {batch_idx}/{len(dataloader)} \
                        Loss D: {loss_critic:.4f}, loss G: {loss_gen:.4f}") # loss here is meaningful

            with torch.no_grad():
                fake = gen(fixed_noise)

                # take out (up to) 32 examples
                img_grid_real = torchvision.utils.make_grid(real[:32], normalize=True)
                img_grid_fake = torchvision.utils.make_grid(fake[:32], normalize=True)

                writer_real.add_image("Real_celeb_wgangp", img_grid_real, global_step=step)
                writer_fake.add_image("Fake_celeb_wgangp", img_grid_fake, global_step=step)
            
            step += 1

writer_fake.close()
writer_real.close()
'''

# Yuting-Gao/DisCo-pytorch (license: see the test file) DisCo/kd_ce_loss.py at 35da4b3, but for
# its imports
KD_CE = r'''
def loss_fn_kd(outputs, labels, teacher_outputs, args):
    alpha = args.alpha
    T = args.T
    KD_loss = nn.KLDivLoss()(F.log_softmax(outputs/T, dim=1),
                             F.softmax(teacher_outputs/T, dim=1)) * (alpha * T * T) +\
        F.cross_entropy(outputs, labels) * (1. - alpha)
    return KD_loss
'''

# Fr0do/flows4ad (no license file) flows4ad/models/flows/masks.py at 288cf88, but for its imports
# (``IntEnum`` is a global) and its docstrings' triple single quotes, made double here
FLOWS_MASKS = r'''
class MaskType(IntEnum):
    CHECKERBOARD = 0
    CHANNEL_WISE = 1


def make_channel_wise_mask(x, invert_mask: bool = False):
    """
        x: Tensor of shape (B, D)
    """
    mask = torch.zeros_like(x, dtype=torch.bool)
    mask[..., :x.shape[-1] // 2] = True
    if invert_mask:
        mask = ~mask
    return mask


def make_checkerboard_mask(x, invert_mask: bool = False):
    """
        x: Tensor of shape (B, D)
    """
    mask = torch.zeros_like(x, dtype=torch.bool)
    even_ids = range(0, x.shape[-1], 2)
    mask[..., even_ids] = True
    if invert_mask:
        mask = ~mask
    return mask
'''

# Fr0do/flows4ad flows4ad/models/mlp/mlp.py at 288cf88, but for its imports
FLOWS_MLP = r'''
class MLP(nn.Module):

    def __init__(
        self, 
        num_layers: int,
        d_in: int, 
        d_hidden: int, 
        d_out: int,
        activation: Union[nn.Module, str] = 'ReLU',
        activation_kwargs: dict = {}
    ):
        super().__init__()
        assert num_layers >= 2

        if isinstance(activation, str):
            activation = getattr(nn, activation)(**activation_kwargs)

        layers = []
        for layer_id in range(num_layers):
            layer_d_in = (d_hidden, d_in)[layer_id == 0]
            layer_d_out = (d_hidden, d_out)[layer_id == num_layers - 1]
            layers.append(nn.Linear(layer_d_in, layer_d_out))
            if layer_id == num_layers - 1:
                layers.append(activation)

        self.net = nn.Sequential(*layers)
        
    def forward(self, x):
        return self.net.forward(x)
'''

# Fr0do/flows4ad flows4ad/models/flows/real_nvp.py at 288cf88, but for its imports
FLOWS_REAL_NVP = r'''
class AffineCouplingLayer(nn.Module):

    def __init__(
        self, 
        d_embed: int, 
        d_hidden: int,
        mask_type: str = MaskType.CHANNEL_WISE, 
        invert_mask: bool = False,
        num_mlp_layers: int = 2,
        mlp_activation: str = 'relu',
        mlp_activation_kwargs: dict = {}
    ):
        super().__init__()
        # Save mask info
        self.mask_type = mask_type
        self.invert_mask = invert_mask
        # learnable scale and shift function
        self.shift_scale = MLP(
            num_layers=num_mlp_layers,
            d_in=d_embed,
            d_hidden=d_hidden,
            d_out=2 * d_embed,
            activation=mlp_activation,
            activation_kwargs=mlp_activation_kwargs
        )


    def forward(self, x: Tensor, reverse: bool = False):
        # make mask
        if self.mask_type == MaskType.CHECKERBOARD:
            mask = make_checkerboard_mask(x, self.invert_mask)
        elif self.mask_type == MaskType.CHANNEL_WISE:
            mask = make_channel_wise_mask(x, self.invert_mask)
        x_mask = x * mask
        shift, scale = self.shift_scale(x_mask).chunk(2, dim=-1)
        
        shift = shift * ~mask
        scale = scale * ~mask

        if reverse:
            x = (x - shift) * torch.exp(-scale)
        else:
            x = x * torch.exp(scale) + shift

        # the output is transformed input 
        # and logarithm of jacobian (which equals to s)
        return x, scale


class RealNVP(nn.Module):

    def __init__(
        self,
        d_embed: int, 
        d_hidden: int,
        num_flow_layers: int,
        use_channel_wise_splits: bool = True,
        use_checkerboard_splits: bool = True,
        num_mlp_layers: int = 2,
        mlp_activation: str = 'relu',
        mlp_activation_kwargs: dict = {}
    ):
        super().__init__()

        assert num_flow_layers % 2 == 0, \
            "Number of flow layers should be even"
        assert use_channel_wise_splits or use_checkerboard_splits, \
            "Use at least one of split strategies."
       
        mask_types = []
        if use_channel_wise_splits:
            mask_types.append(MaskType.CHANNEL_WISE)
        if use_checkerboard_splits:
            mask_types.append(MaskType.CHECKERBOARD)

        flow_layers = []
        for i in range(num_flow_layers):
            invert_mask = i % 2 == 0
            mask_type = (i // 2) % len(mask_types)
            flow_layers.append(
                AffineCouplingLayer(
                    d_embed=d_embed,
                    d_hidden=d_hidden,
                    mask_type=mask_type,
                    invert_mask=invert_mask,
                    num_mlp_layers=num_mlp_layers,
                    mlp_activation=mlp_activation,
                    mlp_activation_kwargs=mlp_activation_kwargs
                )
            )
        self.flow_layers = nn.Sequential(*flow_layers)

        
    def forward(self, x: Tensor, reverse: bool = False):
        log_det = 0.0
        flow_layers = reversed(self.flow_layers) if reverse else self.flow_layers
        for flow_layer in flow_layers:
            x, scale = flow_layer(x, reverse)
            log_det += scale
        return x, log_det
'''

# Fr0do/flows4ad flows4ad/losses/flow_loss.py at 288cf88, but for its imports
FLOWS_LOSS = r'''
class RealNVPLoss(nn.Module):
    """Get the NLL loss for a RealNVP model.
    Args:
        prior 
    See Also:
        Equation (3) in the RealNVP paper: https://arxiv.org/abs/1605.08803
    """
    def __init__(self, prior):
        super(RealNVPLoss, self).__init__()
        self.prior = prior

    def forward(self, z, log_det):
        log_prob = self.prior.log_prob(z) + log_det
        return -log_prob.mean()
'''

# edchengg/VAE_GAN (no license file) vae_gan.py at 917352c, but for its imports (``Variable`` is
# a global)
VAE_GAN = r'''
ZDIMS=20


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()

        self.DIMS = 20
        self.dropout = nn.Dropout(0.10)
        self.relu = nn.LeakyReLU(0.2)
        # ENCODER 1
        # 28 x 28 pixels = 784 input pixels, 400 outputs
        self.en_x_1 = nn.Linear(784, 1024)
        self.en_x_2 = nn.Linear(1024, 1024)
        self.en_x_3 = nn.Linear(1024, 1024)
        self.en_x_4_mu = nn.Linear(1024, ZDIMS)  # mu layer
        self.en_x_4_sigma = nn.Linear(1024,ZDIMS)  # log vairiance

    def forward(self, x):
        """Input vector x -> fully connected 1 -> ReLU -> (fully connected

        """
        h = self.relu(self.en_x_1(self.dropout(x)))
        h = self.relu(self.en_x_2(self.dropout(h)))
        h = self.relu(self.en_x_3(self.dropout(h)))
        return self.en_x_4_mu(self.dropout(h)), self.en_x_4_sigma(self.dropout(h))

    def reparameterize(self, mu, logvar):
        """THE REPARAMETERIZATION IDEA:

        """

        if self.training:

            std = logvar.mul(0.5).exp_()  # type: Variable

            eps = Variable(std.data.new(std.size()).normal_())

            return eps.mul(std).add_(mu)

        else:
            # During inference, we simply spit out the mean of the
            # learned distribution for the current input.  We could
            # use a random sample from the distribution, but mu of
            # course has the highest probability.
            return mu



class Decoder(nn.Module):
    def __init__(self, ZDIMS=20):
        super().__init__()


        self.dropout = nn.Dropout(0.10)
        self.relu = nn.LeakyReLU(0.2)
        self.tanh = nn.Tanh()
        # DECODER

        self.de_x_1 = nn.Linear(ZDIMS, 1024)
        self.de_x_2 = nn.Linear(1024, 1024)
        self.de_x_3 = nn.Linear(1024, 1024)
        self.de_x_4 = nn.Linear(1024, 784)


    def forward(self, z: Variable) -> Variable:
        h = self.relu(self.de_x_1(self.dropout(z)))
        h = self.relu(self.de_x_2(self.dropout(h)))
        h = self.relu(self.de_x_3(self.dropout(h)))
        return self.tanh(self.de_x_4(self.dropout(h)))



class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.leakyrelu = nn.LeakyReLU(0.2)
        self.dropout = nn.Dropout(0.1)
        self.sigmoid = nn.Sigmoid()
        self.f1 = nn.Linear(784, 1024)
        self.f2 = nn.Linear(1024, 512)
        self.f3 = nn.Linear(512, 256)
        self.f4 = nn.Linear(256, 1)

    def forward(self, x):
        h = self.leakyrelu(self.f1(self.dropout(x)))
        h = self.leakyrelu(self.f2(self.dropout(h)))
        h = self.leakyrelu(self.f3(self.dropout(h)))
        return self.sigmoid(self.f4(self.dropout(h)))

    def similarity(self, x):
        h = self.leakyrelu(self.f1(self.dropout(x)))
        h = self.leakyrelu(self.f2(self.dropout(h)))
        h = self.leakyrelu(self.f3(self.dropout(h)))
        return self.f4(self.dropout(h))
'''

# edchengg/VAE_GAN main.py at 917352c from its models to its epoch loop, but for its imports: the
# hyper-parameters and ``train_loader`` are globals the tests set (it ``os.chdir``s to a local
# folder and reads noisy-MNIST pickles); the loop's sampling and ``save_image`` after ``train``
# need torchvision and are left out
VAE_GAN_MAIN = r'''
# Encoder
encoder = Encoder()
# Decoder / Generator
decoder = Decoder()
# Discriminator
discriminator = Discriminator()

optimizer_Enc = optim.Adam(encoder.parameters(), lr=1e-4)
optimizer_Dec = optim.Adam(decoder.parameters(), lr=1e-4)
optimizer_Dis = optim.Adam(discriminator.parameters(), lr=1e-4)


def Auxilary(z):
    z_p = Variable(z.data.new(z.size()).normal_())
    return z_p


def discriminator_loss(recon_data, sample_data, real_data, REAL_LABEL, FAKE_LABEL):
    recon_loss = F.binary_cross_entropy(recon_data, FAKE_LABEL)
    sample_loss = F.binary_cross_entropy(sample_data, FAKE_LABEL)
    real_loss = F.binary_cross_entropy(real_data, REAL_LABEL)

    return recon_loss + sample_loss + real_loss


def train(epoch):
    # toggle model to train mode
    encoder.train()
    decoder.train()
    discriminator.train()
    train_dec_loss = 0
    train_dis_loss = 0
    train_enc_loss = 0
    print('start')
    # in the case of MNIST, len(train_loader.dataset) is 60000
    # each `data` is of BATCH_SIZE samples and has shape [128, 1, 28, 28]
    for batch_idx, (data, _) in enumerate(train_loader):

        data = Variable(data).float()
        optimizer_Enc.zero_grad()
        optimizer_Dec.zero_grad()
        optimizer_Dis.zero_grad()

        # Encoder
        mu, log_var = encoder(data)

        # Decoder / Generator
        z = encoder.reparameterize(mu, log_var)

        # Auxilary Z_p <- samples from prior N(0, I)
        z_p = Auxilary(z)

        x_tilde = decoder.forward(z)
        x_p = decoder(z_p)

        # Discriminator

        X = discriminator(x_tilde)
        X_p = discriminator(x_p)
        X_real = discriminator(data)
        X_sim = discriminator.similarity(x_tilde)
        X_data = discriminator.similarity(data)

        REAL_LABEL = Variable(torch.ones(X_real.size(0)))
        FAKE_LABEL = Variable(torch.zeros(X.size(0)))

        # Discriminator loss
        dis_loss = discriminator_loss(X, X_p, X_real, REAL_LABEL, FAKE_LABEL)

        # Decoder loss
        rec_loss = ((X_sim - X_data) ** 2).mean()
        dec_loss = GAMMA * rec_loss - dis_loss

        # Encoder loss
        KLD = -0.5 * torch.sum(1 + log_var - mu.pow(2) - log_var.exp())
        KLD /= BATCH_SIZE * 784
        enc_loss = KLD + BETA * rec_loss

        # Back propagation
        # Train Discriminator
        dis_loss.backward(retain_graph=True)
        optimizer_Dis.step()

        # Train Decoder
        dec_loss.backward(retain_graph=True)
        optimizer_Dec.step()

        # Train Encoder
        enc_loss.backward()
        optimizer_Enc.step()


        train_dec_loss += dec_loss.data[0]
        train_dis_loss += dis_loss.data[0]
        train_enc_loss += enc_loss.data[0]
        #if batch_idx % LOG_INTERVAL == 0:
         #   print('Train Epoch: {} [{}/{} ({:.0f}%)]\tDECLoss: {:.6f} DISLoss: {:.6f} ENCLoss: {:.6f}'.format(
          #      epoch, batch_idx * len(data), len(train_loader.dataset),
           #     100. * batch_idx / len(train_loader),
            #    dec_loss.data[0] / len(data),
             #   dis_loss.data[0] / len(data),
              #  enc_loss.data[0] / len(data)))

    print('====> Epoch: {} Average DECloss: {:.4f} Average DISloss: {:.4f} Average ENCloss: {:.4f}'.format(
          epoch,
        train_dec_loss / len(train_loader.dataset),
        train_dis_loss / len(train_loader.dataset),
        train_enc_loss / len(train_loader.dataset)))



for epoch in range(1, EPOCHS + 1):
    train(epoch)
'''
