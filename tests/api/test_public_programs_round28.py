"""A twenty-eighth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), chosen for their
data movement (views, strided and negative slices, advanced indexing, in-place writes into
views, ``roll``, ``cat``/``stack``/``repeat``, ``meshgrid``), which tracegrad evaluates on the
host for its first calls (NOTE [host first calls]):

- microsoft/Swin-Transformer: ``models/swin_transformer.py``'s ``window_partition`` /
  ``window_reverse`` (6-D ``view`` + ``permute`` + ``contiguous``), ``WindowAttention`` (the
  relative-position index built from ``stack(meshgrid(...))``, ``flatten``, broadcast
  differences, in-place ``+=``/``*=`` into ``[:, :, 0]`` slices of a permuted copy, and the bias
  table gathered with that index), ``SwinTransformerBlock`` (the shifted-window mask written
  through negative ``slice`` objects, ``masked_fill``, cyclic ``roll`` both ways),
  ``PatchMerging`` (``0::2``/``1::2`` strided slices + ``cat``) and the ``SwinTransformer`` head
  (``AdaptiveAvgPool1d`` over ``transpose``), trained with ``optimizer.py``'s nesterov SGD;
- eriklindernoren/PyTorch-YOLOv3: ``pytorchyolo/models.py``'s config-driven ``Darknet`` (conv /
  BN / leaky, maxpool with ``ZeroPad2d``, nearest upsample, route ``cat``, shortcut, two
  ``YOLOLayer``s with their 5-D ``view``/``permute``, and eval-mode decoding with ``_make_grid``
  and in-place writes into ``y[..., 0:2]``/``y[..., 2:4]``) and ``pytorchyolo/utils/loss.py``'s
  ``build_targets`` (``repeat`` of the targets per anchor, ``gain[2:6] = tensor(shape)[[3, 2, 3,
  2]]``, boolean-mask filtering, ``.T`` unpacking, ``clamp_`` with tensor bounds) and
  ``compute_loss`` (the prediction subset gathered with four index tensors, CIoU, ``tobj``
  written with ``index_put`` and ``t[range(n), tcls] = cp``), trained with SGD;
- lucidrains/local-attention: ``local_attention/local_attention.py`` before its einops rewrite
  (``look_around``'s ``F.pad`` with a pad value and ``cat`` of shifted slices, ``merge_dims`` /
  ``expand_dim``, Shaw's relative-position ``shift`` through ``view`` + zero-padding ``cat`` +
  slicing, ``autopad``, in-place ``masked_fill_`` with position, causal, self-token and
  bool-product input masks, ``~mask``), trained with SGD.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why.
"""
import math
from functools import reduce
from itertools import chain
from operator import mul

import numpy as np
import pytest
from parity import init_params, printer, run_both

torch = pytest.importorskip("torch")


