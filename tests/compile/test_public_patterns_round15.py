"""Round-14 public programs (``tests/api/test_public_programs_round14.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- xmu-xiaoma666/External-Attention-pytorch S2Attention.py: S2-MLP's spatial shifts, in-place
  copies between overlapping strided views of one Linear output (torch copies them element by
  element, so the forward shifts repeat the first row), under a compiled SGD step;
- xmu-xiaoma666/External-Attention-pytorch Involution.py: ``nn.Unfold`` patches times a
  per-pixel kernel from 1x1 convs and BatchNorm in train mode (running stats are buffers the
  compiled step writes), SGD with momentum;
- voxelmorph/voxelmorph torch/layers.py + losses.py: the ``grid_sample`` spatial transformer
  with its in-place per-axis normalisation, scaling-and-squaring integration, ``interpolate``
  resizes, windowed NCC and l2 Grad losses, Adam;
- zengkaipeng/UAlign GINConv.py: ``index_select`` messages reduced by ``scatter_add_``, a
  learnable ``eps``, LayerNorm MLP, Adam;
- xmu-xiaoma666/External-Attention-pytorch CondConv.py: per-sample mixed kernels run as one
  grouped ``conv2d`` with ``groups=batch``, SGD;

and three compiled the way training scripts compile (``model = torch.compile(model)`` then an
ordinary eager loop around the compiled module):

- xmu-xiaoma666/External-Attention-pytorch gfnet.py: GFNet's ``rfft2``/``irfft2`` global filter
  with a ``view_as_complex`` parameter;
- xmu-xiaoma666/External-Attention-pytorch OutlookAttention.py: ``nn.Unfold`` values, ceil-mode
  pooled attention and ``F.fold`` back;
- xmu-xiaoma666/External-Attention-pytorch ShuffleAttention.py + CrissCrossAttention.py:
  GroupNorm, ``chunk`` and a channel shuffle, then the ``-inf`` diagonal criss-cross attention.
"""
import math

import numpy as np

from ._harness import check_compiled, data, labels, np_init


def _no_breaks(run):
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] >= 1, run.step.stats


