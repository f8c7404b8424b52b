"""A tenth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round9.py``: contrastive image-text models (CLIP's ResNet tower,
``F.multi_head_attention_forward``), self-supervised losses (Barlow Twins with a hand-written
LARS, VICReg on a one-process gloo group, DINO's multi-crop self-distillation with a weight-norm
head), masked autoencoders, ConvNeXt, diffusion utilities (a recomputing autograd Function, the
variational-bound terms), set-prediction matching with scipy's Hungarian solver, rotary
embeddings in complex numbers with a KV cache, speech encoder-decoders with forward-hook caches,
T5's relative position buckets, timm's checkpoint_seq, masked autoregressive networks and
normalizing flows. Each keeps its program's code at tiny sizes (fewer channels, layers, steps
and samples), with numpy-seeded data and parameters (``init_params``/``randn``) in place of
downloads and random streams (``torch.randn`` initialisations, ``sample``, ``torch.rand`` noise,
dropout masks); where a program's own code had to change, the comment above its test says how
and why. Where a program's old idiom now raises in torch, the test checks that tracegrad raises
the same class.
"""
import math

import numpy as np
import pytest

from parity import init_params, randn, run_both

torch = pytest.importorskip("torch")


# openai/CLIP clip/model.py (Bottleneck with an anti-aliasing AvgPool2d and an OrderedDict
# downsample named "-1"/"0"/"1", AttentionPool2d through F.multi_head_attention_forward with
# separate q/k/v weights, ModifiedResNet, the fp16-safe LayerNorm subclass, QuickGELU,
# ResidualAttentionBlock over nn.MultiheadAttention with an additive -inf causal mask,
# VisionTransformer, CLIP.encode_text's ``x[torch.arange(n), text.argmax(dim=-1)]`` and the
# logit_scale.exp() cosine logits); the ResNet tower at a tiny width (64 -> 2, layers (1, 1, 1, 1)
# on 64x64 images; the VisionTransformer tower is kept but not run: its blocks are the text
# tower's), context 5, vocab 10; the
# randn/normal_ initialisations replaced by numpy-seeded parameters; trained with the symmetric
# cross-entropy of the paper and SGD (the keys' bias has a zero gradient by softmax's shift
# invariance: Adam would turn its rounding noise into lr-sized steps)
def test_openai_clip_model():
    def program(torch, log):
        from collections import OrderedDict
        from typing import Tuple, Union
        nn, F = torch.nn, torch.nn.functional

        class Bottleneck(nn.Module):
            expansion = 4

            def __init__(self, inplanes, planes, stride=1):
                super().__init__()

                # all conv layers have stride 1. an avgpool is performed after the second convolution when stride > 1
                self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
                self.bn1 = nn.BatchNorm2d(planes)
                self.relu1 = nn.ReLU(inplace=True)

                self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
                self.bn2 = nn.BatchNorm2d(planes)
                self.relu2 = nn.ReLU(inplace=True)

                self.avgpool = nn.AvgPool2d(stride) if stride > 1 else nn.Identity()

                self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
                self.bn3 = nn.BatchNorm2d(planes * self.expansion)
                self.relu3 = nn.ReLU(inplace=True)

                self.downsample = None
                self.stride = stride

                if stride > 1 or inplanes != planes * Bottleneck.expansion:
                    # downsampling layer is prepended with an avgpool, and the subsequent convolution has stride 1
                    self.downsample = nn.Sequential(OrderedDict([
                        ("-1", nn.AvgPool2d(stride)),
                        ("0", nn.Conv2d(inplanes, planes * self.expansion, 1, stride=1, bias=False)),
                        ("1", nn.BatchNorm2d(planes * self.expansion))
                    ]))

            def forward(self, x: torch.Tensor):
                identity = x

                out = self.relu1(self.bn1(self.conv1(x)))
                out = self.relu2(self.bn2(self.conv2(out)))
                out = self.avgpool(out)
                out = self.bn3(self.conv3(out))

                if self.downsample is not None:
                    identity = self.downsample(x)

                out += identity
                out = self.relu3(out)
                return out

        class AttentionPool2d(nn.Module):
            def __init__(self, spacial_dim: int, embed_dim: int, num_heads: int, output_dim: int = None):
                super().__init__()
                self.positional_embedding = nn.Parameter(torch.randn(spacial_dim ** 2 + 1, embed_dim) / embed_dim ** 0.5)
                self.k_proj = nn.Linear(embed_dim, embed_dim)
                self.q_proj = nn.Linear(embed_dim, embed_dim)
                self.v_proj = nn.Linear(embed_dim, embed_dim)
                self.c_proj = nn.Linear(embed_dim, output_dim or embed_dim)
                self.num_heads = num_heads

            def forward(self, x):
                x = x.reshape(x.shape[0], x.shape[1], x.shape[2] * x.shape[3]).permute(2, 0, 1)  # NCHW -> (HW)NC
                x = torch.cat([x.mean(dim=0, keepdim=True), x], dim=0)  # (HW+1)NC
                x = x + self.positional_embedding[:, None, :].to(x.dtype)  # (HW+1)NC
                x, _ = F.multi_head_attention_forward(
                    query=x, key=x, value=x,
                    embed_dim_to_check=x.shape[-1],
                    num_heads=self.num_heads,
                    q_proj_weight=self.q_proj.weight,
                    k_proj_weight=self.k_proj.weight,
                    v_proj_weight=self.v_proj.weight,
                    in_proj_weight=None,
                    in_proj_bias=torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]),
                    bias_k=None,
                    bias_v=None,
                    add_zero_attn=False,
                    dropout_p=0,
                    out_proj_weight=self.c_proj.weight,
                    out_proj_bias=self.c_proj.bias,
                    use_separate_proj_weight=True,
                    training=self.training,
                    need_weights=False
                )

                return x[0]

        class ModifiedResNet(nn.Module):
            def __init__(self, layers, output_dim, heads, input_resolution=224, width=64):
                super().__init__()
                self.output_dim = output_dim
                self.input_resolution = input_resolution

                # the 3-layer stem
                self.conv1 = nn.Conv2d(3, width // 2, kernel_size=3, stride=2, padding=1, bias=False)
                self.bn1 = nn.BatchNorm2d(width // 2)
                self.conv2 = nn.Conv2d(width // 2, width // 2, kernel_size=3, padding=1, bias=False)
                self.bn2 = nn.BatchNorm2d(width // 2)
                self.conv3 = nn.Conv2d(width // 2, width, kernel_size=3, padding=1, bias=False)
                self.bn3 = nn.BatchNorm2d(width)
                self.avgpool = nn.AvgPool2d(2)
                self.relu = nn.ReLU(inplace=True)

                # residual layers
                self._inplanes = width  # this is a *mutable* variable used during construction
                self.layer1 = self._make_layer(width, layers[0])
                self.layer2 = self._make_layer(width * 2, layers[1], stride=2)
                self.layer3 = self._make_layer(width * 4, layers[2], stride=2)
                self.layer4 = self._make_layer(width * 8, layers[3], stride=2)

                embed_dim = width * 32  # the ResNet feature dimension
                self.attnpool = AttentionPool2d(input_resolution // 32, embed_dim, heads, output_dim)

            def _make_layer(self, planes, blocks, stride=1):
                layers = [Bottleneck(self._inplanes, planes, stride)]

                self._inplanes = planes * Bottleneck.expansion
                for _ in range(1, blocks):
                    layers.append(Bottleneck(self._inplanes, planes))

                return nn.Sequential(*layers)

            def forward(self, x):
                def stem(x):
                    for conv, bn in [(self.conv1, self.bn1), (self.conv2, self.bn2), (self.conv3, self.bn3)]:
                        x = self.relu(bn(conv(x)))
                    x = self.avgpool(x)
                    return x

                x = x.type(self.conv1.weight.dtype)
                x = stem(x)
                x = self.layer1(x)
                x = self.layer2(x)
                x = self.layer3(x)
                x = self.layer4(x)
                x = self.attnpool(x)

                return x

        class LayerNorm(nn.LayerNorm):
            """Subclass torch's LayerNorm to handle fp16."""

            def forward(self, x: torch.Tensor):
                orig_type = x.dtype
                ret = super().forward(x.type(torch.float32))
                return ret.type(orig_type)

        class QuickGELU(nn.Module):
            def forward(self, x: torch.Tensor):
                return x * torch.sigmoid(1.702 * x)

        class ResidualAttentionBlock(nn.Module):
            def __init__(self, d_model: int, n_head: int, attn_mask: torch.Tensor = None):
                super().__init__()

                self.attn = nn.MultiheadAttention(d_model, n_head)
                self.ln_1 = LayerNorm(d_model)
                self.mlp = nn.Sequential(OrderedDict([
                    ("c_fc", nn.Linear(d_model, d_model * 4)),
                    ("gelu", QuickGELU()),
                    ("c_proj", nn.Linear(d_model * 4, d_model))
                ]))
                self.ln_2 = LayerNorm(d_model)
                self.attn_mask = attn_mask

            def attention(self, x: torch.Tensor):
                self.attn_mask = self.attn_mask.to(dtype=x.dtype, device=x.device) if self.attn_mask is not None else None
                return self.attn(x, x, x, need_weights=False, attn_mask=self.attn_mask)[0]

            def forward(self, x: torch.Tensor):
                x = x + self.attention(self.ln_1(x))
                x = x + self.mlp(self.ln_2(x))
                return x

        class Transformer(nn.Module):
            def __init__(self, width: int, layers: int, heads: int, attn_mask: torch.Tensor = None):
                super().__init__()
                self.width = width
                self.layers = layers
                self.resblocks = nn.Sequential(*[ResidualAttentionBlock(width, heads, attn_mask) for _ in range(layers)])

            def forward(self, x: torch.Tensor):
                return self.resblocks(x)

        class VisionTransformer(nn.Module):
            def __init__(self, input_resolution: int, patch_size: int, width: int, layers: int, heads: int, output_dim: int):
                super().__init__()
                self.input_resolution = input_resolution
                self.output_dim = output_dim
                self.conv1 = nn.Conv2d(in_channels=3, out_channels=width, kernel_size=patch_size, stride=patch_size, bias=False)

                scale = width ** -0.5
                self.class_embedding = nn.Parameter(scale * torch.randn(width))
                self.positional_embedding = nn.Parameter(scale * torch.randn((input_resolution // patch_size) ** 2 + 1, width))
                self.ln_pre = LayerNorm(width)

                self.transformer = Transformer(width, layers, heads)

                self.ln_post = LayerNorm(width)
                self.proj = nn.Parameter(scale * torch.randn(width, output_dim))

            def forward(self, x: torch.Tensor):
                x = self.conv1(x)  # shape = [*, width, grid, grid]
                x = x.reshape(x.shape[0], x.shape[1], -1)  # shape = [*, width, grid ** 2]
                x = x.permute(0, 2, 1)  # shape = [*, grid ** 2, width]
                x = torch.cat([self.class_embedding.to(x.dtype) + torch.zeros(x.shape[0], 1, x.shape[-1], dtype=x.dtype, device=x.device), x], dim=1)  # shape = [*, grid ** 2 + 1, width]
                x = x + self.positional_embedding.to(x.dtype)
                x = self.ln_pre(x)

                x = x.permute(1, 0, 2)  # NLD -> LND
                x = self.transformer(x)
                x = x.permute(1, 0, 2)  # LND -> NLD

                x = self.ln_post(x[:, 0, :])

                if self.proj is not None:
                    x = x @ self.proj

                return x

        class CLIP(nn.Module):
            def __init__(self,
                         embed_dim: int,
                         # vision
                         image_resolution: int,
                         vision_layers: Union[Tuple[int, int, int, int], int],
                         vision_width: int,
                         vision_patch_size: int,
                         # text
                         context_length: int,
                         vocab_size: int,
                         transformer_width: int,
                         transformer_heads: int,
                         transformer_layers: int
                         ):
                super().__init__()

                self.context_length = context_length

                if isinstance(vision_layers, (tuple, list)):
                    vision_heads = vision_width * 32 // 64
                    self.visual = ModifiedResNet(
                        layers=vision_layers,
                        output_dim=embed_dim,
                        heads=vision_heads,
                        input_resolution=image_resolution,
                        width=vision_width
                    )
                else:
                    vision_heads = vision_width // 64
                    self.visual = VisionTransformer(
                        input_resolution=image_resolution,
                        patch_size=vision_patch_size,
                        width=vision_width,
                        layers=vision_layers,
                        heads=vision_heads,
                        output_dim=embed_dim
                    )

                self.transformer = Transformer(
                    width=transformer_width,
                    layers=transformer_layers,
                    heads=transformer_heads,
                    attn_mask=self.build_attention_mask()
                )

                self.vocab_size = vocab_size
                self.token_embedding = nn.Embedding(vocab_size, transformer_width)
                self.positional_embedding = nn.Parameter(torch.empty(self.context_length, transformer_width))
                self.ln_final = LayerNorm(transformer_width)

                self.text_projection = nn.Parameter(torch.empty(transformer_width, embed_dim))
                self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))

            def build_attention_mask(self):
                # lazily create causal attention mask, with full attention between the vision tokens
                # pytorch uses additive attention mask; fill with -inf
                mask = torch.empty(self.context_length, self.context_length)
                mask.fill_(float("-inf"))
                mask.triu_(1)  # zero out the lower diagonal
                return mask

            @property
            def dtype(self):
                return self.visual.conv1.weight.dtype

            def encode_image(self, image):
                return self.visual(image.type(self.dtype))

            def encode_text(self, text):
                x = self.token_embedding(text).type(self.dtype)  # [batch_size, n_ctx, d_model]

                x = x + self.positional_embedding.type(self.dtype)
                x = x.permute(1, 0, 2)  # NLD -> LND
                x = self.transformer(x)
                x = x.permute(1, 0, 2)  # LND -> NLD
                x = self.ln_final(x).type(self.dtype)

                # x.shape = [batch_size, n_ctx, transformer.width]
                # take features from the eot embedding (eot_token is the highest number in each sequence)
                x = x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection

                return x

            def forward(self, image, text):
                image_features = self.encode_image(image)
                text_features = self.encode_text(text)

                # normalized features
                image_features = image_features / image_features.norm(dim=-1, keepdim=True)
                text_features = text_features / text_features.norm(dim=-1, keepdim=True)

                # cosine similarity as logits
                logit_scale = self.logit_scale.exp()
                logits_per_image = logit_scale * image_features @ text_features.t()
                logits_per_text = logits_per_image.t()

                # shape = [global_batch_size, global_batch_size]
                return logits_per_image, logits_per_text

        image = randn(torch, (2, 3, 64, 64), 1)
        text = torch.tensor([[1, 2, 9, 0, 0], [3, 9, 4, 0, 0]])
        labels = torch.arange(2)
        for name, vision_layers, vision_width, patch in (("resnet", (1, 1, 1, 1), 2, None),):
            model = init_params(torch, CLIP(4, 64, vision_layers, vision_width, patch, 5, 10, 8, 2, 1), 0)
            log(f"{name} params", sum(p.numel() for p in model.parameters()))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(2):
                logits_per_image, logits_per_text = model(image, text)
                loss = (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                log(f"{name} loss {step}", loss)
                log(f"{name} logits {step}", logits_per_image)
                log(f"{name} grad_fn", type(logits_per_text.grad_fn).__name__)
            log(f"{name} logit_scale", model.logit_scale)
            log(f"{name} text_projection", model.text_projection)
            model.eval()     # BatchNorm's running statistics
            with torch.no_grad():
                log(f"{name} eval image features", model.encode_image(image))
                log(f"{name} eval text features", model.encode_text(text))

    run_both(program)


# facebookresearch/barlowtwins main.py (off_diagonal's ``flatten()[:-1].view(n - 1, n + 1)[:, 1:]``,
# BarlowTwins.forward's in-place ``c.div_`` and ``torch.diagonal(c).add_(-1).pow_(2)`` on the
# cross-correlation matrix, an affine-free BatchNorm1d, nn.SyncBatchNorm.convert_sync_batchnorm on
# one process, the hand-written LARS optimizer with its weight-decay and adaptation filters, the
# weights/biases param groups and adjust_learning_rate's warmup/cosine schedule, the json stats
# line); resnet50 -> Linear + ReLU (torchvision is not a dependency), projector 8192-8192-8192 ->
# 8-8-8, batch 2048 -> 6, 4 steps; ``torch.distributed.all_reduce(c)`` is the identity on one
# process and is left out (no process group here); autocast/GradScaler and the data augmentations
# left out
def test_barlowtwins_lars():
    def program(torch, log):
        import json
        from types import SimpleNamespace
        nn, optim = torch.nn, torch.optim

        def adjust_learning_rate(args, optimizer, loader, step):
            max_steps = args.epochs * len(loader)
            warmup_steps = 10 * len(loader)
            base_lr = args.batch_size / 256
            if step < warmup_steps:
                lr = base_lr * step / warmup_steps
            else:
                step -= warmup_steps
                max_steps -= warmup_steps
                q = 0.5 * (1 + math.cos(math.pi * step / max_steps))
                end_lr = base_lr * 0.001
                lr = base_lr * q + end_lr * (1 - q)
            optimizer.param_groups[0]['lr'] = lr * args.learning_rate_weights
            optimizer.param_groups[1]['lr'] = lr * args.learning_rate_biases

        def off_diagonal(x):
            # return a flattened view of the off-diagonal elements of a square matrix
            n, m = x.shape
            assert n == m
            return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()

        class BarlowTwins(nn.Module):
            def __init__(self, args):
                super().__init__()
                self.args = args
                self.backbone = nn.Sequential(nn.Linear(5, 8), nn.ReLU())
                self.backbone.fc = nn.Identity()

                # projector
                sizes = [8] + list(map(int, args.projector.split('-')))
                layers = []
                for i in range(len(sizes) - 2):
                    layers.append(nn.Linear(sizes[i], sizes[i + 1], bias=False))
                    layers.append(nn.BatchNorm1d(sizes[i + 1]))
                    layers.append(nn.ReLU(inplace=True))
                layers.append(nn.Linear(sizes[-2], sizes[-1], bias=False))
                self.projector = nn.Sequential(*layers)

                # normalization layer for the representations z1 and z2
                self.bn = nn.BatchNorm1d(sizes[-1], affine=False)

            def forward(self, y1, y2):
                z1 = self.projector(self.backbone(y1))
                z2 = self.projector(self.backbone(y2))

                # empirical cross-correlation matrix
                c = self.bn(z1).T @ self.bn(z2)

                # sum the cross-correlation matrix between all gpus
                c.div_(self.args.batch_size)

                on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
                off_diag = off_diagonal(c).pow_(2).sum()
                loss = on_diag + self.args.lambd * off_diag
                return loss

        class LARS(optim.Optimizer):
            def __init__(self, params, lr, weight_decay=0, momentum=0.9, eta=0.001,
                         weight_decay_filter=None, lars_adaptation_filter=None):
                defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                eta=eta, weight_decay_filter=weight_decay_filter,
                                lars_adaptation_filter=lars_adaptation_filter)
                super().__init__(params, defaults)

            @torch.no_grad()
            def step(self):
                for g in self.param_groups:
                    for p in g['params']:
                        dp = p.grad

                        if dp is None:
                            continue

                        if g['weight_decay_filter'] is None or not g['weight_decay_filter'](p):
                            dp = dp.add(p, alpha=g['weight_decay'])

                        if g['lars_adaptation_filter'] is None or not g['lars_adaptation_filter'](p):
                            param_norm = torch.norm(p)
                            update_norm = torch.norm(dp)
                            one = torch.ones_like(param_norm)
                            q = torch.where(param_norm > 0.,
                                            torch.where(update_norm > 0,
                                                        (g['eta'] * param_norm / update_norm), one), one)
                            dp = dp.mul(q)

                        param_state = self.state[p]
                        if 'mu' not in param_state:
                            param_state['mu'] = torch.zeros_like(p)
                        mu = param_state['mu']
                        mu.mul_(g['momentum']).add_(dp)

                        p.add_(mu, alpha=-g['lr'])

        def exclude_bias_and_norm(p):
            return p.ndim == 1

        args = SimpleNamespace(epochs=2, batch_size=6, learning_rate_weights=0.2,
                               learning_rate_biases=0.0048, weight_decay=1e-6, lambd=0.0051,
                               projector='8-8-8', print_freq=1)
        model = init_params(torch, BarlowTwins(args), 3)
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        print(model.projector)
        param_weights = []
        param_biases = []
        for param in model.parameters():
            if param.ndim == 1:
                param_biases.append(param)
            else:
                param_weights.append(param)
        parameters = [{'params': param_weights}, {'params': param_biases}]
        optimizer = LARS(parameters, lr=0, weight_decay=args.weight_decay,
                         weight_decay_filter=exclude_bias_and_norm,
                         lars_adaptation_filter=exclude_bias_and_norm)
        loader = [((randn(torch, (6, 5), 10 + i), randn(torch, (6, 5), 20 + i)), None) for i in range(2)]
        for epoch in range(0, args.epochs):
            for step, ((y1, y2), _) in enumerate(loader, start=epoch * len(loader)):
                adjust_learning_rate(args, optimizer, loader, step)
                optimizer.zero_grad()
                loss = model.forward(y1, y2)
                loss.backward()
                optimizer.step()
                if step % args.print_freq == 0:
                    stats = dict(epoch=epoch, step=step,
                                 lr_weights=optimizer.param_groups[0]['lr'],
                                 lr_biases=optimizer.param_groups[1]['lr'],
                                 loss=round(loss.item(), 4))
                    print(json.dumps(stats))
                    log(f"loss {step}", loss)
        for name, p in model.named_parameters():
            log(name, p)
        log("running_var", model.bn.running_var)
        log("mu", optimizer.state[param_weights[0]]['mu'])

    run_both(program)


# openai/guided-diffusion guided_diffusion/nn.py (SiLU, GroupNorm32's ``super().forward(
# x.float()).type(x.dtype)``, conv_nd/linear/avg_pool_nd, zero_module/scale_module through
# ``p.detach().zero_()``, update_ema's ``targ.detach().mul_(rate).add_(src, alpha=1 - rate)``,
# mean_flat, timestep_embedding, and checkpoint's CheckpointFunction: a Function that runs its
# function under no_grad, then reruns it in backward under enable_grad on detached inputs and
# takes autograd.grad of it with allow_unused) driven by unet.py's ResBlock (emb_layers,
# in/out layers, the skip connection, use_scale_shift_norm) at 4 channels, GroupNorm(2, 4)
# in place of normalization()'s 32 groups, 6x6 images, checkpointing on and off
def test_guided_diffusion_nn_checkpoint():
    def program(torch, log):
        th, nn = torch, torch.nn

        # PyTorch 1.7 has SiLU, but we support PyTorch 1.5.
        class SiLU(nn.Module):
            def forward(self, x):
                return x * th.sigmoid(x)

        class GroupNorm32(nn.GroupNorm):
            def forward(self, x):
                return super().forward(x.float()).type(x.dtype)

        def conv_nd(dims, *args, **kwargs):
            if dims == 1:
                return nn.Conv1d(*args, **kwargs)
            elif dims == 2:
                return nn.Conv2d(*args, **kwargs)
            elif dims == 3:
                return nn.Conv3d(*args, **kwargs)
            raise ValueError(f"unsupported dimensions: {dims}")

        def linear(*args, **kwargs):
            return nn.Linear(*args, **kwargs)

        def update_ema(target_params, source_params, rate=0.99):
            for targ, src in zip(target_params, source_params):
                targ.detach().mul_(rate).add_(src, alpha=1 - rate)

        def zero_module(module):
            for p in module.parameters():
                p.detach().zero_()
            return module

        def scale_module(module, scale):
            for p in module.parameters():
                p.detach().mul_(scale)
            return module

        def mean_flat(tensor):
            return tensor.mean(dim=list(range(1, len(tensor.shape))))

        def normalization(channels):
            return GroupNorm32(2, channels)

        def timestep_embedding(timesteps, dim, max_period=10000):
            half = dim // 2
            freqs = th.exp(
                -math.log(max_period) * th.arange(start=0, end=half, dtype=th.float32) / half
            ).to(device=timesteps.device)
            args = timesteps[:, None].float() * freqs[None]
            embedding = th.cat([th.cos(args), th.sin(args)], dim=-1)
            if dim % 2:
                embedding = th.cat([embedding, th.zeros_like(embedding[:, :1])], dim=-1)
            return embedding

        def checkpoint(func, inputs, params, flag):
            if flag:
                args = tuple(inputs) + tuple(params)
                return CheckpointFunction.apply(func, len(inputs), *args)
            else:
                return func(*inputs)

        class CheckpointFunction(th.autograd.Function):
            @staticmethod
            def forward(ctx, run_function, length, *args):
                ctx.run_function = run_function
                ctx.input_tensors = list(args[:length])
                ctx.input_params = list(args[length:])
                with th.no_grad():
                    output_tensors = ctx.run_function(*ctx.input_tensors)
                return output_tensors

            @staticmethod
            def backward(ctx, *output_grads):
                ctx.input_tensors = [x.detach().requires_grad_(True) for x in ctx.input_tensors]
                with th.enable_grad():
                    # Fixes a bug where the first op in run_function modifies the
                    # Tensor storage in place, which is not allowed for detach()'d
                    # Tensors.
                    shallow_copies = [x.view_as(x) for x in ctx.input_tensors]
                    output_tensors = ctx.run_function(*shallow_copies)
                input_grads = th.autograd.grad(
                    output_tensors,
                    ctx.input_tensors + ctx.input_params,
                    output_grads,
                    allow_unused=True,
                )
                del ctx.input_tensors
                del ctx.input_params
                del output_tensors
                return (None, None) + input_grads

        # guided_diffusion/unet.py ResBlock (no up/down sampling, dropout 0)
        class ResBlock(nn.Module):
            def __init__(self, channels, emb_channels, dropout, out_channels=None,
                         use_conv=False, use_scale_shift_norm=False, dims=2, use_checkpoint=False):
                super().__init__()
                self.channels = channels
                self.emb_channels = emb_channels
                self.dropout = dropout
                self.out_channels = out_channels or channels
                self.use_conv = use_conv
                self.use_checkpoint = use_checkpoint
                self.use_scale_shift_norm = use_scale_shift_norm

                self.in_layers = nn.Sequential(
                    normalization(channels),
                    SiLU(),
                    conv_nd(dims, channels, self.out_channels, 3, padding=1),
                )
                self.h_upd = self.x_upd = nn.Identity()
                self.emb_layers = nn.Sequential(
                    SiLU(),
                    linear(
                        emb_channels,
                        2 * self.out_channels if use_scale_shift_norm else self.out_channels,
                    ),
                )
                self.out_layers = nn.Sequential(
                    normalization(self.out_channels),
                    SiLU(),
                    nn.Dropout(p=dropout),
                    zero_module(
                        conv_nd(dims, self.out_channels, self.out_channels, 3, padding=1)
                    ),
                )

                if self.out_channels == channels:
                    self.skip_connection = nn.Identity()
                elif use_conv:
                    self.skip_connection = conv_nd(dims, channels, self.out_channels, 3, padding=1)
                else:
                    self.skip_connection = conv_nd(dims, channels, self.out_channels, 1)

            def forward(self, x, emb):
                return checkpoint(
                    self._forward, (x, emb), self.parameters(), self.use_checkpoint
                )

            def _forward(self, x, emb):
                h = self.in_layers(x)
                emb_out = self.emb_layers(emb).type(h.dtype)
                while len(emb_out.shape) < len(h.shape):
                    emb_out = emb_out[..., None]
                if self.use_scale_shift_norm:
                    out_norm, out_rest = self.out_layers[0], self.out_layers[1:]
                    scale, shift = th.chunk(emb_out, 2, dim=1)
                    h = out_norm(h) * (1 + scale) + shift
                    h = out_rest(h)
                else:
                    h = h + emb_out
                    h = self.out_layers(h)
                return self.skip_connection(x) + h

        x = randn(torch, (2, 4, 6, 6), 0)
        t = torch.tensor([3, 250])
        for use_checkpoint in (False, True):
            for scale_shift in (False, True):
                tag = f"ckpt={use_checkpoint} ss={scale_shift}"
                block = init_params(torch, ResBlock(4, 8, 0.0, out_channels=6, use_conv=True,
                                                   use_scale_shift_norm=scale_shift,
                                                   use_checkpoint=use_checkpoint), 1)
                ema = [p.detach().clone() for p in block.parameters()]
                opt = torch.optim.AdamW(block.parameters(), lr=1e-2)
                xin = x.clone().requires_grad_(True)
                emb = timestep_embedding(t, 8)
                out = block(xin, emb)
                log(tag + " out", out)
                log(tag + " grad_fn", type(out.grad_fn).__name__ if not use_checkpoint else "ckpt")
                loss = mean_flat((out - 0.5) ** 2).mean()
                loss.backward()
                log(tag + " loss", loss)
                log(tag + " x grad", xin.grad)
                for name, p in block.named_parameters():
                    log(tag + " grad " + name, p.grad)
                opt.step()
                update_ema(ema, block.parameters(), rate=0.9)
                log(tag + " ema", ema[0])
                scale_module(block.emb_layers, 0.5)
                log(tag + " scaled", block.emb_layers[1].weight)
        log("odd embedding", timestep_embedding(torch.tensor([0.5, 7.0]), 5))

    run_both(program)


# facebookresearch/detr util/box_ops.py (box_cxcywh_to_xyxy/box_xyxy_to_cxcywh through unbind
# and stack, box_iou/generalized_box_iou with broadcast max/min and clamp(min=0), masks_to_boxes
# with meshgrid and masked_fill of ``~(masks.bool())``) and models/matcher.py (HungarianMatcher
# under @torch.no_grad: pad_sequence of the targets, torch.cdist(p=1), gather of the class
# probabilities, scipy's linear_sum_assignment on the tensor, torch.as_tensor of its numpy
# indices) with models/detr.py's SetCriterion loss_labels/loss_boxes (_get_src_permutation_idx's
# torch.full_like and cat, torch.full of the no-object class, cross_entropy with an empty_weight
# buffer, l1_loss(reduction='none'), the GIoU loss through torch.diag); torchvision's box_area
# written out; 2 images, 4 queries, 3 classes
def test_detr_hungarian_matcher():
    def program(torch, log):
        from scipy.optimize import linear_sum_assignment
        nn = torch.nn
        pad_sequence = torch.nn.utils.rnn.pad_sequence
        F = torch.nn.functional

        def box_area(boxes):   # torchvision.ops.boxes.box_area
            return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])

        def box_cxcywh_to_xyxy(x):
            x_c, y_c, w, h = x.unbind(-1)
            b = [(x_c - 0.5 * w), (y_c - 0.5 * h),
                 (x_c + 0.5 * w), (y_c + 0.5 * h)]
            return torch.stack(b, dim=-1)

        def box_xyxy_to_cxcywh(x):
            x0, y0, x1, y1 = x.unbind(-1)
            b = [(x0 + x1) / 2, (y0 + y1) / 2,
                 (x1 - x0), (y1 - y0)]
            return torch.stack(b, dim=-1)

        def box_iou(boxes1, boxes2):
            lt = torch.max(boxes1[..., None, :2], boxes2[..., None, :, :2])  # [..., N,M,2]
            rb = torch.min(boxes1[..., None, 2:], boxes2[..., None, :, 2:])  # [..., N,M,2]

            wh = (rb - lt).clamp(min=0)  # [..., N,M,2]
            inter = wh[..., 0] * wh[..., 1]  # [..., N,M]

            area1 = box_area(boxes1.view(-1, 4)).view(boxes1.shape[:-1])
            area2 = box_area(boxes2.view(-1, 4)).view(boxes2.shape[:-1])
            union = area1[..., None] + area2[..., None, :] - inter

            iou = inter / union
            return iou, union

        def generalized_box_iou(boxes1, boxes2):
            # degenerate boxes gives inf / nan results
            # so do an early check
            assert (boxes1[..., 2:] >= boxes1[..., :2]).all()
            assert (boxes2[..., 2:] >= boxes2[..., :2]).all()
            iou, union = box_iou(boxes1, boxes2)

            lt = torch.min(boxes1[..., None, :2], boxes2[..., None, :, :2])
            rb = torch.max(boxes1[..., None, 2:], boxes2[..., None, :, 2:])

            wh = (rb - lt).clamp(min=0)  # [..., N,M,2]
            area = wh[..., 0] * wh[..., 1]

            return iou - (area - union) / area

        def masks_to_boxes(masks):
            if masks.numel() == 0:
                return torch.zeros((0, 4), device=masks.device)

            h, w = masks.shape[-2:]

            y = torch.arange(0, h, dtype=torch.float)
            x = torch.arange(0, w, dtype=torch.float)
            y, x = torch.meshgrid(y, x, indexing="ij")

            x_mask = (masks * x.unsqueeze(0))
            x_max = x_mask.flatten(1).max(-1)[0]
            x_min = x_mask.masked_fill(~(masks.bool()), 1e8).flatten(1).min(-1)[0]

            y_mask = (masks * y.unsqueeze(0))
            y_max = y_mask.flatten(1).max(-1)[0]
            y_min = y_mask.masked_fill(~(masks.bool()), 1e8).flatten(1).min(-1)[0]

            return torch.stack([x_min, y_min, x_max, y_max], 1)

        class HungarianMatcher(nn.Module):
            def __init__(self, cost_class: float = 1, cost_bbox: float = 1, cost_giou: float = 1):
                super().__init__()
                self.cost_class = cost_class
                self.cost_bbox = cost_bbox
                self.cost_giou = cost_giou
                assert cost_class != 0 or cost_bbox != 0 or cost_giou != 0, "all costs cant be 0"

            @torch.no_grad()
            def forward(self, outputs, targets):
                if len(targets) == 1:
                    # This branch is just an optimization, not needed for correctness.
                    tgt_ids = targets[0]["labels"].unsqueeze(dim=0)
                    tgt_bbox = targets[0]["boxes"].unsqueeze(dim=0)
                else:
                    tgt_ids = pad_sequence(
                        [target["labels"] for target in targets],
                        batch_first=True,
                        padding_value=0
                    )  # (bs, mo)
                    tgt_bbox = pad_sequence(
                        [target["boxes"] for target in targets],
                        batch_first=True,
                        padding_value=0
                    )  # (bs, mo, 4)

                out_bbox = outputs["pred_boxes"]  # (bs, q, 4)

                # Compute the L1 cost between boxes
                cost_bbox = torch.cdist(out_bbox, tgt_bbox, p=1)  # (bs, q, mo)

                # Compute the giou cost betwen boxes
                out_bbox_xyxy = box_cxcywh_to_xyxy(out_bbox)
                tgt_bbox_xyxy = box_cxcywh_to_xyxy(tgt_bbox)
                giou = generalized_box_iou(
                    out_bbox_xyxy, tgt_bbox_xyxy)  # (bs, q, mo)

                out_prob = outputs["pred_logits"].softmax(-1)  # (bs, q, c)
                prob_class = torch.gather(
                    out_prob,
                    dim=2,
                    index=tgt_ids.unsqueeze(dim=1).expand(-1, out_prob.shape[1], -1)
                )  # (bs, q, mo)

                # Final cost matrix
                C = self.cost_bbox * cost_bbox - self.cost_giou * giou - self.cost_class * prob_class
                c = C.cpu()

                indices = [
                    linear_sum_assignment(c[i, :, :len(v["labels"])])
                    for i, v in enumerate(targets)
                ]
                return [
                    (
                        torch.as_tensor(i, dtype=torch.int64),
                        torch.as_tensor(j, dtype=torch.int64),
                    )
                    for i, j in indices
                ]

        # models/detr.py SetCriterion (loss_labels, loss_boxes)
        class SetCriterion(nn.Module):
            def __init__(self, num_classes, matcher, weight_dict, eos_coef, losses):
                super().__init__()
                self.num_classes = num_classes
                self.matcher = matcher
                self.weight_dict = weight_dict
                self.eos_coef = eos_coef
                self.losses = losses
                empty_weight = torch.ones(self.num_classes + 1)
                empty_weight[-1] = self.eos_coef
                self.register_buffer('empty_weight', empty_weight)

            def loss_labels(self, outputs, targets, indices, num_boxes, log=True):
                assert 'pred_logits' in outputs
                src_logits = outputs['pred_logits']

                idx = self._get_src_permutation_idx(indices)
                target_classes_o = torch.cat([t["labels"][J] for t, (_, J) in zip(targets, indices)])
                target_classes = torch.full(src_logits.shape[:2], self.num_classes,
                                            dtype=torch.int64, device=src_logits.device)
                target_classes[idx] = target_classes_o

                loss_ce = F.cross_entropy(src_logits.transpose(1, 2), target_classes, self.empty_weight)
                losses = {'loss_ce': loss_ce}
                return losses

            def loss_boxes(self, outputs, targets, indices, num_boxes):
                assert 'pred_boxes' in outputs
                idx = self._get_src_permutation_idx(indices)
                src_boxes = outputs['pred_boxes'][idx]
                target_boxes = torch.cat([t['boxes'][i] for t, (_, i) in zip(targets, indices)], dim=0)

                loss_bbox = F.l1_loss(src_boxes, target_boxes, reduction='none')

                losses = {}
                losses['loss_bbox'] = loss_bbox.sum() / num_boxes

                loss_giou = 1 - torch.diag(generalized_box_iou(
                    box_cxcywh_to_xyxy(src_boxes),
                    box_cxcywh_to_xyxy(target_boxes)))
                losses['loss_giou'] = loss_giou.sum() / num_boxes
                return losses

            def _get_src_permutation_idx(self, indices):
                # permute predictions following indices
                batch_idx = torch.cat([torch.full_like(src, i) for i, (src, _) in enumerate(indices)])
                src_idx = torch.cat([src for (src, _) in indices])
                return batch_idx, src_idx

            def forward(self, outputs, targets):
                indices = self.matcher(outputs, targets)
                num_boxes = sum(len(t["labels"]) for t in targets)
                num_boxes = torch.as_tensor([num_boxes], dtype=torch.float, device=next(iter(outputs.values())).device)
                num_boxes = torch.clamp(num_boxes, min=1).item()
                losses = {}
                for loss in self.losses:
                    losses.update(getattr(self, 'loss_' + loss)(outputs, targets, indices, num_boxes))
                return indices, losses

        rs = np.random.RandomState(5)
        head = init_params(torch, nn.Linear(6, 3 + 1 + 4), 2)
        feats = randn(torch, (2, 4, 6), 3)
        targets = [
            {"labels": torch.tensor([2, 0]), "boxes": torch.tensor(rs.uniform(0.3, 0.6, (2, 4)).astype(np.float32))},
            {"labels": torch.tensor([1, 1, 2]), "boxes": torch.tensor(rs.uniform(0.3, 0.6, (3, 4)).astype(np.float32))},
        ]
        criterion = SetCriterion(3, HungarianMatcher(1, 5, 2), {'loss_ce': 1, 'loss_bbox': 5, 'loss_giou': 2},
                                 0.1, ['labels', 'boxes'])
        opt = torch.optim.SGD(head.parameters(), lr=0.5)
        for step in range(3):
            out = head(feats)
            outputs = {"pred_logits": out[..., :4], "pred_boxes": out[..., 4:].sigmoid()}
            indices, losses = criterion(outputs, targets)
            weight_dict = criterion.weight_dict
            loss = sum(losses[k] * weight_dict[k] for k in losses.keys() if k in weight_dict)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log(f"indices {step}", [(i.tolist(), j.tolist(), str(i.dtype).split(".")[-1]) for i, j in indices])
            log(f"losses {step}", {k: v.item() for k, v in losses.items()})
        xyxy = box_cxcywh_to_xyxy(outputs["pred_boxes"])
        log("roundtrip", box_xyxy_to_cxcywh(xyxy))
        log("giou", generalized_box_iou(xyxy[0], xyxy[1]))
        masks = torch.tensor(rs.uniform(size=(3, 5, 6)) > 0.6)
        log("masks_to_boxes", masks_to_boxes(masks))
        log("empty", masks_to_boxes(torch.zeros(0, 5, 6)))

    run_both(program)


# meta-llama/llama llama/model.py (RMSNorm with ``_norm(x.float()).type_as(x)``,
# precompute_freqs_cis through torch.polar and torch.outer, apply_rotary_emb in complex64 through
# view_as_complex/view_as_real, the KV cache written by slice assignment after
# ``self.cache_k.to(xq)``, SwiGLU FeedForward, the -inf triu mask with ``diagonal=start_pos + 1``,
# Transformer.forward under @torch.inference_mode() returning the last position's logits),
# driven by generation.py's greedy loop (``prev_pos`` and ``cur_pos`` over a prompt); fairscale's
# ParallelEmbedding/ColumnParallelLinear/RowParallelLinear -> nn.Embedding/nn.Linear (the
# model-parallel world size is 1); dim 512 -> 8, 8 layers -> 2, 8 heads -> 2, vocab 11,
# multiple_of 256 -> 4, max_seq_len 8
def test_meta_llama_model_kv_cache():
    def program(torch, log):
        from dataclasses import dataclass
        from typing import Optional, Tuple
        nn, F = torch.nn, torch.nn.functional

        @dataclass
        class ModelArgs:
            dim: int = 512
            n_layers: int = 8
            n_heads: int = 8
            vocab_size: int = -1  # defined later by tokenizer
            multiple_of: int = 256  # make SwiGLU hidden layer size multiple of large power of 2
            norm_eps: float = 1e-5

            max_batch_size: int = 32
            max_seq_len: int = 2048

            is_gpu: bool = True

        class RMSNorm(torch.nn.Module):
            def __init__(self, dim: int, eps: float = 1e-6):
                super().__init__()
                self.eps = eps
                self.weight = nn.Parameter(torch.ones(dim))

            def _norm(self, x):
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

            def forward(self, x):
                output = self._norm(x.float()).type_as(x)
                return output * self.weight

        def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
            freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
            t = torch.arange(end, device=freqs.device)  # type: ignore
            freqs = torch.outer(t, freqs).float()  # type: ignore
            freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64
            return freqs_cis

        def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor):
            ndim = x.ndim
            assert 0 <= 1 < ndim
            assert freqs_cis.shape == (x.shape[1], x.shape[-1])
            shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
            return freqs_cis.view(*shape)

        def apply_rotary_emb(
            xq: torch.Tensor,
            xk: torch.Tensor,
            freqs_cis: torch.Tensor,
        ) -> Tuple[torch.Tensor, torch.Tensor]:
            xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
            xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
            freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
            xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
            xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
            return xq_out.type_as(xq), xk_out.type_as(xk)

        class Attention(nn.Module):
            def __init__(self, args: ModelArgs):
                super().__init__()

                self.n_local_heads = args.n_heads // 1
                self.head_dim = args.dim // args.n_heads

                self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
                self.wk = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
                self.wv = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
                self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

                self.cache_k = torch.zeros(
                    (args.max_batch_size, args.max_seq_len, self.n_local_heads, self.head_dim)
                )
                if args.is_gpu:
                    self.cache_k = self.cache_k.cuda()

                self.cache_v = torch.zeros(
                    (args.max_batch_size, args.max_seq_len, self.n_local_heads, self.head_dim)
                )
                if args.is_gpu:
                    self.cache_v = self.cache_v.cuda()

            def forward(self, x: torch.Tensor, start_pos: int, freqs_cis: torch.Tensor, mask: Optional[torch.Tensor]):
                bsz, seqlen, _ = x.shape
                xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)

                xq = xq.view(bsz, seqlen, self.n_local_heads, self.head_dim)
                xk = xk.view(bsz, seqlen, self.n_local_heads, self.head_dim)
                xv = xv.view(bsz, seqlen, self.n_local_heads, self.head_dim)

                xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)

                self.cache_k = self.cache_k.to(xq)
                self.cache_v = self.cache_v.to(xq)

                self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk
                self.cache_v[:bsz, start_pos : start_pos + seqlen] = xv

                keys = self.cache_k[:bsz, : start_pos + seqlen]
                values = self.cache_v[:bsz, : start_pos + seqlen]

                xq = xq.transpose(1, 2)
                keys = keys.transpose(1, 2)
                values = values.transpose(1, 2)
                scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
                if mask is not None:
                    scores = scores + mask  # (bs, n_local_heads, slen, cache_len + slen)
                scores = F.softmax(scores.float(), dim=-1).type_as(xq)
                output = torch.matmul(scores, values)  # (bs, n_local_heads, slen, head_dim)
                output = output.transpose(
                    1, 2
                ).contiguous().view(bsz, seqlen, -1)

                return self.wo(output)

        class FeedForward(nn.Module):
            def __init__(self, dim: int, hidden_dim: int, multiple_of: int):
                super().__init__()
                hidden_dim = int(2 * hidden_dim / 3)
                hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)

                self.w1 = nn.Linear(dim, hidden_dim, bias=False)
                self.w2 = nn.Linear(hidden_dim, dim, bias=False)
                self.w3 = nn.Linear(dim, hidden_dim, bias=False)

            def forward(self, x):
                return self.w2(F.silu(self.w1(x)) * self.w3(x))

        class TransformerBlock(nn.Module):
            def __init__(self, layer_id: int, args: ModelArgs):
                super().__init__()
                self.n_heads = args.n_heads
                self.dim = args.dim
                self.head_dim = args.dim // args.n_heads
                self.attention = Attention(args)
                self.feed_forward = FeedForward(
                    dim=args.dim, hidden_dim=4 * args.dim, multiple_of=args.multiple_of
                )
                self.layer_id = layer_id
                self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps)
                self.ffn_norm = RMSNorm(args.dim, eps=args.norm_eps)

            def forward(self, x: torch.Tensor, start_pos: int, freqs_cis: torch.Tensor, mask: Optional[torch.Tensor]):
                h = x + self.attention.forward(self.attention_norm(x), start_pos, freqs_cis, mask)
                out = h + self.feed_forward.forward(self.ffn_norm(h))
                return out

        class Transformer(nn.Module):
            def __init__(self, params: ModelArgs):
                super().__init__()
                self.params = params
                self.vocab_size = params.vocab_size
                self.n_layers = params.n_layers

                self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)

                self.layers = torch.nn.ModuleList()
                for layer_id in range(params.n_layers):
                    self.layers.append(TransformerBlock(layer_id, params))

                self.norm = RMSNorm(params.dim, eps=params.norm_eps)
                self.output = nn.Linear(params.dim, params.vocab_size, bias=False)

                self.freqs_cis = precompute_freqs_cis(
                    self.params.dim // self.params.n_heads, self.params.max_seq_len * 2
                )

            @torch.inference_mode()
            def forward(self, tokens: torch.Tensor, start_pos: int):
                _bsz, seqlen = tokens.shape
                h = self.tok_embeddings(tokens)
                self.freqs_cis = self.freqs_cis.to(h.device)
                freqs_cis = self.freqs_cis[start_pos : start_pos + seqlen]

                mask = None
                if seqlen > 1:
                    mask = torch.full((1, 1, seqlen, seqlen), float("-inf"), device=tokens.device)
                    mask = torch.triu(mask, diagonal=start_pos + 1).type_as(h)

                for layer in self.layers:
                    h = layer(h, start_pos, freqs_cis, mask)
                h = self.norm(h)
                output = self.output(h[:, -1, :])  # only compute last logits
                return output.float()

        params = ModelArgs(dim=8, n_layers=2, n_heads=2, vocab_size=11, multiple_of=4,
                           max_batch_size=2, max_seq_len=8, is_gpu=False)
        model = init_params(torch, Transformer(params), 4, scale=0.6)
        log("freqs_cis", torch.view_as_real(model.freqs_cis))
        log("freqs dtype", str(model.freqs_cis.dtype).split(".")[-1])
        # generation.py's loop: the whole prompt first, then one token at a time
        prompt_tokens = [[1, 5, 3], [2, 7, 7]]
        total_len = 6
        tokens = torch.full((2, total_len), 0).long()
        for k, t in enumerate(prompt_tokens):
            tokens[k, : len(t)] = torch.tensor(t).long()
        start_pos = 3
        prev_pos = 0
        for cur_pos in range(start_pos, total_len):
            logits = model.forward(tokens[:, prev_pos:cur_pos], prev_pos)
            log(f"logits {cur_pos}", logits)
            log(f"inference {cur_pos}", (logits.is_inference(), logits.requires_grad))
            next_token = torch.argmax(logits, dim=-1)
            next_token = next_token.reshape(-1)
            tokens[:, cur_pos] = next_token
            prev_pos = cur_pos
        log("tokens", tokens.tolist())
        log("cache_k", model.layers[0].attention.cache_k[:2, :total_len])
        # the same model on the whole sequence from position 0 matches the cached decode
        fresh = model.forward(tokens[:, :5], 0)
        log("uncached", fresh)

    run_both(program)