# ---- microsoft/Swin-Transformer ----------------------------------------------------------------
def _swin_module(torch):
    """models/swin_transformer.py at the structure the repository writes it (timm's
    ``to_2tuple``/``DropPath`` replaced by a local tuple helper and ``Identity``
    (drop_path_rate=0); the fused CUDA window kernels are off; the ``trunc_normal_`` weight init
    is left out: ``init_params`` overwrites every parameter, and each distinct shape it draws for
    costs an XLA compile)."""
    nn = torch.nn

    def to_2tuple(x):
        return (x, x)

    class Mlp(nn.Module):
        def __init__(self, in_features, hidden_features=None, out_features=None,
                     act_layer=nn.GELU, drop=0.0):
            super().__init__()
            out_features = out_features or in_features
            hidden_features = hidden_features or in_features
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.act = act_layer()
            self.fc2 = nn.Linear(hidden_features, out_features)
            self.drop = nn.Dropout(drop)

        def forward(self, x):
            x = self.drop(self.act(self.fc1(x)))
            return self.drop(self.fc2(x))

    def window_partition(x, window_size):
        B, H, W, C = x.shape
        x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
        return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)

    def window_reverse(windows, window_size, H, W):
        B = int(windows.shape[0] / (H * W / window_size / window_size))
        x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
        return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)

    class WindowAttention(nn.Module):
        def __init__(self, dim, window_size, num_heads, qkv_bias=True, qk_scale=None,
                     attn_drop=0.0, proj_drop=0.0):
            super().__init__()
            self.dim = dim
            self.window_size = window_size
            self.num_heads = num_heads
            head_dim = dim // num_heads
            self.scale = qk_scale or head_dim ** -0.5
            self.relative_position_bias_table = nn.Parameter(
                torch.zeros((2 * window_size[0] - 1) * (2 * window_size[1] - 1), num_heads))
            coords_h = torch.arange(self.window_size[0])
            coords_w = torch.arange(self.window_size[1])
            coords = torch.stack(torch.meshgrid([coords_h, coords_w]))
            coords_flatten = torch.flatten(coords, 1)
            relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
            relative_coords = relative_coords.permute(1, 2, 0).contiguous()
            relative_coords[:, :, 0] += self.window_size[0] - 1
            relative_coords[:, :, 1] += self.window_size[1] - 1
            relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
            relative_position_index = relative_coords.sum(-1)
            self.register_buffer("relative_position_index", relative_position_index)
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)
            self.softmax = nn.Softmax(dim=-1)

        def forward(self, x, mask=None):
            B_, N, C = x.shape
            qkv = (self.qkv(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads)
                   .permute(2, 0, 3, 1, 4))
            q, k, v = qkv[0], qkv[1], qkv[2]
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            relative_position_bias = self.relative_position_bias_table[
                self.relative_position_index.view(-1)].view(
                self.window_size[0] * self.window_size[1],
                self.window_size[0] * self.window_size[1], -1)
            relative_position_bias = relative_position_bias.permute(2, 0, 1).contiguous()
            attn = attn + relative_position_bias.unsqueeze(0)
            if mask is not None:
                nW = mask.shape[0]
                attn = (attn.view(B_ // nW, nW, self.num_heads, N, N)
                        + mask.unsqueeze(1).unsqueeze(0))
                attn = attn.view(-1, self.num_heads, N, N)
                attn = self.softmax(attn)
            else:
                attn = self.softmax(attn)
            attn = self.attn_drop(attn)
            x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
            return self.proj_drop(self.proj(x))

    class SwinTransformerBlock(nn.Module):
        def __init__(self, dim, input_resolution, num_heads, window_size=7, shift_size=0,
                     mlp_ratio=4.0, qkv_bias=True, qk_scale=None, drop=0.0, attn_drop=0.0,
                     drop_path=0.0, act_layer=nn.GELU, norm_layer=nn.LayerNorm):
            super().__init__()
            self.dim = dim
            self.input_resolution = input_resolution
            self.num_heads = num_heads
            self.window_size = window_size
            self.shift_size = shift_size
            self.mlp_ratio = mlp_ratio
            if min(self.input_resolution) <= self.window_size:
                self.shift_size = 0
                self.window_size = min(self.input_resolution)
            assert 0 <= self.shift_size < self.window_size, "shift_size must in 0-window_size"
            self.norm1 = norm_layer(dim)
            self.attn = WindowAttention(dim, window_size=to_2tuple(self.window_size),
                                        num_heads=num_heads, qkv_bias=qkv_bias,
                                        qk_scale=qk_scale, attn_drop=attn_drop, proj_drop=drop)
            self.drop_path = nn.Identity()
            self.norm2 = norm_layer(dim)
            self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio),
                           act_layer=act_layer, drop=drop)
            if self.shift_size > 0:
                H, W = self.input_resolution
                img_mask = torch.zeros((1, H, W, 1))
                h_slices = (slice(0, -self.window_size),
                            slice(-self.window_size, -self.shift_size),
                            slice(-self.shift_size, None))
                w_slices = (slice(0, -self.window_size),
                            slice(-self.window_size, -self.shift_size),
                            slice(-self.shift_size, None))
                cnt = 0
                for h in h_slices:
                    for w in w_slices:
                        img_mask[:, h, w, :] = cnt
                        cnt += 1
                mask_windows = window_partition(img_mask, self.window_size)
                mask_windows = mask_windows.view(-1, self.window_size * self.window_size)
                attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
                attn_mask = attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(
                    attn_mask == 0, float(0.0))
            else:
                attn_mask = None
            self.register_buffer("attn_mask", attn_mask)

        def forward(self, x):
            H, W = self.input_resolution
            B, L, C = x.shape
            assert L == H * W, "input feature has wrong size"
            shortcut = x
            x = self.norm1(x)
            x = x.view(B, H, W, C)
            if self.shift_size > 0:
                shifted_x = torch.roll(x, shifts=(-self.shift_size, -self.shift_size), dims=(1, 2))
            else:
                shifted_x = x
            x_windows = window_partition(shifted_x, self.window_size)
            x_windows = x_windows.view(-1, self.window_size * self.window_size, C)
            attn_windows = self.attn(x_windows, mask=self.attn_mask)
            attn_windows = attn_windows.view(-1, self.window_size, self.window_size, C)
            shifted_x = window_reverse(attn_windows, self.window_size, H, W)
            if self.shift_size > 0:
                x = torch.roll(shifted_x, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
            else:
                x = shifted_x
            x = x.view(B, H * W, C)
            x = shortcut + self.drop_path(x)
            x = x + self.drop_path(self.mlp(self.norm2(x)))
            return x

    class PatchMerging(nn.Module):
        def __init__(self, input_resolution, dim, norm_layer=nn.LayerNorm):
            super().__init__()
            self.input_resolution = input_resolution
            self.dim = dim
            self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
            self.norm = norm_layer(4 * dim)

        def forward(self, x):
            H, W = self.input_resolution
            B, L, C = x.shape
            assert L == H * W, "input feature has wrong size"
            assert H % 2 == 0 and W % 2 == 0, f"x size ({H}*{W}) are not even."
            x = x.view(B, H, W, C)
            x0 = x[:, 0::2, 0::2, :]
            x1 = x[:, 1::2, 0::2, :]
            x2 = x[:, 0::2, 1::2, :]
            x3 = x[:, 1::2, 1::2, :]
            x = torch.cat([x0, x1, x2, x3], -1)
            x = x.view(B, -1, 4 * C)
            return self.reduction(self.norm(x))

    class BasicLayer(nn.Module):
        def __init__(self, dim, input_resolution, depth, num_heads, window_size, mlp_ratio=4.0,
                     norm_layer=nn.LayerNorm, downsample=None):
            super().__init__()
            self.blocks = nn.ModuleList([
                SwinTransformerBlock(dim=dim, input_resolution=input_resolution,
                                     num_heads=num_heads, window_size=window_size,
                                     shift_size=0 if (i % 2 == 0) else window_size // 2,
                                     mlp_ratio=mlp_ratio, norm_layer=norm_layer)
                for i in range(depth)])
            if downsample is not None:
                self.downsample = downsample(input_resolution, dim=dim, norm_layer=norm_layer)
            else:
                self.downsample = None

        def forward(self, x):
            for blk in self.blocks:
                x = blk(x)
            if self.downsample is not None:
                x = self.downsample(x)
            return x

    class PatchEmbed(nn.Module):
        def __init__(self, img_size=224, patch_size=4, in_chans=3, embed_dim=96, norm_layer=None):
            super().__init__()
            img_size, patch_size = to_2tuple(img_size), to_2tuple(patch_size)
            self.patches_resolution = [img_size[0] // patch_size[0], img_size[1] // patch_size[1]]
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
            self.norm = norm_layer(embed_dim) if norm_layer is not None else None

        def forward(self, x):
            x = self.proj(x).flatten(2).transpose(1, 2)
            if self.norm is not None:
                x = self.norm(x)
            return x

    class SwinTransformer(nn.Module):
        def __init__(self, img_size=224, patch_size=4, in_chans=3, num_classes=1000,
                     embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24), window_size=7,
                     mlp_ratio=4.0, norm_layer=nn.LayerNorm, patch_norm=True):
            super().__init__()
            self.num_layers = len(depths)
            self.num_features = int(embed_dim * 2 ** (self.num_layers - 1))
            self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim,
                                          norm_layer if patch_norm else None)
            res = self.patch_embed.patches_resolution
            self.layers = nn.ModuleList()
            for i_layer in range(self.num_layers):
                self.layers.append(BasicLayer(
                    dim=int(embed_dim * 2 ** i_layer),
                    input_resolution=(res[0] // (2 ** i_layer), res[1] // (2 ** i_layer)),
                    depth=depths[i_layer], num_heads=num_heads[i_layer],
                    window_size=window_size, mlp_ratio=mlp_ratio, norm_layer=norm_layer,
                    downsample=PatchMerging if (i_layer < self.num_layers - 1) else None))
            self.norm = norm_layer(self.num_features)
            self.avgpool = nn.AdaptiveAvgPool1d(1)
            self.head = nn.Linear(self.num_features, num_classes)

        def forward_features(self, x):
            x = self.patch_embed(x)
            for layer in self.layers:
                x = layer(x)
            x = self.norm(x)
            x = self.avgpool(x.transpose(1, 2))
            return torch.flatten(x, 1)

        def forward(self, x):
            return self.head(self.forward_features(x))

    # optimizer.py: biases, 1-D parameters and the bias tables go to a no-decay group
    def check_keywords_in_name(name, keywords=()):
        isin = False
        for keyword in keywords:
            if keyword in name:
                isin = True
        return isin

    def set_weight_decay(model, skip_list=(), skip_keywords=()):
        has_decay = []
        no_decay = []
        for name, param in model.named_parameters():
            if not param.requires_grad:
                continue
            if len(param.shape) == 1 or name.endswith(".bias") or (name in skip_list) or \
                    check_keywords_in_name(name, skip_keywords):
                no_decay.append(param)
            else:
                has_decay.append(param)
        return [{'params': has_decay}, {'params': no_decay, 'weight_decay': 0.}]

    return SwinTransformer, set_weight_decay


# microsoft/Swin-Transformer models/swin_transformer.py: an 8x8 image in 2x2 patches (a 4x4 token
# grid), window 2 so stage 1 runs a plain and a shifted-window block (shift 1, the -100 mask),
# PatchMerging to 2x2 (stage 2 has depth 0, to keep the test cheap), then the pooled head;
# cross_entropy for 2 steps as main.py's train_one_epoch does (no AMP, no mixup), with
# optimizer.py's ``sgd`` choice (nesterov momentum, the no-decay group from set_weight_decay).
# Deviation: the default AdamW is not used because the key bias's gradient is analytically zero
# (softmax is shift-invariant), so Adam turns float rounding noise in it into full-size steps.
def test_swin_transformer_shifted_windows():
    def program(torch, log):
        print = printer(log)
        SwinTransformer, set_weight_decay = _swin_module(torch)
        model = SwinTransformer(img_size=8, patch_size=2, in_chans=3, num_classes=3,
                                embed_dim=8, depths=(2, 0), num_heads=(2, 2), window_size=2,
                                mlp_ratio=1.0)
        init_params(torch, model, seed=3, scale=0.3)
        blk = model.layers[0].blocks[1]
        log("rel_index", blk.attn.relative_position_index)
        log("attn_mask", blk.attn_mask)
        log("no_mask", model.layers[0].blocks[0].attn_mask is None)
        rs = np.random.RandomState(5)
        images = torch.tensor(rs.standard_normal((2, 3, 8, 8)).astype(np.float32))
        targets = torch.tensor([0, 2])
        criterion = torch.nn.CrossEntropyLoss()
        parameters = set_weight_decay(model, {}, {"relative_position_bias_table"})
        optimizer = torch.optim.SGD(parameters, momentum=0.9, nesterov=True, lr=0.05,
                                    weight_decay=0.05)
        for step in range(2):
            outputs = model(images)
            loss = criterion(outputs, targets)
            optimizer.zero_grad()
            loss.backward()
            print(f"step {step} loss {loss.item():.6f}")
            log(f"out{step}", outputs)
            log(f"grad_table{step}", blk.attn.relative_position_bias_table.grad)
            log(f"grad_merge{step}", model.layers[0].downsample.reduction.weight.grad)
            log(f"grad_embed{step}", model.patch_embed.proj.weight.grad)
            optimizer.step()
        log("params", [p for p in model.parameters()])
        log("groups", [len(g["params"]) for g in optimizer.param_groups])

    run_both(program)


# ---- eriklindernoren/PyTorch-YOLOv3 ------------------------------------------------------------
_YOLO_CFG = """
[net]
batch=2
subdivisions=1
width=16
height=16
channels=3
momentum=0.9
decay=0.0005
learning_rate=0.01
burn_in=1
max_batches=10
policy=steps
steps=5,8
scales=.1,.1

[convolutional]
batch_normalize=1
filters=8
size=3
stride=1
pad=1
activation=leaky

[maxpool]
size=2
stride=2

[convolutional]
batch_normalize=1
filters=8
size=3
stride=1
pad=1
activation=leaky

[shortcut]
from=-2
activation=linear

# the yolov3-tiny size=2 stride=1 maxpool (ZeroPad2d first)
[maxpool]
size=2
stride=1

[convolutional]
batch_normalize=1
filters=16
size=3
stride=2
pad=1
activation=leaky

[convolutional]
size=1
stride=1
pad=1
filters=21
activation=linear

[yolo]
mask = 3,4,5
anchors = 2,3, 4,5, 6,4, 8,9, 10,12, 14,14
classes=2

[route]
layers = -3

[convolutional]
batch_normalize=1
filters=8
size=1
stride=1
pad=1
activation=leaky

[upsample]
stride=2

[route]
layers = -1, 3

[convolutional]
size=1
stride=1
pad=1
filters=21
activation=linear

[yolo]
mask = 0,1,2
anchors = 2,3, 4,5, 6,4, 8,9, 10,12, 14,14
classes=2
"""


def _yolo_module(torch):
    """pytorchyolo/models.py, utils/parse_config.py, utils/utils.py (``to_cpu``) and
    utils/loss.py as the repository writes them; the config is read from a string instead of a
    file, and ``load_model``'s ``weights_init_normal`` is left out (``init_params`` overwrites
    every parameter)."""
    nn = torch.nn
    F = torch.nn.functional

    def parse_model_config(text):
        lines = text.split('\n')
        lines = [x for x in lines if x and not x.startswith('#')]
        lines = [x.rstrip().lstrip() for x in lines]
        module_defs = []
        for line in lines:
            if line.startswith('['):
                module_defs.append({})
                module_defs[-1]['type'] = line[1:-1].rstrip()
                if module_defs[-1]['type'] == 'convolutional':
                    module_defs[-1]['batch_normalize'] = 0
            else:
                key, value = line.split("=")
                module_defs[-1][key.rstrip()] = value.strip()
        return module_defs

    def to_cpu(tensor):
        return tensor.detach().cpu()

    def create_modules(module_defs):
        hyperparams = module_defs.pop(0)
        hyperparams.update({
            'batch': int(hyperparams['batch']),
            'subdivisions': int(hyperparams['subdivisions']),
            'width': int(hyperparams['width']),
            'height': int(hyperparams['height']),
            'channels': int(hyperparams['channels']),
            'optimizer': hyperparams.get('optimizer'),
            'momentum': float(hyperparams['momentum']),
            'decay': float(hyperparams['decay']),
            'learning_rate': float(hyperparams['learning_rate']),
            'burn_in': int(hyperparams['burn_in']),
            'max_batches': int(hyperparams['max_batches']),
            'policy': hyperparams['policy'],
            'lr_steps': list(zip(map(int, hyperparams["steps"].split(",")),
                                 map(float, hyperparams["scales"].split(","))))
        })
        output_filters = [hyperparams["channels"]]
        module_list = nn.ModuleList()
        for module_i, module_def in enumerate(module_defs):
            modules = nn.Sequential()
            if module_def["type"] == "convolutional":
                bn = int(module_def["batch_normalize"])
                filters = int(module_def["filters"])
                kernel_size = int(module_def["size"])
                pad = (kernel_size - 1) // 2
                modules.add_module(f"conv_{module_i}", nn.Conv2d(
                    in_channels=output_filters[-1], out_channels=filters,
                    kernel_size=kernel_size, stride=int(module_def["stride"]), padding=pad,
                    bias=not bn))
                if bn:
                    modules.add_module(f"batch_norm_{module_i}",
                                       nn.BatchNorm2d(filters, momentum=0.9, eps=1e-5))
                if module_def["activation"] == "leaky":
                    modules.add_module(f"leaky_{module_i}", nn.LeakyReLU(0.1))
            elif module_def["type"] == "maxpool":
                kernel_size = int(module_def["size"])
                stride = int(module_def["stride"])
                if kernel_size == 2 and stride == 1:
                    modules.add_module(f"_debug_padding_{module_i}", nn.ZeroPad2d((0, 1, 0, 1)))
                modules.add_module(f"maxpool_{module_i}", nn.MaxPool2d(
                    kernel_size=kernel_size, stride=stride, padding=int((kernel_size - 1) // 2)))
            elif module_def["type"] == "upsample":
                modules.add_module(f"upsample_{module_i}",
                                   Upsample(scale_factor=int(module_def["stride"]), mode="nearest"))
            elif module_def["type"] == "route":
                layers = [int(x) for x in module_def["layers"].split(",")]
                filters = sum([output_filters[1:][i] for i in layers])
                modules.add_module(f"route_{module_i}", nn.Sequential())
            elif module_def["type"] == "shortcut":
                filters = output_filters[1:][int(module_def["from"])]
                modules.add_module(f"shortcut_{module_i}", nn.Sequential())
            elif module_def["type"] == "yolo":
                anchor_idxs = [int(x) for x in module_def["mask"].split(",")]
                anchors = [int(x) for x in module_def["anchors"].split(",")]
                anchors = [(anchors[i], anchors[i + 1]) for i in range(0, len(anchors), 2)]
                anchors = [anchors[i] for i in anchor_idxs]
                num_classes = int(module_def["classes"])
                modules.add_module(f"yolo_{module_i}", YOLOLayer(anchors, num_classes))
            module_list.append(modules)
            output_filters.append(filters)
        return hyperparams, module_list

    class Upsample(nn.Module):
        def __init__(self, scale_factor, mode="nearest"):
            super(Upsample, self).__init__()
            self.scale_factor = scale_factor
            self.mode = mode

        def forward(self, x):
            return F.interpolate(x, scale_factor=self.scale_factor, mode=self.mode)

    class YOLOLayer(nn.Module):
        def __init__(self, anchors, num_classes):
            super(YOLOLayer, self).__init__()
            self.num_anchors = len(anchors)
            self.num_classes = num_classes
            self.mse_loss = nn.MSELoss()
            self.bce_loss = nn.BCELoss()
            self.no = num_classes + 5
            self.grid = torch.zeros(1)
            anchors = torch.tensor(list(chain(*anchors))).float().view(-1, 2)
            self.register_buffer('anchors', anchors)
            self.register_buffer('anchor_grid', anchors.clone().view(1, -1, 1, 1, 2))
            self.stride = None

        def forward(self, x, img_size):
            stride = img_size // x.size(2)
            self.stride = stride
            bs, _, ny, nx = x.shape
            x = x.view(bs, self.num_anchors, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if not self.training:
                if self.grid.shape[2:4] != x.shape[2:4]:
                    self.grid = self._make_grid(nx, ny).to(x.device)
                y = x.sigmoid()
                y[..., 0:2] = (y[..., 0:2] * 2. - 0.5 + self.grid.to(x.device)) * stride
                y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * self.anchor_grid
                y = y.view(bs, -1, self.no)
            return x if self.training else y

        @staticmethod
        def _make_grid(nx=20, ny=20):
            yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)])
            return torch.stack((xv, yv), 2).view((1, 1, ny, nx, 2)).float()

    class Darknet(nn.Module):
        def __init__(self, config_text):
            super(Darknet, self).__init__()
            self.module_defs = parse_model_config(config_text)
            self.hyperparams, self.module_list = create_modules(self.module_defs)
            self.yolo_layers = [layer[0] for layer in self.module_list
                                if isinstance(layer[0], YOLOLayer)]
            self.seen = 0

        def forward(self, x):
            img_size = x.size(2)
            layer_outputs, yolo_outputs = [], []
            for i, (module_def, module) in enumerate(zip(self.module_defs, self.module_list)):
                if module_def["type"] in ["convolutional", "upsample", "maxpool"]:
                    x = module(x)
                elif module_def["type"] == "route":
                    x = torch.cat([layer_outputs[int(layer_i)]
                                   for layer_i in module_def["layers"].split(",")], 1)
                elif module_def["type"] == "shortcut":
                    layer_i = int(module_def["from"])
                    x = layer_outputs[-1] + layer_outputs[layer_i]
                elif module_def["type"] == "yolo":
                    x = module[0](x, img_size)
                    yolo_outputs.append(x)
                layer_outputs.append(x)
            return yolo_outputs if self.training else torch.cat(yolo_outputs, 1)

    def bbox_iou(box1, box2, x1y1x2y2=True, GIoU=False, DIoU=False, CIoU=False, eps=1e-9):
        box2 = box2.T
        if x1y1x2y2:
            b1_x1, b1_y1, b1_x2, b1_y2 = box1[0], box1[1], box1[2], box1[3]
            b2_x1, b2_y1, b2_x2, b2_y2 = box2[0], box2[1], box2[2], box2[3]
        else:
            b1_x1, b1_x2 = box1[0] - box1[2] / 2, box1[0] + box1[2] / 2
            b1_y1, b1_y2 = box1[1] - box1[3] / 2, box1[1] + box1[3] / 2
            b2_x1, b2_x2 = box2[0] - box2[2] / 2, box2[0] + box2[2] / 2
            b2_y1, b2_y2 = box2[1] - box2[3] / 2, box2[1] + box2[3] / 2
        inter = (torch.min(b1_x2, b2_x2) - torch.max(b1_x1, b2_x1)).clamp(0) * \
                (torch.min(b1_y2, b2_y2) - torch.max(b1_y1, b2_y1)).clamp(0)
        w1, h1 = b1_x2 - b1_x1, b1_y2 - b1_y1 + eps
        w2, h2 = b2_x2 - b2_x1, b2_y2 - b2_y1 + eps
        union = w1 * h1 + w2 * h2 - inter + eps
        iou = inter / union
        if GIoU or DIoU or CIoU:
            cw = torch.max(b1_x2, b2_x2) - torch.min(b1_x1, b2_x1)
            ch = torch.max(b1_y2, b2_y2) - torch.min(b1_y1, b2_y1)
            if CIoU or DIoU:
                c2 = cw ** 2 + ch ** 2 + eps
                rho2 = ((b2_x1 + b2_x2 - b1_x1 - b1_x2) ** 2 +
                        (b2_y1 + b2_y2 - b1_y1 - b1_y2) ** 2) / 4
                if DIoU:
                    return iou - rho2 / c2
                elif CIoU:
                    v = (4 / math.pi ** 2) * torch.pow(torch.atan(w2 / h2) - torch.atan(w1 / h1), 2)
                    with torch.no_grad():
                        alpha = v / ((1 + eps) - iou + v)
                    return iou - (rho2 / c2 + v * alpha)
            else:
                c_area = cw * ch + eps
                return iou - (c_area - union) / c_area
        else:
            return iou

    def smooth_BCE(eps=0.1):
        return 1.0 - 0.5 * eps, 0.5 * eps

    def compute_loss(predictions, targets, model):
        device = targets.device
        lcls, lbox, lobj = (torch.zeros(1, device=device), torch.zeros(1, device=device),
                            torch.zeros(1, device=device))
        tcls, tbox, indices, anchors = build_targets(predictions, targets, model)
        BCEcls = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0], device=device))
        BCEobj = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0], device=device))
        cp, cn = smooth_BCE(eps=0.0)
        balance = [4.0, 1.0, 0.4, 0.1]
        for layer_index, layer_predictions in enumerate(predictions):
            b, anchor, grid_j, grid_i = indices[layer_index]
            tobj = torch.zeros_like(layer_predictions[..., 0], device=device)
            num_targets = b.shape[0]
            if num_targets:
                ps = layer_predictions[b, anchor, grid_j, grid_i]
                pxy = ps[:, :2].sigmoid() * 2. - 0.5
                pwh = (ps[:, 2:4].sigmoid() * 2) ** 2 * anchors[layer_index]
                pbox = torch.cat((pxy, pwh), 1)
                iou = bbox_iou(pbox.T, tbox[layer_index], x1y1x2y2=False, CIoU=True)
                lbox += (1.0 - iou).mean()
                model.gr = 1
                tobj[b, anchor, grid_j, grid_i] = \
                    (1.0 - model.gr) + model.gr * iou.detach().clamp(0).type(tobj.dtype)
                t = torch.full_like(ps[:, 5:], cn, device=device)
                t[range(num_targets), tcls[layer_index]] = cp
                lcls += BCEcls(ps[:, 5:], t)
            lobj += BCEobj(layer_predictions[..., 4], tobj) * balance[layer_index]
        lbox *= 0.05 * (3. / 2)
        lobj *= (3. / 2)
        lcls *= 0.31
        batch_size = tobj.shape[0]
        loss = lbox + lobj + lcls
        return loss * batch_size, to_cpu(torch.cat((lbox, lobj, lcls, loss)))

    def build_targets(p, targets, model):
        na, nt = 3, targets.shape[0]
        tcls, tbox, indices, anch = [], [], [], []
        gain = torch.ones(7, device=targets.device)
        ai = torch.arange(na, device=targets.device).float().view(na, 1).repeat(1, nt)
        targets = torch.cat((targets.repeat(na, 1, 1), ai[:, :, None]), 2)
        g = 0.5
        off = torch.tensor([[0, 0]], device=targets.device).float() * g
        for i, yolo_layer in enumerate(model.yolo_layers):
            anchors = yolo_layer.anchors / yolo_layer.stride
            gain[2:6] = torch.tensor(p[i].shape)[[3, 2, 3, 2]]
            t = targets * gain
            if nt:
                r = t[:, :, 4:6] / anchors[:, None]
                j = torch.max(r, 1. / r).max(2)[0] < 4
                t = t[j]
                gxy = t[:, 2:4]
                gxi = gain[[2, 3]] - gxy
                j, k = ((gxy % 1. < g) & (gxy > 1.)).T
                l, m = ((gxi % 1. < g) & (gxi > 1.)).T
                j = torch.stack((torch.ones_like(j),))
                t = t.repeat((off.shape[0], 1, 1))[j]
                offsets = (torch.zeros_like(gxy)[None] + off[:, None])[j]
            else:
                t = targets[0]
                offsets = 0
            b, c = t[:, :2].long().T
            gxy = t[:, 2:4]
            gwh = t[:, 4:6]
            gij = (gxy - offsets).long()
            gi, gj = gij.T
            a = t[:, 6].long()
            indices.append((b, a, gj.clamp_(0, gain[3].long() - 1),
                            gi.clamp_(0, gain[2].long() - 1)))
            tbox.append(torch.cat((gxy - gij, gwh), 1))
            anch.append(anchors[a])
            tcls.append(c)
        return tcls, tbox, indices, anch

    return Darknet, compute_loss