# ---- xmu-xiaoma666/External-Attention-pytorch model/attention/S2Attention.py -------------------
def s2_program(mod, wrap):
    nn = mod.nn

    def spatial_shift1(x):
        b,w,h,c = x.size()
        x[:,1:,:,:c//4] = x[:,:w-1,:,:c//4]
        x[:,:w-1,:,c//4:c//2] = x[:,1:,:,c//4:c//2]
        x[:,:,1:,c//2:c*3//4] = x[:,:,:h-1,c//2:c*3//4]
        x[:,:,:h-1,3*c//4:] = x[:,:,1:,3*c//4:]
        return x

    def spatial_shift2(x):
        b,w,h,c = x.size()
        x[:,:,1:,:c//4] = x[:,:,:h-1,:c//4]
        x[:,:,:h-1,c//4:c//2] = x[:,:,1:,c//4:c//2]
        x[:,1:,:,c//2:c*3//4] = x[:,:w-1,:,c//2:c*3//4]
        x[:,:w-1,:,3*c//4:] = x[:,1:,:,3*c//4:]
        return x

    class SplitAttention(nn.Module):
        def __init__(self,channel=8,k=3):
            super().__init__()
            self.channel=channel
            self.k=k
            self.mlp1=nn.Linear(channel,channel,bias=False)
            self.gelu=nn.GELU()
            self.mlp2=nn.Linear(channel,channel*k,bias=False)
            self.softmax=nn.Softmax(1)

        def forward(self,x_all):
            b,k,h,w,c=x_all.shape
            x_all=x_all.reshape(b,k,-1,c)
            a=mod.sum(mod.sum(x_all,1),1)
            hat_a=self.mlp2(self.gelu(self.mlp1(a)))
            hat_a=hat_a.reshape(b,self.k,c)
            bar_a=self.softmax(hat_a)
            attention=bar_a.unsqueeze(-2)
            out=attention*x_all
            out=mod.sum(out,1).reshape(b,h,w,c)
            return out

    class S2Attention(nn.Module):
        def __init__(self, channels=512 ):
            super().__init__()
            self.mlp1 = nn.Linear(channels,channels*3)
            self.mlp2 = nn.Linear(channels,channels)
            self.split_attention = SplitAttention()

        def forward(self, x):
            b,c,w,h = x.size()
            x=x.permute(0,2,3,1)
            x = self.mlp1(x)
            x1 = spatial_shift1(x[:,:,:,:c])
            x2 = spatial_shift2(x[:,:,:,c:c*2])
            x3 = x[:,:,:,c*2:]
            x_all=mod.stack([x1,x2,x3],1)
            a = self.split_attention(x_all)
            x = self.mlp2(a)
            x=x.permute(0,3,1,2)
            return x

    model = np_init(S2Attention(channels=8), mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x, y):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 2, 8, 4, 4), data(mod, i, 2, 8, 4, 4, seed=40))


def test_s2_attention_step():
    # rtol 3e-4: torch's CPU kernels round by CPU (a gradient 2e-4 apart on a CPU without AVX-512)
    _no_breaks(check_compiled(s2_program, calls=3, torch_too=True, rtol=3e-4, atol=1e-5))


# ---- xmu-xiaoma666/External-Attention-pytorch model/conv/Involution.py ----------------------------
def involution_program(mod, wrap):
    nn = mod.nn

    class Involution(nn.Module):
        def __init__(self, kernel_size, in_channel=4, stride=1, group=1,ratio=4):
            super().__init__()
            self.kernel_size=kernel_size
            self.in_channel=in_channel
            self.stride=stride
            self.group=group
            self.group_channel=self.in_channel//group
            self.conv1=nn.Conv2d(self.in_channel, self.in_channel//ratio, kernel_size=1)
            self.bn=nn.BatchNorm2d(in_channel//ratio)
            self.relu=nn.ReLU()
            self.conv2=nn.Conv2d(self.in_channel//ratio, self.group*self.kernel_size*self.kernel_size, kernel_size=1)
            self.avgpool=nn.AvgPool2d(stride,stride) if stride>1 else nn.Identity()
            self.unfold=nn.Unfold(kernel_size=kernel_size,stride=stride,padding=kernel_size//2)

        def forward(self, inputs):
            B,C,H,W=inputs.shape
            weight=self.conv2(self.relu(self.bn(self.conv1(self.avgpool(inputs)))))
            b,c,h,w=weight.shape
            weight=weight.reshape(b,self.group,self.kernel_size*self.kernel_size,h,w).unsqueeze(2)
            x_unfold=self.unfold(inputs)
            x_unfold=x_unfold.reshape(B,self.group,C//self.group,self.kernel_size*self.kernel_size,H//self.stride,W//self.stride)
            out=(x_unfold*weight).sum(dim=3)
            out=out.reshape(B,C,H//self.stride,W//self.stride)
            return out

    model = np_init(Involution(kernel_size=3, in_channel=8, group=2), mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x, y):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 2, 8, 5, 5), data(mod, i, 2, 8, 5, 5, seed=40))


def test_involution_step():
    _no_breaks(check_compiled(involution_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- voxelmorph/voxelmorph voxelmorph/torch/layers.py + losses.py ---------------------------------
def voxelmorph_program(mod, wrap):
    nn, nnf = mod.nn, mod.nn.functional

    class SpatialTransformer(nn.Module):
        def __init__(self, size, mode='bilinear'):
            super().__init__()
            self.mode = mode
            vectors = [mod.arange(0, s) for s in size]
            grids = mod.meshgrid(vectors)
            grid = mod.stack(grids)
            grid = mod.unsqueeze(grid, 0)
            grid = grid.type(mod.FloatTensor)
            self.register_buffer('grid', grid)

        def forward(self, src, flow):
            new_locs = self.grid + flow
            shape = flow.shape[2:]
            for i in range(len(shape)):
                new_locs[:, i, ...] = 2 * (new_locs[:, i, ...] / (shape[i] - 1) - 0.5)
            new_locs = new_locs.permute(0, 2, 3, 1)
            new_locs = new_locs[..., [1, 0]]
            return nnf.grid_sample(src, new_locs, align_corners=True, mode=self.mode)

    class VecInt(nn.Module):
        def __init__(self, inshape, nsteps):
            super().__init__()
            self.nsteps = nsteps
            self.scale = 1.0 / (2 ** self.nsteps)
            self.transformer = SpatialTransformer(inshape)

        def forward(self, vec):
            vec = vec * self.scale
            for _ in range(self.nsteps):
                vec = vec + self.transformer(vec, vec)
            return vec

    def resize(x, factor):   # ResizeTransform's two branches
        if factor < 1:
            x = nnf.interpolate(x, align_corners=True, scale_factor=factor, mode='bilinear')
            return factor * x
        x = factor * x
        return nnf.interpolate(x, align_corners=True, scale_factor=factor, mode='bilinear')

    def ncc(Ii, Ji, win=(5, 5)):
        sum_filt = mod.ones([1, 1, *win]).to("cpu")
        pad_no = math.floor(win[0] / 2)
        conv_fn = getattr(nnf, 'conv%dd' % 2)
        I2, J2, IJ = Ii * Ii, Ji * Ji, Ii * Ji
        I_sum = conv_fn(Ii, sum_filt, stride=(1, 1), padding=(pad_no, pad_no))
        J_sum = conv_fn(Ji, sum_filt, stride=(1, 1), padding=(pad_no, pad_no))
        I2_sum = conv_fn(I2, sum_filt, stride=(1, 1), padding=(pad_no, pad_no))
        J2_sum = conv_fn(J2, sum_filt, stride=(1, 1), padding=(pad_no, pad_no))
        IJ_sum = conv_fn(IJ, sum_filt, stride=(1, 1), padding=(pad_no, pad_no))
        win_size = np.prod(win)
        u_I, u_J = I_sum / win_size, J_sum / win_size
        cross = IJ_sum - u_J * I_sum - u_I * J_sum + u_I * u_J * win_size
        I_var = I2_sum - 2 * u_I * I_sum + u_I * u_I * win_size
        J_var = J2_sum - 2 * u_J * J_sum + u_J * u_J * win_size
        cc = cross * cross / (I_var * J_var + 1e-5)
        return -mod.mean(cc)

    def grad_l2(y):
        df = []
        for i in range(2):
            d = i + 2
            r = [d, *range(0, d), *range(d + 1, 4)]
            y = y.permute(r)
            dfi = y[1:, ...] - y[:-1, ...]
            r = [*range(d - 1, d + 1), *reversed(range(1, d - 1)), 0, *range(d + 1, 4)]
            df.append(dfi.permute(r))
        df = [mod.mean(mod.flatten(f * f, start_dim=1), dim=-1) for f in df]
        return (sum(df) / len(df)).mean()

    head = np_init(nn.Conv2d(2, 2, kernel_size=3, padding=1), mod, scale=0.2)
    integrate = VecInt((4, 4), 2)
    transformer = SpatialTransformer((8, 8))
    opt = mod.optim.Adam(head.parameters(), lr=0.01)

    def step(source, target):
        preint = resize(head(mod.cat([source, target], dim=1)), 0.5)
        flow = resize(integrate(preint), 2.0)
        y_source = transformer(source, flow)
        loss = ncc(target, y_source) + 0.01 * grad_l2(preint)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss, y_source

    return wrap(step), {"head": head, "opt": opt}, lambda i: (data(mod, i, 2, 1, 8, 8), data(mod, i, 2, 1, 8, 8, seed=40))


def test_voxelmorph_step():
    _no_breaks(check_compiled(voxelmorph_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- zengkaipeng/UAlign GINConv.py --------------------------------------------------------------
def gin_program(mod, wrap):

    class MyGINConv(mod.nn.Module):
        def __init__(self, embedding_dim: int = 64):
            super(MyGINConv, self).__init__()
            self.mlp = mod.nn.Sequential(
                mod.nn.Linear(embedding_dim, 2 * embedding_dim),
                mod.nn.LayerNorm(2 * embedding_dim),
                mod.nn.ReLU(),
                mod.nn.Linear(2 * embedding_dim, embedding_dim)
            )
            self.eps = mod.nn.Parameter(mod.Tensor([0]))

        def forward(self, node_feats, edge_feats, edge_index, num_nodes):
            message_node = mod.index_select(input=node_feats, dim=0, index=edge_index[1])
            message = mod.relu(message_node + edge_feats)
            dim = message.shape[-1]
            message_reduce = mod.zeros(num_nodes, dim).to(message)
            index = edge_index[0].unsqueeze(-1).repeat(1, dim)
            message_reduce.scatter_add_(dim=0, index=index, src=message)
            return self.mlp((1 + self.eps) * node_feats + message_reduce)

    layers = np_init(mod.nn.ModuleList([MyGINConv(4), MyGINConv(4)]), mod)
    opt = mod.optim.Adam(layers.parameters(), lr=0.01)
    edge_index = mod.tensor([[0, 1, 1, 2, 3, 4, 4], [1, 0, 2, 1, 4, 3, 0]])

    def step(nodes, edges, target):
        h = nodes
        for layer in layers:
            h = layer(h, edges, edge_index, 5)
        loss = mod.nn.functional.mse_loss(h, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return wrap(step), {"layers": layers, "opt": opt}, lambda i: (data(mod, i, 5, 4), data(mod, i, 7, 4, seed=40), data(mod, i, 5, 4, seed=60))


def test_gin_conv_step():
    _no_breaks(check_compiled(gin_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- xmu-xiaoma666/External-Attention-pytorch model/conv/CondConv.py ------------------------------
def condconv_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional

    class CondConv(nn.Module):
        def __init__(self, in_planes, out_planes, kernel_size, padding, K):
            super().__init__()
            self.in_planes, self.out_planes, self.kernel_size, self.K = in_planes, out_planes, kernel_size, K
            self.padding, self.groups = padding, 1
            self.attention = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(in_planes, K, kernel_size=1, bias=False))
            self.weight = nn.Parameter(mod.randn(K, out_planes, in_planes, kernel_size, kernel_size), requires_grad=True)
            self.bias = nn.Parameter(mod.randn(K, out_planes), requires_grad=True)

        def forward(self, x):
            bs, in_planels, h, w = x.shape
            softmax_att = mod.sigmoid(self.attention(x).view(x.shape[0], -1))
            x = x.view(1, -1, h, w)
            weight = self.weight.view(self.K, -1)
            aggregate_weight = mod.mm(softmax_att, weight).view(bs*self.out_planes, self.in_planes//self.groups, self.kernel_size, self.kernel_size)
            aggregate_bias = mod.mm(softmax_att, self.bias.view(self.K, -1)).view(-1)
            output = F.conv2d(x, weight=aggregate_weight, bias=aggregate_bias, stride=1, padding=self.padding, groups=self.groups*bs)
            return output.view(bs, self.out_planes, h, w)

    model = np_init(CondConv(4, 6, 3, 1, 3), mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.05)

    def step(x, y):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 2, 4, 5, 5), data(mod, i, 2, 6, 5, 5, seed=40))


def test_condconv_step():
    _no_breaks(check_compiled(condconv_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- model = torch.compile(model), then the authors' eager loop -------------------------------------
def _compiled_model_program(build, loss_fn, make_batch, lr=0.05):
    """``make(mod, wrap)`` for a training script that compiles its model: ``wrap`` is applied to
    the module (``model = torch.compile(model)``) and the loop around it stays eager."""
    def make(mod, wrap):
        model = np_init(build(mod), mod)
        cmodel = wrap(model)
        opt = mod.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

        def step(*batch):
            out = cmodel(*batch[:-1])
            loss = loss_fn(mod, out, batch[-1])
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss, out
        return step, {"model": model, "opt": opt}, lambda i: make_batch(mod, i)
    return make


def _gfnet(mod):
    nn = mod.nn

    class GlobalFilter(nn.Module):
        def __init__(self, dim, h=14, w=8):
            super().__init__()
            self.complex_weight = nn.Parameter(mod.randn(h, w, dim, 2, dtype=mod.float32) * 0.02)
            self.w = w
            self.h = h

        def forward(self, x, spatial_size=None):
            B, N, C = x.shape
            a = b = int(math.sqrt(N))
            x = x.view(B, a, b, C)
            x = x.to(mod.float32)
            x = mod.fft.rfft2(x, dim=(1, 2), norm='ortho')
            weight = mod.view_as_complex(self.complex_weight)
            x = x * weight
            x = mod.fft.irfft2(x, s=(a, b), dim=(1, 2), norm='ortho')
            x = x.reshape(B, N, C)
            return x

    class Block(nn.Module):
        def __init__(self, dim, h, w):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim)
            self.filter = GlobalFilter(dim, h=h, w=w)
            self.norm2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

        def forward(self, x):
            return x + self.mlp(self.norm2(self.filter(self.norm1(x))))

    class GFNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Conv2d(3, 6, kernel_size=2, stride=2)
            self.blocks = nn.ModuleList([Block(6, 4, 3) for _ in range(2)])
            self.head = nn.Linear(6, 5)
            self.softmax = nn.Softmax(1)

        def forward(self, x):
            x = self.proj(x).flatten(2).transpose(1, 2)
            for blk in self.blocks:
                x = blk(x)
            x = x.mean(dim=1)
            return self.softmax(self.head(x))

    return GFNet()


def test_gfnet_compiled_model():
    make = _compiled_model_program(
        _gfnet, lambda mod, out, y: mod.nn.functional.cross_entropy(out, y),
        lambda mod, i: (data(mod, i, 2, 3, 8, 8), labels(mod, i, 2, 5)))
    check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


def _outlook(mod):
    nn, F = mod.nn, mod.nn.functional

    class OutlookAttention(nn.Module):
        def __init__(self, dim, num_heads=1, kernel_size=3, padding=1, stride=1, qkv_bias=False, attn_drop=0.1):
            super().__init__()
            self.dim = dim
            self.num_heads = num_heads
            self.head_dim = dim // num_heads
            self.kernel_size = kernel_size
            self.padding = padding
            self.stride = stride
            self.scale = self.head_dim ** (-0.5)
            self.v_pj = nn.Linear(dim, dim, bias=qkv_bias)
            self.attn = nn.Linear(dim, kernel_size ** 4 * num_heads)
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(attn_drop)
            self.unflod = nn.Unfold(kernel_size, padding, stride)
            self.pool = nn.AvgPool2d(kernel_size=stride, stride=stride, ceil_mode=True)

        def forward(self, x):
            B, H, W, C = x.shape
            v = self.v_pj(x).permute(0, 3, 1, 2)
            h, w = math.ceil(H / self.stride), math.ceil(W / self.stride)
            v = self.unflod(v).reshape(B, self.num_heads, self.head_dim, self.kernel_size * self.kernel_size, h * w).permute(0, 1, 4, 3, 2)
            attn = self.pool(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
            attn = self.attn(attn).reshape(B, h * w, self.num_heads, self.kernel_size * self.kernel_size,
                                           self.kernel_size * self.kernel_size).permute(0, 2, 1, 3, 4)
            attn = self.scale * attn
            attn = attn.softmax(-1)
            attn = self.attn_drop(attn)
            out = (attn @ v).permute(0, 1, 4, 3, 2).reshape(B, C * self.kernel_size * self.kernel_size, h * w)
            out = F.fold(out, output_size=(H, W), kernel_size=self.kernel_size, padding=self.padding, stride=self.stride)
            out = self.proj(out.permute(0, 2, 3, 1))
            return self.proj_drop(out)

    return OutlookAttention(dim=4, num_heads=2, attn_drop=0.0)


def test_outlook_attention_compiled_model():
    make = _compiled_model_program(
        _outlook, lambda mod, out, y: ((out - y) ** 2).mean(),
        lambda mod, i: (data(mod, i, 2, 5, 5, 4), data(mod, i, 2, 5, 5, 4, seed=80)))
    check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


def _shuffle_criss_cross(mod):
    nn = mod.nn

    class ShuffleAttention(nn.Module):
        def __init__(self, channel=512, reduction=16, G=8):
            super().__init__()
            self.G = G
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.gn = nn.GroupNorm(channel // (2 * G), channel // (2 * G))
            self.cweight = nn.Parameter(mod.zeros(1, channel // (2 * G), 1, 1))
            self.cbias = nn.Parameter(mod.ones(1, channel // (2 * G), 1, 1))
            self.sweight = nn.Parameter(mod.zeros(1, channel // (2 * G), 1, 1))
            self.sbias = nn.Parameter(mod.ones(1, channel // (2 * G), 1, 1))
            self.sigmoid = nn.Sigmoid()

        def forward(self, x):
            b, c, h, w = x.size()
            x = x.view(b * self.G, -1, h, w)
            x_0, x_1 = x.chunk(2, dim=1)
            x_channel = self.cweight * self.avg_pool(x_0) + self.cbias
            x_channel = x_0 * self.sigmoid(x_channel)
            x_spatial = self.sweight * self.gn(x_1) + self.sbias
            x_spatial = x_1 * self.sigmoid(x_spatial)
            out = mod.cat([x_channel, x_spatial], dim=1).contiguous().view(b, -1, h, w)
            out = out.reshape(b, 2, -1, h, w).permute(0, 2, 1, 3, 4).reshape(b, -1, h, w)
            return out

    def INF(B, H, W):
        return -mod.diag(mod.tensor(float("inf")).repeat(H), 0).unsqueeze(0).repeat(B * W, 1, 1)

    class CrissCrossAttention(nn.Module):
        def __init__(self, in_dim):
            super().__init__()
            self.query_conv = nn.Conv2d(in_channels=in_dim, out_channels=in_dim // 8, kernel_size=1)
            self.key_conv = nn.Conv2d(in_channels=in_dim, out_channels=in_dim // 8, kernel_size=1)
            self.value_conv = nn.Conv2d(in_channels=in_dim, out_channels=in_dim, kernel_size=1)
            self.softmax = nn.Softmax(dim=3)
            self.gamma = nn.Parameter(mod.zeros(1))

        def forward(self, x):
            m, _, height, width = x.size()
            q, k, v = self.query_conv(x), self.key_conv(x), self.value_conv(x)
            q_H = q.permute(0, 3, 1, 2).contiguous().view(m * width, -1, height).permute(0, 2, 1)
            q_W = q.permute(0, 2, 1, 3).contiguous().view(m * height, -1, width).permute(0, 2, 1)
            k_H = k.permute(0, 3, 1, 2).contiguous().view(m * width, -1, height)
            k_W = k.permute(0, 2, 1, 3).contiguous().view(m * height, -1, width)
            v_H = v.permute(0, 3, 1, 2).contiguous().view(m * width, -1, height)
            v_W = v.permute(0, 2, 1, 3).contiguous().view(m * height, -1, width)
            energy_H = (mod.bmm(q_H, k_H) + INF(m, height, width)).view(m, width, height, height).permute(0, 2, 1, 3)
            energy_W = mod.bmm(q_W, k_W).view(m, height, width, width)
            concate = self.softmax(mod.cat([energy_H, energy_W], 3))
            att_H = concate[:, :, :, 0:height].permute(0, 2, 1, 3).contiguous().view(m * width, height, height)
            att_W = concate[:, :, :, height:height + width].contiguous().view(m * height, width, width)
            out_H = mod.bmm(v_H, att_H.permute(0, 2, 1)).view(m, width, -1, height).permute(0, 2, 3, 1)
            out_W = mod.bmm(v_W, att_W.permute(0, 2, 1)).view(m, height, -1, width).permute(0, 2, 1, 3)
            return self.gamma * (out_H + out_W) + x

    return nn.Sequential(ShuffleAttention(channel=16, G=2), CrissCrossAttention(16))


def test_shuffle_criss_cross_compiled_model():
    make = _compiled_model_program(
        _shuffle_criss_cross, lambda mod, out, y: ((out - y) ** 2).mean(),
        lambda mod, i: (data(mod, i, 2, 16, 3, 4), data(mod, i, 2, 16, 3, 4, seed=80)))
    check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