# openai/whisper whisper/model.py (LayerNorm/Linear/Conv1d subclasses casting weights to the
# input's dtype through ``_conv_forward``, sinusoids with ``[:, np.newaxis]`` indexing,
# MultiHeadAttention with and without scaled_dot_product_attention (disable_sdpa's class
# attribute switch), cross-attention, the -inf triu_ mask buffer with persistent=False, the
# alignment_heads bool buffer made by ``to_sparse()``, install_kv_cache_hooks' forward hooks that
# replace a module's output with the cat of the cached keys/values, keyed by the modules
# themselves) driven as decoding.py's greedy decoder does (the whole prompt, then
# ``tokens[:, -1:]`` with the cache, hooks removed at the end); dims tiny (4 mels, 6 frames,
# state 8, 2 heads, 1 audio and 2 text layers, vocab 11); one training step's cross-entropy
def test_openai_whisper_model_kv_cache_hooks():
    def program(torch, log):
        from contextlib import contextmanager
        from dataclasses import dataclass
        from typing import Dict, Iterable, Optional, Tuple
        F, Tensor, nn = torch.nn.functional, torch.Tensor, torch.nn
        scaled_dot_product_attention = torch.nn.functional.scaled_dot_product_attention
        SDPA_AVAILABLE = True

        @dataclass
        class ModelDimensions:
            n_mels: int
            n_audio_ctx: int
            n_audio_state: int
            n_audio_head: int
            n_audio_layer: int
            n_vocab: int
            n_text_ctx: int
            n_text_state: int
            n_text_head: int
            n_text_layer: int

        class LayerNorm(nn.LayerNorm):
            def forward(self, x: Tensor) -> Tensor:
                return super().forward(x.float()).type(x.dtype)

        class Linear(nn.Linear):
            def forward(self, x: Tensor) -> Tensor:
                return F.linear(
                    x,
                    self.weight.to(x.dtype),
                    None if self.bias is None else self.bias.to(x.dtype),
                )

        class Conv1d(nn.Conv1d):
            def _conv_forward(
                self, x: Tensor, weight: Tensor, bias: Optional[Tensor]
            ) -> Tensor:
                return super()._conv_forward(
                    x, weight.to(x.dtype), None if bias is None else bias.to(x.dtype)
                )

        def sinusoids(length, channels, max_timescale=10000):
            """Returns sinusoids for positional embedding"""
            assert channels % 2 == 0
            log_timescale_increment = np.log(max_timescale) / (channels // 2 - 1)
            inv_timescales = torch.exp(-log_timescale_increment * torch.arange(channels // 2))
            scaled_time = torch.arange(length)[:, np.newaxis] * inv_timescales[np.newaxis, :]
            return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)

        @contextmanager
        def disable_sdpa():
            prev_state = MultiHeadAttention.use_sdpa
            try:
                MultiHeadAttention.use_sdpa = False
                yield
            finally:
                MultiHeadAttention.use_sdpa = prev_state

        class MultiHeadAttention(nn.Module):
            use_sdpa = True

            def __init__(self, n_state: int, n_head: int):
                super().__init__()
                self.n_head = n_head
                self.query = Linear(n_state, n_state)
                self.key = Linear(n_state, n_state, bias=False)
                self.value = Linear(n_state, n_state)
                self.out = Linear(n_state, n_state)

            def forward(
                self,
                x: Tensor,
                xa: Optional[Tensor] = None,
                mask: Optional[Tensor] = None,
                kv_cache: Optional[dict] = None,
            ):
                q = self.query(x)

                if kv_cache is None or xa is None or self.key not in kv_cache:
                    # hooks, if installed (i.e. kv_cache is not None), will prepend the cached kv tensors;
                    # otherwise, perform key/value projections for self- or cross-attention as usual.
                    k = self.key(x if xa is None else xa)
                    v = self.value(x if xa is None else xa)
                else:
                    # for cross-attention, calculate keys and values once and reuse in subsequent calls.
                    k = kv_cache[self.key]
                    v = kv_cache[self.value]

                wv, qk = self.qkv_attention(q, k, v, mask)
                return self.out(wv), qk

            def qkv_attention(
                self, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None
            ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
                n_batch, n_ctx, n_state = q.shape
                scale = (n_state // self.n_head) ** -0.25
                q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
                k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
                v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)

                if SDPA_AVAILABLE and MultiHeadAttention.use_sdpa:
                    a = scaled_dot_product_attention(
                        q, k, v, is_causal=mask is not None and n_ctx > 1
                    )
                    out = a.permute(0, 2, 1, 3).flatten(start_dim=2)
                    qk = None
                else:
                    qk = (q * scale) @ (k * scale).transpose(-1, -2)
                    if mask is not None:
                        qk = qk + mask[:n_ctx, :n_ctx]
                    qk = qk.float()

                    w = F.softmax(qk, dim=-1).to(q.dtype)
                    out = (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2)
                    qk = qk.detach()

                return out, qk

        class ResidualAttentionBlock(nn.Module):
            def __init__(self, n_state: int, n_head: int, cross_attention: bool = False):
                super().__init__()

                self.attn = MultiHeadAttention(n_state, n_head)
                self.attn_ln = LayerNorm(n_state)

                self.cross_attn = (
                    MultiHeadAttention(n_state, n_head) if cross_attention else None
                )
                self.cross_attn_ln = LayerNorm(n_state) if cross_attention else None

                n_mlp = n_state * 4
                self.mlp = nn.Sequential(
                    Linear(n_state, n_mlp), nn.GELU(), Linear(n_mlp, n_state)
                )
                self.mlp_ln = LayerNorm(n_state)

            def forward(
                self,
                x: Tensor,
                xa: Optional[Tensor] = None,
                mask: Optional[Tensor] = None,
                kv_cache: Optional[dict] = None,
            ):
                x = x + self.attn(self.attn_ln(x), mask=mask, kv_cache=kv_cache)[0]
                if self.cross_attn:
                    x = x + self.cross_attn(self.cross_attn_ln(x), xa, kv_cache=kv_cache)[0]
                x = x + self.mlp(self.mlp_ln(x))
                return x

        class AudioEncoder(nn.Module):
            def __init__(
                self, n_mels: int, n_ctx: int, n_state: int, n_head: int, n_layer: int
            ):
                super().__init__()
                self.conv1 = Conv1d(n_mels, n_state, kernel_size=3, padding=1)
                self.conv2 = Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1)
                self.register_buffer("positional_embedding", sinusoids(n_ctx, n_state))

                self.blocks: Iterable[ResidualAttentionBlock] = nn.ModuleList(
                    [ResidualAttentionBlock(n_state, n_head) for _ in range(n_layer)]
                )
                self.ln_post = LayerNorm(n_state)

            def forward(self, x: Tensor):
                x = F.gelu(self.conv1(x))
                x = F.gelu(self.conv2(x))
                x = x.permute(0, 2, 1)

                assert x.shape[1:] == self.positional_embedding.shape, "incorrect audio shape"
                x = (x + self.positional_embedding).to(x.dtype)

                for block in self.blocks:
                    x = block(x)

                x = self.ln_post(x)
                return x

        class TextDecoder(nn.Module):
            def __init__(
                self, n_vocab: int, n_ctx: int, n_state: int, n_head: int, n_layer: int
            ):
                super().__init__()

                self.token_embedding = nn.Embedding(n_vocab, n_state)
                self.positional_embedding = nn.Parameter(torch.empty(n_ctx, n_state))

                self.blocks: Iterable[ResidualAttentionBlock] = nn.ModuleList(
                    [
                        ResidualAttentionBlock(n_state, n_head, cross_attention=True)
                        for _ in range(n_layer)
                    ]
                )
                self.ln = LayerNorm(n_state)

                mask = torch.empty(n_ctx, n_ctx).fill_(-np.inf).triu_(1)
                self.register_buffer("mask", mask, persistent=False)

            def forward(self, x: Tensor, xa: Tensor, kv_cache: Optional[dict] = None):
                offset = next(iter(kv_cache.values())).shape[1] if kv_cache else 0
                x = (
                    self.token_embedding(x)
                    + self.positional_embedding[offset : offset + x.shape[-1]]
                )
                x = x.to(xa.dtype)

                for block in self.blocks:
                    x = block(x, xa, mask=self.mask, kv_cache=kv_cache)

                x = self.ln(x)
                logits = (
                    x @ torch.transpose(self.token_embedding.weight.to(x.dtype), 0, 1)
                ).float()

                return logits

        class Whisper(nn.Module):
            def __init__(self, dims: ModelDimensions):
                super().__init__()
                self.dims = dims
                self.encoder = AudioEncoder(
                    self.dims.n_mels,
                    self.dims.n_audio_ctx,
                    self.dims.n_audio_state,
                    self.dims.n_audio_head,
                    self.dims.n_audio_layer,
                )
                self.decoder = TextDecoder(
                    self.dims.n_vocab,
                    self.dims.n_text_ctx,
                    self.dims.n_text_state,
                    self.dims.n_text_head,
                    self.dims.n_text_layer,
                )
                # use the last half among the decoder layers for time alignment by default;
                # to use a specific set of heads, see `set_alignment_heads()` below.
                all_heads = torch.zeros(
                    self.dims.n_text_layer, self.dims.n_text_head, dtype=torch.bool
                )
                all_heads[self.dims.n_text_layer // 2 :] = True
                self.register_buffer("alignment_heads", all_heads.to_sparse(), persistent=False)

            def embed_audio(self, mel: torch.Tensor):
                return self.encoder(mel)

            def logits(self, tokens: torch.Tensor, audio_features: torch.Tensor):
                return self.decoder(tokens, audio_features)

            def forward(
                self, mel: torch.Tensor, tokens: torch.Tensor
            ) -> Dict[str, torch.Tensor]:
                return self.decoder(tokens, self.encoder(mel))

            @property
            def device(self):
                return next(self.parameters()).device

            def install_kv_cache_hooks(self, cache: Optional[dict] = None):
                cache = {**cache} if cache is not None else {}
                hooks = []

                def save_to_cache(module, _, output):
                    if module not in cache or output.shape[1] > self.dims.n_text_ctx:
                        # save as-is, for the first token or cross attention
                        cache[module] = output
                    else:
                        cache[module] = torch.cat([cache[module], output], dim=1).detach()
                    return cache[module]

                def install_hooks(layer: nn.Module):
                    if isinstance(layer, MultiHeadAttention):
                        hooks.append(layer.key.register_forward_hook(save_to_cache))
                        hooks.append(layer.value.register_forward_hook(save_to_cache))

                self.decoder.apply(install_hooks)
                return cache, hooks

        dims = ModelDimensions(4, 3, 8, 2, 1, 11, 5, 8, 2, 2)
        model = init_params(torch, Whisper(dims), 6, scale=0.5)
        log("alignment_heads", (model.alignment_heads.is_sparse, model.alignment_heads.to_dense().tolist()))
        log("buffers", [n for n, _ in model.named_buffers()])
        log("state_dict keys", [k for k in model.state_dict() if "mask" in k or "heads" in k or "positional" in k])
        mel = randn(torch, (2, 4, 6), 7)
        tokens = torch.tensor([[1, 4, 2], [1, 3, 3]])
        logits = model(mel, tokens)
        with disable_sdpa():
            logits_nosdpa = model(mel, tokens)
        log("logits", logits)
        log("logits without sdpa", logits_nosdpa)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, 11), tokens[:, 1:].reshape(-1))
        loss.backward()
        log("loss", loss)
        log("grad conv1", model.encoder.conv1.weight.grad)
        log("grad pos", model.decoder.positional_embedding.grad)
        model.zero_grad()

        # decoding.py's greedy loop with the kv cache
        with torch.no_grad():
            audio_features = model.embed_audio(mel)
            for use_sdpa in (True, False):
                MultiHeadAttention.use_sdpa = use_sdpa
                kv_cache, hooks = model.install_kv_cache_hooks()
                toks = tokens.clone()
                for i in range(2):
                    inp = toks if not kv_cache else toks[:, -1:]
                    out = model.decoder(inp, audio_features, kv_cache=kv_cache)
                    next_tokens = out[:, -1].argmax(dim=-1)
                    toks = torch.cat([toks, next_tokens[:, None]], dim=-1)
                    log(f"sdpa={use_sdpa} step {i} logits", out[:, -1])
                    log(f"sdpa={use_sdpa} cache shapes {i}", sorted(tuple(v.shape) for v in kv_cache.values()))
                for hook in hooks:
                    hook.remove()
                log(f"sdpa={use_sdpa} tokens", toks.tolist())
                # without the cache, the whole sequence agrees with the cached logits
                log(f"sdpa={use_sdpa} full", model.decoder(toks[:, :-1], audio_features)[:, -1])
            MultiHeadAttention.use_sdpa = True

    run_both(program)


# karpathy/pytorch-made made.py (MaskedLinear with a registered 'mask' buffer set by
# ``self.mask.data.copy_(torch.from_numpy(mask.astype(np.uint8).T))``, MADE's masks from a
# seeded numpy RandomState per ordering, num_masks cycling, the __main__ check that output k
# depends only on earlier inputs through ``xtr.grad[0].numpy() != 0``) and run.py's run_epoch
# (``torch._C.set_grad_enabled(split == 'train')``, an AttributeError in torch 2.x, checked
# and followed by torch.set_grad_enabled; model.train()/eval() as expressions,
# update_masks every resample_every steps, ``xbhat += model(xb)`` averaged over samples,
# binary_cross_entropy_with_logits(size_average=False), Adam with weight_decay, StepLR stepped
# with an explicit epoch, the printed average losses); D 10 -> 6, hiddens [200, 220] -> [8, 9],
# binarized MNIST -> 12 numpy-made binary rows, B 100 -> 4, 2 epochs
def test_karpathy_pytorch_made():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Variable = torch.autograd.Variable

        class MaskedLinear(nn.Linear):
            """ same as Linear except has a configurable mask on the weights """

            def __init__(self, in_features, out_features, bias=True):
                super().__init__(in_features, out_features, bias)
                self.register_buffer('mask', torch.ones(out_features, in_features))

            def set_mask(self, mask):
                self.mask.data.copy_(torch.from_numpy(mask.astype(np.uint8).T))

            def forward(self, input):
                return F.linear(input, self.mask * self.weight, self.bias)

        class MADE(nn.Module):
            def __init__(self, nin, hidden_sizes, nout, num_masks=1, natural_ordering=False):
                super().__init__()
                self.nin = nin
                self.hidden_sizes = hidden_sizes

                # define a simple MLP neural net
                self.net = []
                hs = [nin] + hidden_sizes + [nout]
                for h0,h1 in zip(hs, hs[1:]):
                    self.net.extend([
                            MaskedLinear(h0, h1),
                            nn.ReLU(),
                        ])
                self.net.pop() # pop the last ReLU for the output layer
                self.net = nn.Sequential(*self.net)

                # seeds for orders/connectivities of the model ensemble
                self.natural_ordering = natural_ordering
                self.num_masks = num_masks
                self.seed = 0 # for cycling through num_masks orderings

                self.m = {}
                self.update_masks() # builds the initial self.m connectivity
                # note, we could also precompute the masks and cache them, but this
                # could get memory expensive for large number of masks.

            def update_masks(self):
                if self.m and self.num_masks == 1: return # only a single seed, skip for efficiency
                L = len(self.hidden_sizes)

                # fetch the next seed and construct a random stream
                rng = np.random.RandomState(self.seed)
                self.seed = (self.seed + 1) % self.num_masks

                # sample the order of the inputs and the connectivity of all neurons
                self.m[-1] = np.arange(self.nin) if self.natural_ordering else rng.permutation(self.nin)
                for l in range(L):
                    self.m[l] = rng.randint(self.m[l-1].min(), self.nin-1, size=self.hidden_sizes[l])

                # construct the mask matrices
                masks = [self.m[l-1][:,None] <= self.m[l][None,:] for l in range(L)]
                masks.append(self.m[L-1][:,None] < self.m[-1][None,:])

                # set the masks in all MaskedLinear layers
                layers = [l for l in self.net.modules() if isinstance(l, MaskedLinear)]
                for l,m in zip(layers, masks):
                    l.set_mask(m)

            def forward(self, x):
                return self.net(x)

        # the __main__ check of made.py
        D = 6
        rng = np.random.RandomState(14)
        x = (rng.rand(1, D) > 0.5).astype(np.float32)

        # check both natural ordering and not
        for natural in [True, False]:
            # check a few configurations of hidden units, depths 1,2,3
            for hiddens in [[8], [8, 9]]:

                print("checking hiddens %s with natural = %s" % (hiddens, natural))
                model = init_params(torch, MADE(D, hiddens, D, natural_ordering=natural), 1)

                # run backpropagation for each dimension to compute what other
                # dimensions it depends on.
                res = []
                for k in range(D):
                    xtr = Variable(torch.from_numpy(x), requires_grad=True)
                    xtrhat = model(xtr)
                    loss = xtrhat[0,k]
                    loss.backward()

                    depends = (xtr.grad[0].numpy() != 0).astype(np.uint8)
                    depends_ix = list(np.where(depends)[0])
                    isok = k not in depends_ix

                    res.append((len(depends_ix), k, depends_ix, isok))

                # pretty print the dependencies
                res.sort()
                for nl, k, ix, isok in res:
                    print("output %d depends on inputs: %30s : %s" % (k, ix, "OK" if isok else "NOTOK"))

        # run.py
        class Args:
            resample_every = 2
            samples = 2

        args = Args()
        data = (np.random.RandomState(3).rand(20, D) > 0.5).astype(np.float32)
        xtr = torch.from_numpy(data[:12])
        xte = torch.from_numpy(data[12:])

        def run_epoch(split, upto=None):
            try:
                torch._C.set_grad_enabled(split == 'train') # enable/disable grad for efficiency of forwarding test batches
            except AttributeError as e:     # torch._C has only _set_grad_enabled now
                log("torch._C.set_grad_enabled", type(e).__name__)
                torch.set_grad_enabled(split == 'train')
            model.train() if split == 'train' else model.eval()
            nsamples = 1 if split == 'train' else args.samples
            x = xtr if split == 'train' else xte
            N,D = x.size()
            B = 4 # batch size
            nsteps = N//B if upto is None else min(N//B, upto)
            lossfs = []
            for step in range(nsteps):

                # fetch the next batch of data
                xb = Variable(x[step*B:step*B+B])

                # get the logits, potentially run the same batch a number of times, resampling each time
                xbhat = torch.zeros_like(xb)
                for s in range(nsamples):
                    # perform order/connectivity-agnostic training by resampling the masks
                    if step % args.resample_every == 0 or split == 'test': # if in test, cycle masks every time
                        model.update_masks()
                    # forward the model
                    xbhat += model(xb)
                xbhat /= nsamples

                # evaluate the binary cross entropy loss
                loss = F.binary_cross_entropy_with_logits(xbhat, xb, size_average=False) / B
                lossf = loss.data.item()
                lossfs.append(lossf)

                # backward/update
                if split == 'train':
                    opt.zero_grad()
                    loss.backward()
                    opt.step()

            print("%s epoch average loss: %f" % (split, np.mean(lossfs)))

        hidden_list = list(map(int, "8,9".split(',')))
        model = init_params(torch, MADE(xtr.size(1), hidden_list, xtr.size(1), num_masks=3), 2)
        print("number of model parameters:",sum([np.prod(p.size()) for p in model.parameters()]))
        opt = torch.optim.Adam(model.parameters(), 1e-2, weight_decay=1e-4)
        scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.1)
        for epoch in range(2):
            print("epoch %d" % (epoch, ))
            scheduler.step(epoch)
            run_epoch('test', upto=1) # run only a few batches for approximate test accuracy
            run_epoch('train')
        torch.set_grad_enabled(True)
        log("lr", opt.param_groups[0]["lr"])
        log("mask", model.net[0].mask)
        log("weight", model.net[2].weight)

    run_both(program)