# eriklindernoren/PyTorch-YOLOv3 pytorchyolo/train.py's loop on a 2-image 16x16 batch with
# four (image, class, x, y, w, h) targets (sizes that every anchor of both YOLO layers matches,
# so both layers build 12 targets: one set of shapes), one on the right edge (x = 1.0) so the
# ``clamp_`` into ``gij``'s transposed views changes ``tbox``: the burn-in learning rate is set
# on the param groups each batch, SGD with the config's momentum/decay, 2 batches; then eval-mode
# decoding under ``no_grad``. Deviation: ``clamp_``'s bounds are ``gain[3].long() - 1`` (the fix
# users apply: the repository's float-tensor bound makes torch >= 1.13 raise "result type Float
# can't be cast to the desired output type Long", checked here on both libraries).
def test_yolov3_build_targets_and_loss():
    def program(torch, log):
        print = printer(log)
        Darknet, compute_loss = _yolo_module(torch)
        model = Darknet(_YOLO_CFG)
        init_params(torch, model, seed=7, scale=0.3)
        log("module_defs", [d["type"] for d in model.module_defs])
        rs = np.random.RandomState(9)
        imgs = torch.tensor(rs.uniform(0, 1, (2, 3, 16, 16)).astype(np.float32))
        targets = torch.tensor([[0, 1, 0.30, 0.40, 0.25, 0.30],
                                [0, 0, 0.70, 0.60, 0.45, 0.40],
                                [1, 1, 1.00, 0.55, 0.40, 0.30],
                                [1, 0, 0.20, 0.80, 0.30, 0.35]])
        gij = torch.tensor([[1, 9], [3, 2]])
        gi, gj = gij.T
        try:
            gj.clamp_(0, torch.ones(7)[3] * 4 - 1)
            log("float_bound", "no error")
        except RuntimeError as e:
            log("float_bound", ("RuntimeError", "can't be cast" in str(e)))
        hp = model.hyperparams
        optimizer = torch.optim.SGD(model.parameters(), lr=hp['learning_rate'],
                                    weight_decay=hp['decay'], momentum=hp['momentum'])
        model.train()
        for batch_i in range(2):
            batches_done = batch_i
            outputs = model(imgs)
            loss, loss_components = compute_loss(outputs, targets, model)
            loss.backward()
            if batches_done % model.hyperparams['subdivisions'] == 0:
                lr = model.hyperparams['learning_rate']
                if batches_done < model.hyperparams['burn_in']:
                    lr *= (batches_done / model.hyperparams['burn_in'])
                else:
                    for threshold, value in model.hyperparams['lr_steps']:
                        if batches_done > threshold:
                            lr *= value
                for g in optimizer.param_groups:
                    g['lr'] = lr
                optimizer.step()
                optimizer.zero_grad()
            print(f"batch {batch_i} lr {lr} loss {loss.item():.6f} components",
                  *[f"{float(v):.6f}" for v in loss_components])
            log(f"outputs{batch_i}", outputs)
            log(f"loss{batch_i}", loss_components)
        log("params", list(model.parameters()))
        log("buffers", list(model.buffers()))
        model.eval()
        with torch.no_grad():
            detections = model(imgs)
        log("detections", detections)
        log("grid", model.yolo_layers[1].grid)

    run_both(program)


