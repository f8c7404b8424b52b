"""``tracegrad.nn.modules``: mirrors ``torch.nn.modules``."""
from .activation import (ELU, GELU, GLU, Hardsigmoid, Hardswish, PReLU, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, ReLU, ReLU6, Sigmoid,  # noqa: F401
                         SiLU, Softmax, Softmin, Softplus, Softsign, Tanh)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from .activation_more import CELU, RReLU, SELU, Hardshrink, Softmax2d, Softshrink, Tanhshrink, Threshold  # noqa: F401
from .container import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
from .linear import Bilinear, Identity, Linear  # noqa: F401
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss,  # noqa: F401
                   NLLLoss, NLLLoss2d, SmoothL1Loss, TripletMarginLoss)
from .loss_more import (LinearCrossEntropyLoss, LinearCrossEntropyOptions, CTCLoss, CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss,  # noqa: F401
                        MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, PoissonNLLLoss,
                        SoftMarginLoss, TripletMarginWithDistanceLoss)
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d,  # noqa: F401
                   LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
                   LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear)
from .layers_more import (AdaptiveMaxPool3d, ChannelShuffle, CrossMapLRN2d, LocalResponseNorm, LPPool1d, LPPool2d,  # noqa: F401
                          LPPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, SyncBatchNorm, FractionalMaxPool2d,
                          FractionalMaxPool3d)
from .module import Module  # noqa: F401
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, LayerNorm, RMSNorm  # noqa: F401
from .padding import *  # noqa: F401,F403
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: F401
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,  # noqa: F401
                      AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d)
from .pooling import AdaptiveAvgPool3d, AvgPool3d, MaxPool3d  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: F401
                          TransformerEncoder, TransformerEncoderLayer)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from . import utils  # noqa: F401,E402 (torch.nn.modules.utils: _pair, consume_prefix_in_state_dict_if_present)
from . import batchnorm, channelshuffle  # noqa: F401,E402 (torch's file names: nn.modules.batchnorm._BatchNorm)