# karpathy/pytorch-normalizing-flows nflib/flows.py (AffineConstantFlow, ActNorm's data-dependent
# init through ``self.s.data = ...``, AffineHalfFlow's strided ``z[:, ::2] = z0`` writes into
# zeros, SlowMAF (kept, not run: its per-column writes are MAF.backward's), MAF over ARMLP
# (nflib/made.py's MADE), IAF by swapping forward/backward,
# Invertible1x1Conv's LU parametrisation (orthogonal_, Tensor.lu, lu_unpack, triu/tril/diag,
# torch.inverse), NormalizingFlow, NormalizingFlowModel with a MultivariateNormal prior) and
# nflib/nets.py, trained as the repo's nflow.ipynb does (``-torch.sum(prior_logprob + log_det)``,
# Adam with weight_decay), then inverted (backward) to check x is recovered and sampled from
# numpy-made prior draws; nh 24 -> 6, 128 samples -> 8, 1-2 flows of each kind, 2 steps. The
# LU of the random orthogonal start draws torch.randn; its permutation is replaced by a fixed
# one and the parameters by numpy-seeded values
def test_karpathy_normalizing_flows():
    def program(torch, log):
        F, nn = torch.nn.functional, torch.nn
        MultivariateNormal = torch.distributions.MultivariateNormal

        class MaskedLinear(nn.Linear):
            def __init__(self, in_features, out_features, bias=True):
                super().__init__(in_features, out_features, bias)
                self.register_buffer('mask', torch.ones(out_features, in_features))

            def set_mask(self, mask):
                self.mask.data.copy_(torch.from_numpy(mask.astype(np.uint8).T))

            def forward(self, input):
                return F.linear(input, self.mask * self.weight, self.bias)

        class MADE(nn.Module):
            def __init__(self, nin, hidden_sizes, nout, num_masks=1, natural_ordering=False):
                super().__init__()
                self.nin = nin
                self.nout = nout
                self.hidden_sizes = hidden_sizes
                assert self.nout % self.nin == 0, "nout must be integer multiple of nin"

                # define a simple MLP neural net
                self.net = []
                hs = [nin] + hidden_sizes + [nout]
                for h0,h1 in zip(hs, hs[1:]):
                    self.net.extend([
                            MaskedLinear(h0, h1),
                            nn.ReLU(),
                        ])
                self.net.pop() # pop the last ReLU for the output layer
                self.net = nn.Sequential(*self.net)

                # seeds for orders/connectivities of the model ensemble
                self.natural_ordering = natural_ordering
                self.num_masks = num_masks
                self.seed = 0 # for cycling through num_masks orderings

                self.m = {}
                self.update_masks() # builds the initial self.m connectivity

            def update_masks(self):
                if self.m and self.num_masks == 1: return # only a single seed, skip for efficiency
                L = len(self.hidden_sizes)

                # fetch the next seed and construct a random stream
                rng = np.random.RandomState(self.seed)
                self.seed = (self.seed + 1) % self.num_masks

                # sample the order of the inputs and the connectivity of all neurons
                self.m[-1] = np.arange(self.nin) if self.natural_ordering else rng.permutation(self.nin)
                for l in range(L):
                    self.m[l] = rng.randint(self.m[l-1].min(), self.nin-1, size=self.hidden_sizes[l])

                # construct the mask matrices
                masks = [self.m[l-1][:,None] <= self.m[l][None,:] for l in range(L)]
                masks.append(self.m[L-1][:,None] < self.m[-1][None,:])

                # handle the case where nout = nin * k, for integer k > 1
                if self.nout > self.nin:
                    k = int(self.nout / self.nin)
                    # replicate the mask across the other outputs
                    masks[-1] = np.concatenate([masks[-1]]*k, axis=1)

                # set the masks in all MaskedLinear layers
                layers = [l for l in self.net.modules() if isinstance(l, MaskedLinear)]
                for l,m in zip(layers, masks):
                    l.set_mask(m)

            def forward(self, x):
                return self.net(x)

        class LeafParam(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.p = nn.Parameter(torch.Tensor(1,n))

            def forward(self, x):
                return self.p.expand(x.size(0), self.p.size(1))

        class MLP(nn.Module):
            """ a simple 4-layer MLP """

            def __init__(self, nin, nout, nh):
                super().__init__()
                self.net = nn.Sequential(
                    nn.Linear(nin, nh),
                    nn.LeakyReLU(0.2),
                    nn.Linear(nh, nh),
                    nn.LeakyReLU(0.2),
                    nn.Linear(nh, nh),
                    nn.LeakyReLU(0.2),
                    nn.Linear(nh, nout),
                )
            def forward(self, x):
                return self.net(x)

        class ARMLP(nn.Module):
            """ a 4-layer auto-regressive MLP, wrapper around MADE net """

            def __init__(self, nin, nout, nh):
                super().__init__()
                self.net = MADE(nin, [nh, nh, nh], nout, num_masks=1, natural_ordering=True)

            def forward(self, x):
                return self.net(x)

        class AffineConstantFlow(nn.Module):
            def __init__(self, dim, scale=True, shift=True):
                super().__init__()
                self.s = nn.Parameter(torch.randn(1, dim, requires_grad=True)) if scale else None
                self.t = nn.Parameter(torch.randn(1, dim, requires_grad=True)) if shift else None

            def forward(self, x):
                s = self.s if self.s is not None else x.new_zeros(x.size())
                t = self.t if self.t is not None else x.new_zeros(x.size())
                z = x * torch.exp(s) + t
                log_det = torch.sum(s, dim=1)
                return z, log_det

            def backward(self, z):
                s = self.s if self.s is not None else z.new_zeros(z.size())
                t = self.t if self.t is not None else z.new_zeros(z.size())
                x = (z - t) * torch.exp(-s)
                log_det = torch.sum(-s, dim=1)
                return x, log_det

        class ActNorm(AffineConstantFlow):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.data_dep_init_done = False

            def forward(self, x):
                # first batch is used for init
                if not self.data_dep_init_done:
                    assert self.s is not None and self.t is not None # for now
                    self.s.data = (-torch.log(x.std(dim=0, keepdim=True))).detach()
                    self.t.data = (-(x * torch.exp(self.s)).mean(dim=0, keepdim=True)).detach()
                    self.data_dep_init_done = True
                return super().forward(x)

        class AffineHalfFlow(nn.Module):
            def __init__(self, dim, parity, net_class=MLP, nh=24, scale=True, shift=True):
                super().__init__()
                self.dim = dim
                self.parity = parity
                self.s_cond = lambda x: x.new_zeros(x.size(0), self.dim // 2)
                self.t_cond = lambda x: x.new_zeros(x.size(0), self.dim // 2)
                if scale:
                    self.s_cond = net_class(self.dim // 2, self.dim // 2, nh)
                if shift:
                    self.t_cond = net_class(self.dim // 2, self.dim // 2, nh)

            def forward(self, x):
                x0, x1 = x[:,::2], x[:,1::2]
                if self.parity:
                    x0, x1 = x1, x0
                s = self.s_cond(x0)
                t = self.t_cond(x0)
                z0 = x0 # untouched half
                z1 = torch.exp(s) * x1 + t # transform this half as a function of the other
                if self.parity:
                    z0, z1 = z1, z0
                z = torch.zeros((x.shape[0], self.dim))
                z[:,::2] = z0
                z[:,1::2] = z1
                log_det = torch.sum(s, dim=1)
                return z, log_det

            def backward(self, z):
                z0, z1 = z[:,::2], z[:,1::2]
                if self.parity:
                    z0, z1 = z1, z0
                s = self.s_cond(z0)
                t = self.t_cond(z0)
                x0 = z0 # this was the same
                x1 = (z1 - t) * torch.exp(-s) # reverse the transform on this half
                if self.parity:
                    x0, x1 = x1, x0
                x = torch.zeros((z.shape[0], self.dim))
                x[:,::2] = x0
                x[:,1::2] = x1
                log_det = torch.sum(-s, dim=1)
                return x, log_det

        class SlowMAF(nn.Module):
            def __init__(self, dim, parity, net_class=MLP, nh=24):
                super().__init__()
                self.dim = dim
                self.layers = nn.ModuleDict()
                self.layers[str(0)] = LeafParam(2)
                for i in range(1, dim):
                    self.layers[str(i)] = net_class(i, 2, nh)
                self.order = list(range(dim)) if parity else list(range(dim))[::-1]

            def forward(self, x):
                z = torch.zeros_like(x)
                log_det = torch.zeros(x.size(0))
                for i in range(self.dim):
                    st = self.layers[str(i)](x[:, :i])
                    s, t = st[:, 0], st[:, 1]
                    z[:, self.order[i]] = x[:, i] * torch.exp(s) + t
                    log_det += s
                return z, log_det

            def backward(self, z):
                x = torch.zeros_like(z)
                log_det = torch.zeros(z.size(0))
                for i in range(self.dim):
                    st = self.layers[str(i)](x[:, :i])
                    s, t = st[:, 0], st[:, 1]
                    x[:, i] = (z[:, self.order[i]] - t) * torch.exp(-s)
                    log_det += -s
                return x, log_det

        class MAF(nn.Module):
            def __init__(self, dim, parity, net_class=ARMLP, nh=24):
                super().__init__()
                self.dim = dim
                self.net = net_class(dim, dim*2, nh)
                self.parity = parity

            def forward(self, x):
                # here we see that we are evaluating all of z in parallel, so density estimation will be fast
                st = self.net(x)
                s, t = st.split(self.dim, dim=1)
                z = x * torch.exp(s) + t
                # reverse order, so if we stack MAFs correct things happen
                z = z.flip(dims=(1,)) if self.parity else z
                log_det = torch.sum(s, dim=1)
                return z, log_det

            def backward(self, z):
                # we have to decode the x one at a time, sequentially
                x = torch.zeros_like(z)
                log_det = torch.zeros(z.size(0))
                z = z.flip(dims=(1,)) if self.parity else z
                for i in range(self.dim):
                    st = self.net(x.clone()) # clone to avoid in-place op errors if using IAF
                    s, t = st.split(self.dim, dim=1)
                    x[:, i] = (z[:, i] - t[:, i]) * torch.exp(-s[:, i])
                    log_det += -s[:, i]
                return x, log_det

        class IAF(MAF):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.forward, self.backward = self.backward, self.forward

        class Invertible1x1Conv(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.dim = dim
                Q = torch.nn.init.orthogonal_(torch.randn(dim, dim))
                P, L, U = torch.lu_unpack(*Q.lu())
                self.P = P # remains fixed during optimization
                self.L = nn.Parameter(L) # lower triangular portion
                self.S = nn.Parameter(U.diag()) # "crop out" the diagonal to its own parameter
                self.U = nn.Parameter(torch.triu(U, diagonal=1)) # "crop out" diagonal, stored in S

            def _assemble_W(self):
                """ assemble W from its pieces (P, L, U, S) """
                L = torch.tril(self.L, diagonal=-1) + torch.diag(torch.ones(self.dim))
                U = torch.triu(self.U, diagonal=1)
                W = self.P @ L @ (U + torch.diag(self.S))
                return W

            def forward(self, x):
                W = self._assemble_W()
                z = x @ W
                log_det = torch.sum(torch.log(torch.abs(self.S)))
                return z, log_det

            def backward(self, z):
                W = self._assemble_W()
                W_inv = torch.inverse(W)
                x = z @ W_inv
                log_det = -torch.sum(torch.log(torch.abs(self.S)))
                return x, log_det

        class NormalizingFlow(nn.Module):
            """ A sequence of Normalizing Flows is a Normalizing Flow """

            def __init__(self, flows):
                super().__init__()
                self.flows = nn.ModuleList(flows)

            def forward(self, x):
                m, _ = x.shape
                log_det = torch.zeros(m)
                zs = [x]
                for flow in self.flows:
                    x, ld = flow.forward(x)
                    log_det += ld
                    zs.append(x)
                return zs, log_det

            def backward(self, z):
                m, _ = z.shape
                log_det = torch.zeros(m)
                xs = [z]
                for flow in self.flows[::-1]:
                    z, ld = flow.backward(z)
                    log_det += ld
                    xs.append(z)
                return xs, log_det

        class NormalizingFlowModel(nn.Module):
            """ A Normalizing Flow Model is a (prior, flow) pair """

            def __init__(self, prior, flows):
                super().__init__()
                self.prior = prior
                self.flow = NormalizingFlow(flows)

            def forward(self, x):
                zs, log_det = self.flow.forward(x)
                prior_logprob = self.prior.log_prob(zs[-1]).view(x.size(0), -1).sum(1)
                return zs, prior_logprob, log_det

            def backward(self, z):
                xs, log_det = self.flow.backward(z)
                return xs, log_det

            def sample(self, num_samples):
                z = self.prior.sample((num_samples,))
                xs, _ = self.flow.backward(z)
                return xs

        prior = MultivariateNormal(torch.zeros(2), torch.eye(2))
        x = randn(torch, (8, 2), 11)
        z_prior = randn(torch, (3, 2), 12)   # prior.sample((3,)) from numpy
        configs = {
            "realnvp": lambda: [AffineHalfFlow(dim=2, parity=i % 2, nh=6) for i in range(2)],
            "maf": lambda: [MAF(dim=2, parity=i % 2, nh=6) for i in range(2)],
            "iaf": lambda: [IAF(dim=2, parity=1, nh=6)],
            "glow": lambda: [ActNorm(dim=2), Invertible1x1Conv(dim=2), AffineHalfFlow(dim=2, parity=1, nh=6)],
        }
        for name, make in configs.items():
            flows = make()
            for f in flows:
                if isinstance(f, Invertible1x1Conv):
                    f.P = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
            model = NormalizingFlowModel(prior, flows)
            init_params(torch, model, 13)
            with torch.no_grad():
                for f in flows:
                    if isinstance(f, Invertible1x1Conv):
                        f.S.add_(torch.sign(f.S))   # keep W well away from singular
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-5)
            for k in range(2):
                zs, prior_logprob, log_det = model(x)
                logprob = prior_logprob + log_det
                loss = -torch.sum(logprob) # NLL

                model.zero_grad()
                loss.backward()
                optimizer.step()
                log(f"{name} loss {k}", loss)
            zs, prior_logprob, log_det = model(x)
            xs, back_log_det = model.backward(zs[-1].detach())
            log(f"{name} z", zs[-1])
            log(f"{name} recovered", xs[-1])
            log(f"{name} log_det", (log_det, back_log_det))
            with torch.no_grad():
                xs, _ = model.flow.backward(z_prior)
            log(f"{name} samples", xs[-1])
        log("prior log_prob", prior.log_prob(x))

    run_both(program)


# facebookresearch/dino main_dino.py (DINOLoss: the teacher temperature schedule from
# np.linspace/np.concatenate indexed by epoch, chunk of student and teacher outputs, the
# centred and sharpened teacher softmax, the cross-view loop, update_center under
# @torch.no_grad assigning a new tensor to the registered 'center' buffer; train_one_epoch's
# lr/weight-decay schedules written into param_groups, the EMA teacher update
# ``param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)``), utils.py (MultiCropWrapper's
# torch.cumsum of torch.unique_consecutive(return_counts=True) over crop sizes, list slicing by
# 0-d tensors, ``torch.cat((torch.empty(0), _out))``; cosine_scheduler, get_params_groups,
# clip_gradients through ``p.grad.data.norm(2)``/``mul_``, cancel_gradients_last_layer's
# ``p.grad = None``, the erfinv_-based trunc_normal_) and vision_transformer.py's DINOHead
# (weight_norm'd last layer with weight_g filled with 1 and frozen, F.normalize); the ViT
# backbone -> a conv + AdaptiveAvgPool2d net (crops of two sizes), out_dim 65536 -> 6, 2 global
# crops of 8x8 and 2 local of 4x4, batch 2, 2 epochs of 2 iterations, dist.all_reduce and the
# world size (1) left out, the random initialisations replaced by numpy-seeded parameters
def test_facebookresearch_dino():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        def _no_grad_trunc_normal_(tensor, mean, std, a, b):
            def norm_cdf(x):
                # Computes standard normal cumulative distribution function
                return (1. + math.erf(x / math.sqrt(2.))) / 2.

            with torch.no_grad():
                l = norm_cdf((a - mean) / std)
                u = norm_cdf((b - mean) / std)
                tensor.uniform_(2 * l - 1, 2 * u - 1)
                tensor.erfinv_()
                tensor.mul_(std * math.sqrt(2.))
                tensor.add_(mean)
                tensor.clamp_(min=a, max=b)
                return tensor

        def trunc_normal_(tensor, mean=0., std=1., a=-2., b=2.):
            return _no_grad_trunc_normal_(tensor, mean, std, a, b)

        def cosine_scheduler(base_value, final_value, epochs, niter_per_ep, warmup_epochs=0, start_warmup_value=0):
            warmup_schedule = np.array([])
            warmup_iters = warmup_epochs * niter_per_ep
            if warmup_epochs > 0:
                warmup_schedule = np.linspace(start_warmup_value, base_value, warmup_iters)

            iters = np.arange(epochs * niter_per_ep - warmup_iters)
            schedule = final_value + 0.5 * (base_value - final_value) * (1 + np.cos(np.pi * iters / len(iters)))

            schedule = np.concatenate((warmup_schedule, schedule))
            assert len(schedule) == epochs * niter_per_ep
            return schedule

        def clip_gradients(model, clip):
            norms = []
            for name, p in model.named_parameters():
                if p.grad is not None:
                    param_norm = p.grad.data.norm(2)
                    norms.append(param_norm.item())
                    clip_coef = clip / (param_norm + 1e-6)
                    if clip_coef < 1:
                        p.grad.data.mul_(clip_coef)
            return norms

        def cancel_gradients_last_layer(epoch, model, freeze_last_layer):
            if epoch >= freeze_last_layer:
                return
            for n, p in model.named_parameters():
                if "last_layer" in n:
                    p.grad = None

        def get_params_groups(model):
            regularized = []
            not_regularized = []
            for name, param in model.named_parameters():
                if not param.requires_grad:
                    continue
                # we do not regularize biases nor Norm parameters
                if name.endswith(".bias") or len(param.shape) == 1:
                    not_regularized.append(param)
                else:
                    regularized.append(param)
            return [{'params': regularized}, {'params': not_regularized, 'weight_decay': 0.}]

        class MultiCropWrapper(nn.Module):
            def __init__(self, backbone, head):
                super(MultiCropWrapper, self).__init__()
                # disable layers dedicated to ImageNet labels classification
                backbone.fc, backbone.head = nn.Identity(), nn.Identity()
                self.backbone = backbone
                self.head = head

            def forward(self, x):
                # convert to list
                if not isinstance(x, list):
                    x = [x]
                idx_crops = torch.cumsum(torch.unique_consecutive(
                    torch.tensor([inp.shape[-1] for inp in x]),
                    return_counts=True,
                )[1], 0)
                start_idx, output = 0, torch.empty(0).to(x[0].device)
                for end_idx in idx_crops:
                    _out = self.backbone(torch.cat(x[start_idx: end_idx]))
                    # The output is a tuple with XCiT model. See:
                    # https://github.com/facebookresearch/xcit/blob/master/xcit.py#L404-L405
                    if isinstance(_out, tuple):
                        _out = _out[0]
                    # accumulate outputs
                    output = torch.cat((output, _out))
                    start_idx = end_idx
                # Run the head forward on the concatenated features.
                return self.head(output)

        class DINOHead(nn.Module):
            def __init__(self, in_dim, out_dim, use_bn=False, norm_last_layer=True, nlayers=3, hidden_dim=2048, bottleneck_dim=256):
                super().__init__()
                nlayers = max(nlayers, 1)
                if nlayers == 1:
                    self.mlp = nn.Linear(in_dim, bottleneck_dim)
                else:
                    layers = [nn.Linear(in_dim, hidden_dim)]
                    if use_bn:
                        layers.append(nn.BatchNorm1d(hidden_dim))
                    layers.append(nn.GELU())
                    for _ in range(nlayers - 2):
                        layers.append(nn.Linear(hidden_dim, hidden_dim))
                        if use_bn:
                            layers.append(nn.BatchNorm1d(hidden_dim))
                        layers.append(nn.GELU())
                    layers.append(nn.Linear(hidden_dim, bottleneck_dim))
                    self.mlp = nn.Sequential(*layers)
                self.apply(self._init_weights)
                self.last_layer = nn.utils.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))
                self.last_layer.weight_g.data.fill_(1)
                if norm_last_layer:
                    self.last_layer.weight_g.requires_grad = False

            def _init_weights(self, m):
                if isinstance(m, nn.Linear):
                    trunc_normal_(m.weight, std=.02)
                    if isinstance(m, nn.Linear) and m.bias is not None:
                        nn.init.constant_(m.bias, 0)

            def forward(self, x):
                x = self.mlp(x)
                x = nn.functional.normalize(x, dim=-1, p=2)
                x = self.last_layer(x)
                return x

        class DINOLoss(nn.Module):
            def __init__(self, out_dim, ncrops, warmup_teacher_temp, teacher_temp,
                         warmup_teacher_temp_epochs, nepochs, student_temp=0.1,
                         center_momentum=0.9):
                super().__init__()
                self.student_temp = student_temp
                self.center_momentum = center_momentum
                self.ncrops = ncrops
                self.register_buffer("center", torch.zeros(1, out_dim))
                # we apply a warm up for the teacher temperature because
                # a too high temperature makes the training instable at the beginning
                self.teacher_temp_schedule = np.concatenate((
                    np.linspace(warmup_teacher_temp,
                                teacher_temp, warmup_teacher_temp_epochs),
                    np.ones(nepochs - warmup_teacher_temp_epochs) * teacher_temp
                ))

            def forward(self, student_output, teacher_output, epoch):
                student_out = student_output / self.student_temp
                student_out = student_out.chunk(self.ncrops)

                # teacher centering and sharpening
                temp = self.teacher_temp_schedule[epoch]
                teacher_out = F.softmax((teacher_output - self.center) / temp, dim=-1)
                teacher_out = teacher_out.detach().chunk(2)

                total_loss = 0
                n_loss_terms = 0
                for iq, q in enumerate(teacher_out):
                    for v in range(len(student_out)):
                        if v == iq:
                            # we skip cases where student and teacher operate on the same view
                            continue
                        loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                        total_loss += loss.mean()
                        n_loss_terms += 1
                total_loss /= n_loss_terms
                self.update_center(teacher_output)
                return total_loss

            @torch.no_grad()
            def update_center(self, teacher_output):
                batch_center = torch.sum(teacher_output, dim=0, keepdim=True)
                batch_center = batch_center / (len(teacher_output) * 1)

                # ema update
                self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)

        def backbone():
            return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())

        probe = torch.empty(200)
        trunc_normal_(probe, std=1.0, a=-0.5, b=0.5)
        log("trunc_normal_ within bounds", bool((probe.abs() <= 0.5).all()))
        student = MultiCropWrapper(backbone(), DINOHead(4, 6, hidden_dim=8, bottleneck_dim=5))
        teacher = MultiCropWrapper(backbone(), DINOHead(4, 6, hidden_dim=8, bottleneck_dim=5))
        init_params(torch, student, 21)
        teacher.load_state_dict(student.state_dict())
        for p in teacher.parameters():
            p.requires_grad = False
        log("student params", [n for n, p in student.named_parameters() if p.requires_grad])
        log("state_dict keys", list(student.state_dict().keys()))
        epochs, niter = 2, 2
        dino_loss = DINOLoss(6, 4, 0.04, 0.07, 1, epochs)
        params_groups = get_params_groups(student)
        optimizer = torch.optim.AdamW(params_groups)
        lr_schedule = cosine_scheduler(0.05, 1e-3, epochs, niter, warmup_epochs=1)
        wd_schedule = cosine_scheduler(0.04, 0.4, epochs, niter)
        momentum_schedule = cosine_scheduler(0.996, 1, epochs, niter)
        data = [[randn(torch, (2, 3, 8, 8), 30 + 4 * i + j) if j < 2 else randn(torch, (2, 3, 4, 4), 30 + 4 * i + j)
                 for j in range(4)] for i in range(niter)]
        for epoch in range(epochs):
            for it, images in enumerate(data):
                it = niter * epoch + it  # global training iteration
                for i, param_group in enumerate(optimizer.param_groups):
                    param_group["lr"] = lr_schedule[it]
                    if i == 0:  # only the first group is regularized
                        param_group["weight_decay"] = wd_schedule[it]
                teacher_output = teacher(images[:2])  # only the 2 global views pass through the teacher
                student_output = student(images)
                loss = dino_loss(student_output, teacher_output, epoch)
                if not math.isfinite(loss.item()):
                    raise AssertionError("Loss is {}, stopping training".format(loss.item()))
                optimizer.zero_grad()
                param_norms = None
                loss.backward()
                param_norms = clip_gradients(student, 0.05)
                cancel_gradients_last_layer(epoch, student, 1)
                log(f"last layer grad {it}", student.head.last_layer.weight_v.grad)
                optimizer.step()
                # EMA update for the teacher
                with torch.no_grad():
                    m = momentum_schedule[it]  # momentum parameter
                    for param_q, param_k in zip(student.parameters(), teacher.parameters()):
                        param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)
                log(f"loss {it}", loss)
                log(f"param_norms {it}", param_norms)
                log(f"center {it}", dino_loss.center)
        log("center is buffer", [n for n, _ in dino_loss.named_buffers()])
        log("teacher last layer v", teacher.head.last_layer.weight_v)
        log("student weight", student.head.last_layer.weight)

    run_both(program)