# ---- lucidrains/local-attention ----------------------------------------------------------------
def _local_attention_module(torch):
    """local_attention/local_attention.py at commit 30ecd41 (before the einops rewrite), as the
    repository wrote it."""
    nn = torch.nn
    F = torch.nn.functional
    TOKEN_SELF_ATTN_VALUE = -5e4

    def default(value, d):
        return d if value is None else value

    def to(t):
        return {'device': t.device, 'dtype': t.dtype}

    def max_neg_value(tensor):
        return -torch.finfo(tensor.dtype).max

    def merge_dims(ind_from, ind_to, tensor):
        shape = list(tensor.shape)
        arr_slice = slice(ind_from, ind_to + 1)
        shape[arr_slice] = [reduce(mul, shape[arr_slice])]
        return tensor.reshape(*shape)

    def expand_dim(t, dim, k, unsqueeze=True):
        if unsqueeze:
            t = t.unsqueeze(dim)
        expand_shape = [-1] * len(t.shape)
        expand_shape[dim] = k
        return t.expand(*expand_shape)

    def pad_to_multiple(tensor, multiple, dim=-1, value=0):
        seqlen = tensor.shape[dim]
        m = seqlen / multiple
        if m.is_integer():
            return tensor
        remainder = math.ceil(m) * multiple - seqlen
        pad_offset = (0,) * (-1 - dim) * 2
        return F.pad(tensor, (*pad_offset, 0, remainder), value=value)

    def look_around(x, backward=1, forward=0, pad_value=-1, dim=2):
        t = x.shape[1]
        dims = (len(x.shape) - dim) * (0, 0)
        padded_x = F.pad(x, (*dims, backward, forward), value=pad_value)
        tensors = [padded_x[:, ind:(ind + t), ...] for ind in range(forward + backward + 1)]
        return torch.cat(tensors, dim=dim)

    def shift(x):
        *_, i, j = x.shape
        zero_pad = torch.zeros((*_, i, i), **to(x))
        x = torch.cat([x, zero_pad], -1)
        l = i + j - 1
        x = x.view(*_, -1)
        zero_pad = torch.zeros(*_, -x.size(-1) % l, **to(x))
        shifted = torch.cat([x, zero_pad], -1).view(*_, -1, l)
        return shifted[..., :i, i - 1:]

    class RelativePositionalEmbedding(nn.Module):
        def __init__(self, dim, heads, length):
            super().__init__()
            self.scale = dim ** -0.5
            self.weights = nn.Parameter(torch.zeros(length, heads, dim))

        def forward(self, q):
            emb = torch.einsum('bhnid,jhd->bhnij', q, self.weights.type(q.dtype)) * self.scale
            return shift(emb)

    class LocalAttention(nn.Module):
        def __init__(self, window_size, causal=False, look_backward=1, look_forward=None,
                     dropout=0., shared_qk=False, rel_pos_emb_config=None, autopad=False):
            super().__init__()
            look_forward = default(look_forward, 0 if causal else 1)
            assert not (causal and look_forward > 0), 'you cannot look forward if causal'
            self.window_size = window_size
            self.causal = causal
            self.look_backward = look_backward
            self.look_forward = look_forward
            self.autopad = autopad
            self.dropout = nn.Dropout(dropout)
            self.shared_qk = shared_qk
            self.rel_pos = None
            if rel_pos_emb_config is not None:
                dim_head, heads = rel_pos_emb_config
                rel_pos_length = window_size * (1 + look_forward + look_backward)
                self.heads = heads
                self.rel_pos = RelativePositionalEmbedding(dim_head, heads, rel_pos_length)

        def forward(self, q, k, v, input_mask=None):
            shape = q.shape
            merge_into_batch = lambda t: t.reshape(-1, *t.shape[-2:])  # noqa: E731
            q, k, v = map(merge_into_batch, (q, k, v))
            if self.autopad:
                orig_t = q.shape[1]
                q, k, v = map(lambda t: pad_to_multiple(t, self.window_size, dim=-2), (q, k, v))
            window_size, causal, look_backward, look_forward, shared_qk = (
                self.window_size, self.causal, self.look_backward, self.look_forward,
                self.shared_qk)
            b, t, e, device, dtype = *q.shape, q.device, q.dtype
            assert (t % window_size) == 0, \
                f'sequence length {t} must be divisible by window size {window_size}'
            windows = t // window_size
            if shared_qk:
                k = F.normalize(k, 2, dim=-1).type_as(q)
            ticker = torch.arange(t, device=device, dtype=dtype)[None, :]
            b_t = ticker.reshape(1, windows, window_size)
            bucket_fn = lambda t: t.reshape(b, windows, window_size, -1)  # noqa: E731
            bq, bk, bv = map(bucket_fn, (q, k, v))
            look_around_kwargs = {'backward': look_backward, 'forward': look_forward}
            bk = look_around(bk, **look_around_kwargs)
            bv = look_around(bv, **look_around_kwargs)
            bq_t = b_t
            bq_k = look_around(b_t, **look_around_kwargs)
            dots = torch.einsum('bhie,bhje->bhij', bq, bk) * (e ** -0.5)
            if self.rel_pos is not None:
                rel_attn = self.rel_pos(bq.view(-1, self.heads, *bq.shape[1:])).reshape_as(dots)
                dots = dots + rel_attn
            mask_value = max_neg_value(dots)
            if shared_qk:
                mask = bq_t[:, :, :, None] == bq_k[:, :, None, :]
                dots.masked_fill_(mask, TOKEN_SELF_ATTN_VALUE)
                del mask
            if causal:
                mask = bq_t[:, :, :, None] < bq_k[:, :, None, :]
                dots.masked_fill_(mask, mask_value)
                del mask
            mask = bq_k[:, :, None, :] == -1
            dots.masked_fill_(mask, mask_value)
            del mask
            if input_mask is not None:
                h = b // input_mask.shape[0]
                if self.autopad:
                    input_mask = pad_to_multiple(input_mask, window_size, dim=-1, value=False)
                input_mask = input_mask.reshape(-1, windows, window_size)
                mq = mk = input_mask
                mk = look_around(mk, pad_value=False, **look_around_kwargs)
                mask = (mq[:, :, :, None] * mk[:, :, None, :])
                mask = merge_dims(0, 1, expand_dim(mask, 1, h))
                dots.masked_fill_(~mask, mask_value)
                del mask
            attn = dots.softmax(dim=-1)
            attn = self.dropout(attn)
            out = torch.einsum('bhij,bhje->bhie', attn, bv)
            out = out.reshape(-1, t, e)
            if self.autopad:
                out = out[:, :orig_t, :]
            return out.reshape(*shape)

    return LocalAttention, look_around, shift