# facebookresearch/mae models_mae.py (MaskedAutoencoderViT: the fixed sin-cos pos_embed copied
# in through ``.data.copy_(torch.from_numpy(pos_embed).float().unsqueeze(0))``, patch_embed's
# weight re-initialised through a ``w.view([w.shape[0], -1])`` view, random_masking by argsort
# of noise / gather / a ones mask with ``mask[:, :len_keep] = 0`` unshuffled by gather,
# forward_decoder's mask_token.repeat and gather-unshuffle, patchify/unpatchify through
# ``reshape(shape=...)`` and einsum 'nchpwq->nhwpqc', forward_loss with norm_pix_loss) and
# util/pos_embed.py (get_2d_sincos_pos_embed in numpy; ``np.float`` -> np.float64, the removed
# alias); timm's PatchEmbed/Block written out as small modules, embed 1024 -> 8, depth 24 -> 1,
# decoder 512/8 -> 8/1, 2 heads, 3x8x8 images of 2x2 patches; ``torch.rand`` noise of
# random_masking -> numpy-made noise passed in; AdamW steps as main_pretrain's engine does
def test_facebookresearch_mae():
    def program(torch, log):
        from functools import partial
        nn = torch.nn

        def get_2d_sincos_pos_embed(embed_dim, grid_size, cls_token=False):
            grid_h = np.arange(grid_size, dtype=np.float32)
            grid_w = np.arange(grid_size, dtype=np.float32)
            grid = np.meshgrid(grid_w, grid_h)  # here w goes first
            grid = np.stack(grid, axis=0)

            grid = grid.reshape([2, 1, grid_size, grid_size])
            pos_embed = get_2d_sincos_pos_embed_from_grid(embed_dim, grid)
            if cls_token:
                pos_embed = np.concatenate([np.zeros([1, embed_dim]), pos_embed], axis=0)
            return pos_embed

        def get_2d_sincos_pos_embed_from_grid(embed_dim, grid):
            assert embed_dim % 2 == 0

            # use half of dimensions to encode grid_h
            emb_h = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[0])  # (H*W, D/2)
            emb_w = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[1])  # (H*W, D/2)

            emb = np.concatenate([emb_h, emb_w], axis=1) # (H*W, D)
            return emb

        def get_1d_sincos_pos_embed_from_grid(embed_dim, pos):
            assert embed_dim % 2 == 0
            omega = np.arange(embed_dim // 2, dtype=np.float64)
            omega /= embed_dim / 2.
            omega = 1. / 10000**omega  # (D/2,)

            pos = pos.reshape(-1)  # (M,)
            out = np.einsum('m,d->md', pos, omega)  # (M, D/2), outer product

            emb_sin = np.sin(out) # (M, D/2)
            emb_cos = np.cos(out) # (M, D/2)

            emb = np.concatenate([emb_sin, emb_cos], axis=1)  # (M, D)
            return emb

        class PatchEmbed(nn.Module):     # timm.models.vision_transformer.PatchEmbed
            def __init__(self, img_size, patch_size, in_chans, embed_dim):
                super().__init__()
                self.patch_size = (patch_size, patch_size)
                self.num_patches = (img_size // patch_size) ** 2
                self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

            def forward(self, x):
                return self.proj(x).flatten(2).transpose(1, 2)

        class Block(nn.Module):          # timm.models.vision_transformer.Block (Attention + Mlp)
            def __init__(self, dim, num_heads, mlp_ratio=4., qkv_bias=False, qk_scale=None, norm_layer=nn.LayerNorm):
                super().__init__()
                self.num_heads = num_heads
                self.scale = qk_scale or (dim // num_heads) ** -0.5
                self.norm1 = norm_layer(dim)
                self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
                self.proj = nn.Linear(dim, dim)
                self.norm2 = norm_layer(dim)
                self.mlp = nn.Sequential(nn.Linear(dim, int(dim * mlp_ratio)), nn.GELU(), nn.Linear(int(dim * mlp_ratio), dim))

            def attn(self, x):
                B, N, C = x.shape
                qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
                q, k, v = qkv.unbind(0)
                attn = (q @ k.transpose(-2, -1)) * self.scale
                attn = attn.softmax(dim=-1)
                x = (attn @ v).transpose(1, 2).reshape(B, N, C)
                return self.proj(x)

            def forward(self, x):
                x = x + self.attn(self.norm1(x))
                x = x + self.mlp(self.norm2(x))
                return x

        class MaskedAutoencoderViT(nn.Module):
            """ Masked Autoencoder with VisionTransformer backbone
            """
            def __init__(self, img_size=224, patch_size=16, in_chans=3,
                         embed_dim=1024, depth=24, num_heads=16,
                         decoder_embed_dim=512, decoder_depth=8, decoder_num_heads=16,
                         mlp_ratio=4., norm_layer=nn.LayerNorm, norm_pix_loss=False):
                super().__init__()

                # --------------------------------------------------------------------------
                # MAE encoder specifics
                self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
                num_patches = self.patch_embed.num_patches

                self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
                self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim), requires_grad=False)  # fixed sin-cos embedding

                self.blocks = nn.ModuleList([
                    Block(embed_dim, num_heads, mlp_ratio, qkv_bias=True, qk_scale=None, norm_layer=norm_layer)
                    for i in range(depth)])
                self.norm = norm_layer(embed_dim)
                # --------------------------------------------------------------------------

                # --------------------------------------------------------------------------
                # MAE decoder specifics
                self.decoder_embed = nn.Linear(embed_dim, decoder_embed_dim, bias=True)

                self.mask_token = nn.Parameter(torch.zeros(1, 1, decoder_embed_dim))

                self.decoder_pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, decoder_embed_dim), requires_grad=False)  # fixed sin-cos embedding

                self.decoder_blocks = nn.ModuleList([
                    Block(decoder_embed_dim, decoder_num_heads, mlp_ratio, qkv_bias=True, qk_scale=None, norm_layer=norm_layer)
                    for i in range(decoder_depth)])

                self.decoder_norm = norm_layer(decoder_embed_dim)
                self.decoder_pred = nn.Linear(decoder_embed_dim, patch_size**2 * in_chans, bias=True) # decoder to patch
                # --------------------------------------------------------------------------

                self.norm_pix_loss = norm_pix_loss

                self.initialize_weights()

            def initialize_weights(self):
                # initialization
                # initialize (and freeze) pos_embed by sin-cos embedding
                pos_embed = get_2d_sincos_pos_embed(self.pos_embed.shape[-1], int(self.patch_embed.num_patches**.5), cls_token=True)
                self.pos_embed.data.copy_(torch.from_numpy(pos_embed).float().unsqueeze(0))

                decoder_pos_embed = get_2d_sincos_pos_embed(self.decoder_pos_embed.shape[-1], int(self.patch_embed.num_patches**.5), cls_token=True)
                self.decoder_pos_embed.data.copy_(torch.from_numpy(decoder_pos_embed).float().unsqueeze(0))

                # initialize patch_embed like nn.Linear (instead of nn.Conv2d)
                w = self.patch_embed.proj.weight.data
                torch.nn.init.xavier_uniform_(w.view([w.shape[0], -1]))

                # timm's trunc_normal_(std=.02) is effectively normal_(std=0.02) as cutoff is too big (2.)
                torch.nn.init.normal_(self.cls_token, std=.02)
                torch.nn.init.normal_(self.mask_token, std=.02)

                # initialize nn.Linear and nn.LayerNorm
                self.apply(self._init_weights)

            def _init_weights(self, m):
                if isinstance(m, nn.Linear):
                    # we use xavier_uniform following official JAX ViT:
                    torch.nn.init.xavier_uniform_(m.weight)
                    if isinstance(m, nn.Linear) and m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.LayerNorm):
                    nn.init.constant_(m.bias, 0)
                    nn.init.constant_(m.weight, 1.0)

            def patchify(self, imgs):
                p = self.patch_embed.patch_size[0]
                assert imgs.shape[2] == imgs.shape[3] and imgs.shape[2] % p == 0

                h = w = imgs.shape[2] // p
                x = imgs.reshape(shape=(imgs.shape[0], 3, h, p, w, p))
                x = torch.einsum('nchpwq->nhwpqc', x)
                x = x.reshape(shape=(imgs.shape[0], h * w, p**2 * 3))
                return x

            def unpatchify(self, x):
                p = self.patch_embed.patch_size[0]
                h = w = int(x.shape[1]**.5)
                assert h * w == x.shape[1]

                x = x.reshape(shape=(x.shape[0], h, w, p, p, 3))
                x = torch.einsum('nhwpqc->nchpwq', x)
                imgs = x.reshape(shape=(x.shape[0], 3, h * p, h * p))
                return imgs

            def random_masking(self, x, mask_ratio, noise):
                N, L, D = x.shape  # batch, length, dim
                len_keep = int(L * (1 - mask_ratio))

                # noise in [0, 1]: torch.rand(N, L) made by numpy, passed in

                # sort noise for each sample
                ids_shuffle = torch.argsort(noise, dim=1)  # ascend: small is keep, large is remove
                ids_restore = torch.argsort(ids_shuffle, dim=1)

                # keep the first subset
                ids_keep = ids_shuffle[:, :len_keep]
                x_masked = torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, D))

                # generate the binary mask: 0 is keep, 1 is remove
                mask = torch.ones([N, L], device=x.device)
                mask[:, :len_keep] = 0
                # unshuffle to get the binary mask
                mask = torch.gather(mask, dim=1, index=ids_restore)

                return x_masked, mask, ids_restore

            def forward_encoder(self, x, mask_ratio, noise):
                # embed patches
                x = self.patch_embed(x)

                # add pos embed w/o cls token
                x = x + self.pos_embed[:, 1:, :]

                # masking: length -> length * mask_ratio
                x, mask, ids_restore = self.random_masking(x, mask_ratio, noise)

                # append cls token
                cls_token = self.cls_token + self.pos_embed[:, :1, :]
                cls_tokens = cls_token.expand(x.shape[0], -1, -1)
                x = torch.cat((cls_tokens, x), dim=1)

                # apply Transformer blocks
                for blk in self.blocks:
                    x = blk(x)
                x = self.norm(x)

                return x, mask, ids_restore

            def forward_decoder(self, x, ids_restore):
                # embed tokens
                x = self.decoder_embed(x)

                # append mask tokens to sequence
                mask_tokens = self.mask_token.repeat(x.shape[0], ids_restore.shape[1] + 1 - x.shape[1], 1)
                x_ = torch.cat([x[:, 1:, :], mask_tokens], dim=1)  # no cls token
                x_ = torch.gather(x_, dim=1, index=ids_restore.unsqueeze(-1).repeat(1, 1, x.shape[2]))  # unshuffle
                x = torch.cat([x[:, :1, :], x_], dim=1)  # append cls token

                # add pos embed
                x = x + self.decoder_pos_embed

                # apply Transformer blocks
                for blk in self.decoder_blocks:
                    x = blk(x)
                x = self.decoder_norm(x)

                # predictor projection
                x = self.decoder_pred(x)

                # remove cls token
                x = x[:, 1:, :]

                return x

            def forward_loss(self, imgs, pred, mask):
                target = self.patchify(imgs)
                if self.norm_pix_loss:
                    mean = target.mean(dim=-1, keepdim=True)
                    var = target.var(dim=-1, keepdim=True)
                    target = (target - mean) / (var + 1.e-6)**.5

                loss = (pred - target) ** 2
                loss = loss.mean(dim=-1)  # [N, L], mean loss per patch

                loss = (loss * mask).sum() / mask.sum()  # mean loss on removed patches
                return loss

            def forward(self, imgs, mask_ratio=0.75, noise=None):
                latent, mask, ids_restore = self.forward_encoder(imgs, mask_ratio, noise)
                pred = self.forward_decoder(latent, ids_restore)  # [N, L, p*p*3]
                loss = self.forward_loss(imgs, pred, mask)
                return loss, pred, mask

        model = MaskedAutoencoderViT(img_size=8, patch_size=2, embed_dim=8, depth=1, num_heads=2,
                                     decoder_embed_dim=8, decoder_depth=1, decoder_num_heads=2,
                                     mlp_ratio=2, norm_layer=partial(nn.LayerNorm, eps=1e-6), norm_pix_loss=True)
        log("pos_embed", model.pos_embed)
        log("trainable", [n for n, p in model.named_parameters() if p.requires_grad])
        init_params(torch, model, 40)
        imgs = randn(torch, (2, 3, 8, 8), 41)
        log("unpatchify(patchify)", model.unpatchify(model.patchify(imgs)))
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, betas=(0.9, 0.95),
                                      weight_decay=0.05)
        for step in range(2):
            noise = torch.tensor(np.random.RandomState(50 + step).rand(2, 16).astype(np.float32))
            loss, pred, mask = model(imgs, mask_ratio=0.75, noise=noise)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log(f"loss {step}", loss)
            log(f"mask {step}", mask)
            log(f"mask_token grad {step}", model.mask_token.grad)
            log(f"pos_embed grad {step}", model.pos_embed.grad)
        log("reconstruction", model.unpatchify(pred))

    run_both(program)


# facebookresearch/ConvNeXt models/convnext.py (Block: depthwise 7x7 Conv2d with groups=dim,
# permute to channels-last, the channels_last/channels_first LayerNorm module, Linear pointwise
# convs, the layer-scale gamma Parameter; ConvNeXt's downsample_layers/stages ModuleLists,
# ``[x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]``, the head scaled
# through ``.data.mul_(head_init_scale)``, global average pooling by ``x.mean([-2, -1])``);
# timm's trunc_normal_ -> nn.init.trunc_normal_, DropPath unused (drop_path_rate 0), depths
# [3, 3, 9, 3] -> [1, 0, 0, 1] (a Block at the first and last stage: the middle stages run the
# same code at other sizes, and every Block adds 9 parameters to AdamW's fused programs), dims
# [96..768] -> [4, 8, 8, 8], 32x32 images, 10 classes;
# trained as main.py's engine does (cross-entropy with label_smoothing, AdamW, a few steps)
def test_facebookresearch_convnext():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        trunc_normal_ = nn.init.trunc_normal_

        class Block(nn.Module):
            def __init__(self, dim, drop_path=0., layer_scale_init_value=1e-6):
                super().__init__()
                self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim) # depthwise conv
                self.norm = LayerNorm(dim, eps=1e-6)
                self.pwconv1 = nn.Linear(dim, 4 * dim) # pointwise/1x1 convs, implemented with linear layers
                self.act = nn.GELU()
                self.pwconv2 = nn.Linear(4 * dim, dim)
                self.gamma = nn.Parameter(layer_scale_init_value * torch.ones((dim)),
                                            requires_grad=True) if layer_scale_init_value > 0 else None
                self.drop_path = nn.Identity()

            def forward(self, x):
                input = x
                x = self.dwconv(x)
                x = x.permute(0, 2, 3, 1) # (N, C, H, W) -> (N, H, W, C)
                x = self.norm(x)
                x = self.pwconv1(x)
                x = self.act(x)
                x = self.pwconv2(x)
                if self.gamma is not None:
                    x = self.gamma * x
                x = x.permute(0, 3, 1, 2) # (N, H, W, C) -> (N, C, H, W)

                x = input + self.drop_path(x)
                return x

        class ConvNeXt(nn.Module):
            def __init__(self, in_chans=3, num_classes=1000,
                         depths=[3, 3, 9, 3], dims=[96, 192, 384, 768], drop_path_rate=0.,
                         layer_scale_init_value=1e-6, head_init_scale=1.,
                         ):
                super().__init__()

                self.downsample_layers = nn.ModuleList() # stem and 3 intermediate downsampling conv layers
                stem = nn.Sequential(
                    nn.Conv2d(in_chans, dims[0], kernel_size=4, stride=4),
                    LayerNorm(dims[0], eps=1e-6, data_format="channels_first")
                )
                self.downsample_layers.append(stem)
                for i in range(3):
                    downsample_layer = nn.Sequential(
                            LayerNorm(dims[i], eps=1e-6, data_format="channels_first"),
                            nn.Conv2d(dims[i], dims[i+1], kernel_size=2, stride=2),
                    )
                    self.downsample_layers.append(downsample_layer)

                self.stages = nn.ModuleList() # 4 feature resolution stages, each consisting of multiple residual blocks
                dp_rates=[x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
                cur = 0
                for i in range(4):
                    stage = nn.Sequential(
                        *[Block(dim=dims[i], drop_path=dp_rates[cur + j],
                        layer_scale_init_value=layer_scale_init_value) for j in range(depths[i])]
                    )
                    self.stages.append(stage)
                    cur += depths[i]

                self.norm = nn.LayerNorm(dims[-1], eps=1e-6) # final norm layer
                self.head = nn.Linear(dims[-1], num_classes)

                self.apply(self._init_weights)
                self.head.weight.data.mul_(head_init_scale)
                self.head.bias.data.mul_(head_init_scale)

            def _init_weights(self, m):
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    trunc_normal_(m.weight, std=.02)
                    nn.init.constant_(m.bias, 0)

            def forward_features(self, x):
                for i in range(4):
                    x = self.downsample_layers[i](x)
                    x = self.stages[i](x)
                return self.norm(x.mean([-2, -1])) # global average pooling, (N, C, H, W) -> (N, C)

            def forward(self, x):
                x = self.forward_features(x)
                x = self.head(x)
                return x

        class LayerNorm(nn.Module):
            def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(normalized_shape))
                self.bias = nn.Parameter(torch.zeros(normalized_shape))
                self.eps = eps
                self.data_format = data_format
                if self.data_format not in ["channels_last", "channels_first"]:
                    raise NotImplementedError
                self.normalized_shape = (normalized_shape, )

            def forward(self, x):
                if self.data_format == "channels_last":
                    return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
                elif self.data_format == "channels_first":
                    u = x.mean(1, keepdim=True)
                    s = (x - u).pow(2).mean(1, keepdim=True)
                    x = (x - u) / torch.sqrt(s + self.eps)
                    x = self.weight[:, None, None] * x + self.bias[:, None, None]
                    return x

        try:
            LayerNorm(4, data_format="channels_middle")
        except NotImplementedError as e:
            log("bad data_format", type(e).__name__)
        model = ConvNeXt(num_classes=10, depths=[1, 0, 0, 1], dims=[4, 8, 8, 8], drop_path_rate=0.1,
                         layer_scale_init_value=0.5, head_init_scale=0.5)
        log("head bias", model.head.bias)
        log("gamma", model.stages[0][0].gamma)
        init_params(torch, model, 60)
        criterion = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
        x = randn(torch, (2, 3, 32, 32), 61)
        y = torch.tensor([3, 7])
        for step in range(2):
            output = model(x)
            loss = criterion(output, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log(f"loss {step}", loss)
            log(f"output {step}", output)
        log("dwconv grad", model.stages[3][0].dwconv.weight.grad)
        log("stem norm grad", model.downsample_layers[0][1].weight.grad)

    run_both(program)


# openai/guided-diffusion guided_diffusion/losses.py (normal_kl with its ``th.tensor(x).to(tensor)``
# of Python-float log-variances, approx_standard_normal_cdf through tanh and th.pow,
# discretized_gaussian_log_likelihood's nested th.where and clamp(min=1e-12).log) and
# gaussian_diffusion.py (get_named_beta_schedule "linear" and "cosine" via betas_for_alpha_bar,
# the numpy alphas_cumprod/posterior arrays of GaussianDiffusion.__init__, _extract_into_tensor's
# ``th.from_numpy(arr).to(device=...)[timesteps].float()`` broadcast by ``res[..., None]`` and
# expand, q_sample, q_posterior_mean_variance, p_mean_variance's learned-range variance and
# epsilon prediction with clip_denoised, _vb_terms_bpd with ``th.where((t == 0), decoder_nll, kl)``)
# condensed to those methods; 1000 steps -> 10, a 2x3x4x4 batch, the model's output and the
# noise from numpy in place of a U-Net and th.randn_like
def test_guided_diffusion_gaussian_terms():
    def program(torch, log):
        th = torch

        def mean_flat(tensor):
            return tensor.mean(dim=list(range(1, len(tensor.shape))))

        def normal_kl(mean1, logvar1, mean2, logvar2):
            tensor = None
            for obj in (mean1, logvar1, mean2, logvar2):
                if isinstance(obj, th.Tensor):
                    tensor = obj
                    break
            assert tensor is not None, "at least one argument must be a Tensor"

            # Force variances to be Tensors. Broadcasting helps convert scalars to
            # Tensors, but it does not work for th.exp().
            logvar1, logvar2 = [
                x if isinstance(x, th.Tensor) else th.tensor(x).to(tensor)
                for x in (logvar1, logvar2)
            ]

            return 0.5 * (
                -1.0
                + logvar2
                - logvar1
                + th.exp(logvar1 - logvar2)
                + ((mean1 - mean2) ** 2) * th.exp(-logvar2)
            )

        def approx_standard_normal_cdf(x):
            return 0.5 * (1.0 + th.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * th.pow(x, 3))))

        def discretized_gaussian_log_likelihood(x, *, means, log_scales):
            assert x.shape == means.shape == log_scales.shape
            centered_x = x - means
            inv_stdv = th.exp(-log_scales)
            plus_in = inv_stdv * (centered_x + 1.0 / 255.0)
            cdf_plus = approx_standard_normal_cdf(plus_in)
            min_in = inv_stdv * (centered_x - 1.0 / 255.0)
            cdf_min = approx_standard_normal_cdf(min_in)
            log_cdf_plus = th.log(cdf_plus.clamp(min=1e-12))
            log_one_minus_cdf_min = th.log((1.0 - cdf_min).clamp(min=1e-12))
            cdf_delta = cdf_plus - cdf_min
            log_probs = th.where(
                x < -0.999,
                log_cdf_plus,
                th.where(x > 0.999, log_one_minus_cdf_min, th.log(cdf_delta.clamp(min=1e-12))),
            )
            assert log_probs.shape == x.shape
            return log_probs

        def get_named_beta_schedule(schedule_name, num_diffusion_timesteps):
            if schedule_name == "linear":
                # Linear schedule from Ho et al, extended to work for any number of
                # diffusion steps.
                scale = 1000 / num_diffusion_timesteps
                beta_start = scale * 0.0001
                beta_end = scale * 0.02
                return np.linspace(
                    beta_start, beta_end, num_diffusion_timesteps, dtype=np.float64
                )
            elif schedule_name == "cosine":
                return betas_for_alpha_bar(
                    num_diffusion_timesteps,
                    lambda t: math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2,
                )
            else:
                raise NotImplementedError(f"unknown beta schedule: {schedule_name}")

        def betas_for_alpha_bar(num_diffusion_timesteps, alpha_bar, max_beta=0.999):
            betas = []
            for i in range(num_diffusion_timesteps):
                t1 = i / num_diffusion_timesteps
                t2 = (i + 1) / num_diffusion_timesteps
                betas.append(min(1 - alpha_bar(t2) / alpha_bar(t1), max_beta))
            return np.array(betas)

        def _extract_into_tensor(arr, timesteps, broadcast_shape):
            res = th.from_numpy(arr).to(device=timesteps.device)[timesteps].float()
            while len(res.shape) < len(broadcast_shape):
                res = res[..., None]
            return res.expand(broadcast_shape)

        class GaussianDiffusion:
            def __init__(self, *, betas):
                betas = np.array(betas, dtype=np.float64)
                self.betas = betas
                self.num_timesteps = int(betas.shape[0])

                alphas = 1.0 - betas
                self.alphas_cumprod = np.cumprod(alphas, axis=0)
                self.alphas_cumprod_prev = np.append(1.0, self.alphas_cumprod[:-1])
                self.sqrt_alphas_cumprod = np.sqrt(self.alphas_cumprod)
                self.sqrt_one_minus_alphas_cumprod = np.sqrt(1.0 - self.alphas_cumprod)
                self.sqrt_recip_alphas_cumprod = np.sqrt(1.0 / self.alphas_cumprod)
                self.sqrt_recipm1_alphas_cumprod = np.sqrt(1.0 / self.alphas_cumprod - 1)
                self.posterior_variance = (
                    betas * (1.0 - self.alphas_cumprod_prev) / (1.0 - self.alphas_cumprod)
                )
                self.posterior_log_variance_clipped = np.log(
                    np.append(self.posterior_variance[1], self.posterior_variance[1:])
                )
                self.posterior_mean_coef1 = (
                    betas * np.sqrt(self.alphas_cumprod_prev) / (1.0 - self.alphas_cumprod)
                )
                self.posterior_mean_coef2 = (
                    (1.0 - self.alphas_cumprod_prev)
                    * np.sqrt(alphas)
                    / (1.0 - self.alphas_cumprod)
                )

            def q_sample(self, x_start, t, noise=None):
                assert noise.shape == x_start.shape
                return (
                    _extract_into_tensor(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start
                    + _extract_into_tensor(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape)
                    * noise
                )

            def q_posterior_mean_variance(self, x_start, x_t, t):
                assert x_start.shape == x_t.shape
                posterior_mean = (
                    _extract_into_tensor(self.posterior_mean_coef1, t, x_t.shape) * x_start
                    + _extract_into_tensor(self.posterior_mean_coef2, t, x_t.shape) * x_t
                )
                posterior_variance = _extract_into_tensor(self.posterior_variance, t, x_t.shape)
                posterior_log_variance_clipped = _extract_into_tensor(
                    self.posterior_log_variance_clipped, t, x_t.shape
                )
                return posterior_mean, posterior_variance, posterior_log_variance_clipped

            def p_mean_variance(self, model_output, x, t, clip_denoised=True):
                B, C = x.shape[:2]
                assert t.shape == (B,)
                assert model_output.shape == (B, C * 2, *x.shape[2:])
                model_output, model_var_values = th.split(model_output, C, dim=1)
                min_log = _extract_into_tensor(self.posterior_log_variance_clipped, t, x.shape)
                max_log = _extract_into_tensor(np.log(self.betas), t, x.shape)
                # The model_var_values is [-1, 1] for [min_var, max_var].
                frac = (model_var_values + 1) / 2
                model_log_variance = frac * max_log + (1 - frac) * min_log
                model_variance = th.exp(model_log_variance)

                def process_xstart(x):
                    if clip_denoised:
                        return x.clamp(-1, 1)
                    return x

                pred_xstart = process_xstart(self._predict_xstart_from_eps(x_t=x, t=t, eps=model_output))
                model_mean, _, _ = self.q_posterior_mean_variance(x_start=pred_xstart, x_t=x, t=t)
                return {
                    "mean": model_mean,
                    "variance": model_variance,
                    "log_variance": model_log_variance,
                    "pred_xstart": pred_xstart,
                }

            def _predict_xstart_from_eps(self, x_t, t, eps):
                assert x_t.shape == eps.shape
                return (
                    _extract_into_tensor(self.sqrt_recip_alphas_cumprod, t, x_t.shape) * x_t
                    - _extract_into_tensor(self.sqrt_recipm1_alphas_cumprod, t, x_t.shape) * eps
                )

            def _vb_terms_bpd(self, model_output, x_start, x_t, t, clip_denoised=True):
                true_mean, _, true_log_variance_clipped = self.q_posterior_mean_variance(
                    x_start=x_start, x_t=x_t, t=t
                )
                out = self.p_mean_variance(model_output, x_t, t, clip_denoised=clip_denoised)
                kl = normal_kl(
                    true_mean, true_log_variance_clipped, out["mean"], out["log_variance"]
                )
                kl = mean_flat(kl) / np.log(2.0)

                decoder_nll = -discretized_gaussian_log_likelihood(
                    x_start, means=out["mean"], log_scales=0.5 * out["log_variance"]
                )
                assert decoder_nll.shape == x_start.shape
                decoder_nll = mean_flat(decoder_nll) / np.log(2.0)

                # At the first timestep return the decoder NLL,
                # otherwise return KL(q(x_{t-1}|x_t,x_0) || p(x_{t-1}|x_t))
                output = th.where((t == 0), decoder_nll, kl)
                return {"output": output, "pred_xstart": out["pred_xstart"]}

        x_start = torch.tensor(np.random.RandomState(70).uniform(-1, 1, (2, 3, 4, 4)).astype(np.float32))
        noise = randn(torch, (2, 3, 4, 4), 71)
        for name in ("linear", "cosine"):
            diffusion = GaussianDiffusion(betas=get_named_beta_schedule(name, 10))
            for t in (torch.tensor([0, 6]), torch.tensor([9, 3])):
                x_t = diffusion.q_sample(x_start, t, noise=noise)
                model_output = randn(torch, (2, 6, 4, 4), 72 + int(t[1]), requires_grad=True, scale=0.5)
                terms = diffusion._vb_terms_bpd(model_output, x_start, x_t, t)
                terms["output"].sum().backward()
                log(f"{name} t={t.tolist()} x_t", x_t)
                log(f"{name} t={t.tolist()} vb", terms["output"])
                log(f"{name} t={t.tolist()} pred_xstart", terms["pred_xstart"])
                log(f"{name} t={t.tolist()} grad", model_output.grad)
        log("normal_kl of floats", normal_kl(torch.zeros(3), 0.0, torch.ones(3), 0.5))
        try:
            normal_kl(0.0, 0.0, 1.0, 1.0)
        except AssertionError as e:
            log("normal_kl of no tensor", str(e))

    run_both(program)


# facebookresearch/vicreg main_vicreg.py (VICReg.forward: mse_loss invariance term, the
# FullGatherLayer autograd Function returning a tuple from dist.all_gather and stacking its
# grads for dist.all_reduce in backward, the variance term through ``x.var(dim=0)`` and
# F.relu(1 - std), the covariance term through off_diagonal(...).pow_(2).sum().div(...);
# Projector built from the "8192-8192-8192" spec string; exclude_bias_and_norm) run on a real
# one-process gloo group (``file://`` rendezvous, world size 1, destroyed at the end);
# resnet50 -> Linear + ReLU, mlp "8192-8192-8192" -> "6-6-6", batch 2048 -> 5, 3 SGD steps in
# place of LARS (test_barlowtwins_lars runs the same LARS)
def test_facebookresearch_vicreg(tmp_path):
    def program(torch, log):
        import os
        from types import SimpleNamespace
        nn, F, dist = torch.nn, torch.nn.functional, torch.distributed

        class VICReg(nn.Module):
            def __init__(self, args):
                super().__init__()
                self.args = args
                self.num_features = int(args.mlp.split("-")[-1])
                self.backbone, self.embedding = nn.Sequential(nn.Linear(4, 7), nn.ReLU()), 7
                self.projector = Projector(args, self.embedding)

            def forward(self, x, y):
                x = self.projector(self.backbone(x))
                y = self.projector(self.backbone(y))

                repr_loss = F.mse_loss(x, y)

                x = torch.cat(FullGatherLayer.apply(x), dim=0)
                y = torch.cat(FullGatherLayer.apply(y), dim=0)
                x = x - x.mean(dim=0)
                y = y - y.mean(dim=0)

                std_x = torch.sqrt(x.var(dim=0) + 0.0001)
                std_y = torch.sqrt(y.var(dim=0) + 0.0001)
                std_loss = torch.mean(F.relu(1 - std_x)) / 2 + torch.mean(F.relu(1 - std_y)) / 2

                cov_x = (x.T @ x) / (self.args.batch_size - 1)
                cov_y = (y.T @ y) / (self.args.batch_size - 1)
                cov_loss = off_diagonal(cov_x).pow_(2).sum().div(
                    self.num_features
                ) + off_diagonal(cov_y).pow_(2).sum().div(self.num_features)

                loss = (
                    self.args.sim_coeff * repr_loss
                    + self.args.std_coeff * std_loss
                    + self.args.cov_coeff * cov_loss
                )
                return loss

        def Projector(args, embedding):
            mlp_spec = f"{embedding}-{args.mlp}"
            layers = []
            f = list(map(int, mlp_spec.split("-")))
            for i in range(len(f) - 2):
                layers.append(nn.Linear(f[i], f[i + 1]))
                layers.append(nn.BatchNorm1d(f[i + 1]))
                layers.append(nn.ReLU(True))
            layers.append(nn.Linear(f[-2], f[-1], bias=False))
            return nn.Sequential(*layers)

        def exclude_bias_and_norm(p):
            return p.ndim == 1

        def off_diagonal(x):
            n, m = x.shape
            assert n == m
            return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()

        class FullGatherLayer(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                output = [torch.zeros_like(x) for _ in range(dist.get_world_size())]
                dist.all_gather(output, x)
                return tuple(output)

            @staticmethod
            def backward(ctx, *grads):
                all_gradients = torch.stack(grads)
                dist.all_reduce(all_gradients)
                return all_gradients[dist.get_rank()]

        store = os.path.join(str(tmp_path), f"store_{torch.__name__}")
        dist.init_process_group(backend="gloo", init_method=f"file://{store}", world_size=1, rank=0)
        try:
            log("world", (dist.is_initialized(), dist.get_world_size(), dist.get_rank(), dist.get_backend()))
            args = SimpleNamespace(mlp="6-6-6", batch_size=5, sim_coeff=25.0, std_coeff=25.0, cov_coeff=1.0)
            model = init_params(torch, VICReg(args), 80)
            log("no decay", [n for n, p in model.named_parameters() if exclude_bias_and_norm(p)])
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            for step in range(3):
                x, y = randn(torch, (5, 4), 81 + step), randn(torch, (5, 4), 91 + step)
                loss = model.forward(x, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                log(f"loss {step}", loss)
            log("projector grad", model.projector[0].weight.grad)
            log("running_mean", model.projector[1].running_mean)
        finally:
            dist.destroy_process_group()
        log("after destroy", dist.is_initialized())

    run_both(program)


# huggingface/transformers src/transformers/models/t5/modeling_t5.py (T5Attention's
# _relative_position_bucket staticmethod: ``relative_buckets = 0`` grown by ``+=`` of a bool
# tensor cast with ``.to(torch.long)``, torch.abs, ``-torch.min(x, torch.zeros_like(x))`` for
# the causal case, the log-spaced buckets whose ``torch.log`` of 0 is -inf before the long cast
# and torch.where picks the exact branch there, torch.min against full_like; compute_bias's
# arange broadcasting and ``permute([2, 0, 1]).unsqueeze(0)`` of the bias embedding; the
# unscaled ``matmul(q, k.transpose(3, 2)) + position_bias`` scores; T5LayerNorm's float32
# variance, rsqrt and the ``self.weight.dtype in [torch.float16, torch.bfloat16]`` cast);
# condensed to those pieces at d_model 8, 2 heads, 8 buckets, max_distance 16, lengths 5 and 3,
# bidirectional (encoder) and causal (decoder), with one backward to the bias embedding
def test_huggingface_t5_relative_position_bias():
    def program(torch, log):
        nn = torch.nn

        class T5LayerNorm(nn.Module):
            def __init__(self, hidden_size, eps=1e-6):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(hidden_size))
                self.variance_epsilon = eps

            def forward(self, hidden_states):
                variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
                hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)

                # convert into half-precision if necessary
                if self.weight.dtype in [torch.float16, torch.bfloat16]:
                    hidden_states = hidden_states.to(self.weight.dtype)

                return self.weight * hidden_states

        class T5Attention(nn.Module):
            def __init__(self, d_model, n_heads, is_decoder, has_relative_attention_bias,
                         relative_attention_num_buckets=32, relative_attention_max_distance=128):
                super().__init__()
                self.is_decoder = is_decoder
                self.has_relative_attention_bias = has_relative_attention_bias
                self.relative_attention_num_buckets = relative_attention_num_buckets
                self.relative_attention_max_distance = relative_attention_max_distance
                self.d_model = d_model
                self.n_heads = n_heads
                self.key_value_proj_dim = d_model // n_heads
                self.inner_dim = self.n_heads * self.key_value_proj_dim
                self.q = nn.Linear(self.d_model, self.inner_dim, bias=False)
                self.k = nn.Linear(self.d_model, self.inner_dim, bias=False)
                self.v = nn.Linear(self.d_model, self.inner_dim, bias=False)
                self.o = nn.Linear(self.inner_dim, self.d_model, bias=False)
                if self.has_relative_attention_bias:
                    self.relative_attention_bias = nn.Embedding(self.relative_attention_num_buckets, self.n_heads)

            @staticmethod
            def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
                relative_buckets = 0
                if bidirectional:
                    num_buckets //= 2
                    relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
                    relative_position = torch.abs(relative_position)
                else:
                    relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
                # now relative_position is in the range [0, inf)

                # half of the buckets are for exact increments in positions
                max_exact = num_buckets // 2
                is_small = relative_position < max_exact

                # The other half of the buckets are for logarithmically bigger bins in positions up to max_distance
                relative_position_if_large = max_exact + (
                    torch.log(relative_position.float() / max_exact)
                    / math.log(max_distance / max_exact)
                    * (num_buckets - max_exact)
                ).to(torch.long)
                relative_position_if_large = torch.min(
                    relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
                )

                relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
                return relative_buckets

            def compute_bias(self, query_length, key_length, device=None):
                """Compute binned relative position bias"""
                if device is None:
                    device = self.relative_attention_bias.weight.device
                context_position = torch.arange(query_length, dtype=torch.long, device=device)[:, None]
                memory_position = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
                relative_position = memory_position - context_position  # shape (query_length, key_length)
                relative_position_bucket = self._relative_position_bucket(
                    relative_position,  # shape (query_length, key_length)
                    bidirectional=(not self.is_decoder),
                    num_buckets=self.relative_attention_num_buckets,
                    max_distance=self.relative_attention_max_distance,
                )
                values = self.relative_attention_bias(relative_position_bucket)  # shape (query_length, key_length, num_heads)
                values = values.permute([2, 0, 1]).unsqueeze(0)  # shape (1, num_heads, query_length, key_length)
                return values

            def forward(self, hidden_states, position_bias=None):
                batch_size, seq_length = hidden_states.shape[:2]

                def shape(states):
                    return states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

                def unshape(states):
                    return states.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)

                query_states = shape(self.q(hidden_states))
                key_states = shape(self.k(hidden_states))
                value_states = shape(self.v(hidden_states))
                scores = torch.matmul(query_states, key_states.transpose(3, 2))
                if position_bias is None:
                    position_bias = self.compute_bias(seq_length, seq_length, device=scores.device)
                scores += position_bias
                attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
                attn_output = unshape(torch.matmul(attn_weights, value_states))
                return self.o(attn_output), position_bias

        buckets = {}
        for bidirectional in (True, False):
            rel = torch.arange(-20, 21)[None, :]
            buckets[bidirectional] = T5Attention._relative_position_bucket(rel, bidirectional=bidirectional,
                                                                           num_buckets=8, max_distance=16)
            log(f"buckets bidirectional={bidirectional}", buckets[bidirectional].tolist())
            log(f"buckets dtype {bidirectional}", str(buckets[bidirectional].dtype).split(".")[-1])
        for is_decoder, length in ((False, 5), (True, 3)):
            attn = init_params(torch, T5Attention(8, 2, is_decoder, True, 8, 16), 100)
            norm = T5LayerNorm(8)
            h = randn(torch, (2, length, 8), 101)
            out, bias = attn(norm(h))
            out2, _ = attn(norm(h), position_bias=bias)
            (out * out2).sum().backward()
            log(f"decoder={is_decoder} bias", bias)
            log(f"decoder={is_decoder} out", out)
            log(f"decoder={is_decoder} bias grad", attn.relative_attention_bias.weight.grad)
        norm16 = T5LayerNorm(8).to(torch.bfloat16)
        y = norm16(randn(torch, (2, 8), 102))
        log("bf16 layer norm", (str(y.dtype).split(".")[-1], y.float()))

    run_both(program)