# lucidrains/local-attention local_attention/local_attention.py (commit 30ecd41): two layers as
# its README uses them on (batch, heads, seq, dim_head) queries from a linear projection:
# non-causal with look-forward, Shaw relative positions, ``autopad`` (7 tokens in windows of 2)
# and a padding ``input_mask`` (bool ``*`` and ``~``); then causal, ``shared_qk`` (normalised
# keys, the self-token value) looking 2 windows back. Two SGD steps on the projection and the
# relative-position weights.
def test_local_attention_windows():
    def program(torch, log):
        print = printer(log)
        LocalAttention, look_around, shift = _local_attention_module(torch)
        b, h, t, e = 2, 2, 7, 4
        proj = init_params(torch, torch.nn.Linear(8, 3 * h * e), seed=1, scale=0.4)
        attn1 = LocalAttention(window_size=2, causal=False, look_forward=1, autopad=True,
                               rel_pos_emb_config=(e, h))
        init_params(torch, attn1, seed=2, scale=0.5)
        attn2 = LocalAttention(window_size=2, causal=True, look_backward=2, shared_qk=True,
                               autopad=True)
        rs = np.random.RandomState(4)
        x = torch.tensor(rs.standard_normal((b, t, 8)).astype(np.float32))
        input_mask = torch.tensor([[True] * 7, [True] * 5 + [False] * 2])
        log("look_around", look_around(torch.arange(6.).reshape(1, 3, 2), backward=1, forward=1))
        log("shift", shift(torch.arange(12.).reshape(1, 2, 6)))
        opt = torch.optim.SGD(list(proj.parameters()) + list(attn1.parameters()), lr=0.1)
        for step in range(2):
            q, k, v = proj(x).reshape(b, t, 3, h, e).permute(2, 0, 3, 1, 4)
            out1 = attn1(q, k, v, input_mask=input_mask)
            out2 = attn2(q, q, v)
            loss = (out1 * out2).sum() / input_mask.sum()
            opt.zero_grad()
            loss.backward()
            print(f"step {step} loss {loss.item():.6f}")
            log(f"out1_{step}", out1)
            log(f"out2_{step}", out2)
            log(f"grads{step}", [proj.weight.grad, proj.bias.grad, attn1.rel_pos.weights.grad])
            opt.step()

    run_both(program)