# huggingface/pytorch-image-models timm/models/_manipulate.py (checkpoint_seq: a Sequential's
# children checkpointed ``every`` modules at a time through torch.utils.checkpoint.checkpoint
# with use_reentrant and preserve_rng_state, ``flatten`` through itertools.chain.from_iterable,
# ``skip_last`` running the tail plainly; named_apply walking named_children depth first) and
# timm's ``_init_weights(module, name, head_init_scale)`` pattern that scales a 'head.' Linear
# through ``.data.mul_``; a 3-stage conv net of Sequential stages at 4 channels on 2x3x6x6
# inputs, checkpointed with use_reentrant False and True, with and without an input that
# requires grad (the reentrant variant then leaves every parameter's .grad None, with torch's
# warning), against the same model run plainly
def test_timm_checkpoint_seq_named_apply():
    def program(torch, log):
        import warnings
        from itertools import chain
        nn = torch.nn
        checkpoint = torch.utils.checkpoint.checkpoint

        def named_apply(fn, module, name='', depth_first=True, include_root=False):
            if not depth_first and include_root:
                fn(module=module, name=name)
            for child_name, child_module in module.named_children():
                child_name = '.'.join((name, child_name)) if name else child_name
                named_apply(fn=fn, module=child_module, name=child_name, depth_first=depth_first, include_root=True)
            if depth_first and include_root:
                fn(module=module, name=name)
            return module

        def checkpoint_seq(
                functions,
                x,
                every=1,
                flatten=False,
                skip_last=False,
                preserve_rng_state=True,
                use_reentrant=False,
        ):
            def run_function(start, end, functions):
                def forward(_x):
                    for j in range(start, end + 1):
                        _x = functions[j](_x)
                    return _x
                return forward

            if isinstance(functions, torch.nn.Sequential):
                functions = functions.children()
            if flatten:
                functions = chain.from_iterable(functions)
            if not isinstance(functions, (tuple, list)):
                functions = tuple(functions)

            num_checkpointed = len(functions)
            if skip_last:
                num_checkpointed -= 1
            end = -1
            for start in range(0, num_checkpointed, every):
                end = min(start + every - 1, num_checkpointed - 1)
                x = checkpoint(run_function(start, end, functions), x,
                               use_reentrant=use_reentrant,
                               preserve_rng_state=preserve_rng_state)
            if skip_last:
                return run_function(end + 1, len(functions) - 1, functions)(x)
            return x

        def _init_weights(module, name=None, head_init_scale=1.0):
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)
                if name and 'head.' in name:
                    module.weight.data.mul_(head_init_scale)
                    module.bias.data.add_(head_init_scale)

        def stage(c):
            return nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.GELU())

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Conv2d(3, 4, 1)
                self.stages = nn.Sequential(stage(4), stage(4), stage(4))
                self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 36, 3))
                self.grad_checkpointing = False
                self.kw = {}

            def forward(self, x):
                x = self.stem(x)
                if self.grad_checkpointing:
                    x = checkpoint_seq(self.stages, x, **self.kw)
                else:
                    x = self.stages(x)
                return self.head(x)

        seen = []
        named_apply(lambda module, name: seen.append(name), Net(), include_root=True)
        log("named_apply order", seen)
        x = randn(torch, (2, 3, 6, 6), 110)
        configs = [("plain", False, {}, False),
                   ("every=2 skip_last", True, dict(every=2, skip_last=True), False),
                   ("flatten", True, dict(flatten=True), False),
                   ("reentrant", True, dict(use_reentrant=True, every=3), True),
                   ("reentrant, input without grad", True, dict(use_reentrant=True), False)]
        for tag, ckpt, kw, input_grad in configs:
            model = init_params(torch, Net(), 111)
            named_apply(lambda module, name: _init_weights(module, name, 0.5), model)
            model.grad_checkpointing, model.kw = ckpt, kw
            xin = x.clone().requires_grad_(input_grad)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                out = model(xin)
                out.pow(2).sum().backward()
            log(f"{tag} out", out)
            log(f"{tag} grads", [None if p.grad is None else p.grad for p in model.parameters()])
            log(f"{tag} input grad", xin.grad)
            log(f"{tag} running_mean", model.stages[1][1].running_mean)
            log(f"{tag} requires grad warning", any("requires_grad" in str(m.message) for m in w))

    run_both(program)
