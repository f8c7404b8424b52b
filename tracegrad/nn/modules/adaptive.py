"""Mirrors ``torch.nn.AdaptiveLogSoftmaxWithLoss``: the efficient softmax of Grave et al. for
large vocabularies -- a head over the frequent classes plus one slot per cluster of rarer
ones, each cluster a low-rank two-layer projection. Parameters, their names, shapes and
initialization as torch (so a torch ``state_dict`` loads); values and gradients follow from
``linear``/``log_softmax``/``gather``."""
from __future__ import annotations

import collections

import tracegrad

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = collections.namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """``AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value=4.0,
    head_bias=False)``: classes ``[0, cutoffs[0])`` are the head's shortlist; cluster ``i``
    holds ``[cutoffs[i], cutoffs[i+1])`` (the last ends at ``n_classes``) behind
    ``Linear(in_features, in_features // div_value**(i+1)) -> Linear(.., cluster size)``.

    ``forward(input (N, in_features) or (in_features,), target (N,) or ())`` returns the named
    tuple ``(output, loss)``: each row's log-probability of its target and the mean negative.
    ``log_prob(input)`` gives all ``n_classes`` log-probabilities, ``predict(input)`` the argmax.
    Raises ValueError for bad cutoffs, RuntimeError for mismatched shapes or a target outside
    ``[0, n_classes)``, as torch."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = dict(device=device, dtype=dtype)
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, size, bias=False, **kw)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for first, second in self.tail:
            first.reset_parameters()
            second.reset_parameters()

    def forward(self, input_, target_):
        if target_.dim() == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        x = input_ if batched else input_.unsqueeze(0)
        t = target_ if batched else target_.unsqueeze(0)
        if t.numel() and bool(((t < 0) | (t >= self.n_classes)).any()):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{int(t.min())}, {int(t.max())}] were found. ")
        # each row reads one head column: its own class in the shortlist, else its cluster's slot
        cluster = tracegrad.bucketize(t, tracegrad.tensor(self.cutoffs[:-1]), right=True)
        column = tracegrad.where(cluster == 0, t, self.shortlist_size + cluster - 1)
        head_logprob = F.log_softmax(self.head(x), dim=1)
        output = head_logprob.gather(1, column.unsqueeze(1)).squeeze(1)
        for i in range(self.n_clusters):
            rows = (cluster == i + 1).nonzero().flatten()
            if rows.numel() == 0:
                continue
            logprob = F.log_softmax(self.tail[i](x.index_select(0, rows)), dim=1)
            local = (t.index_select(0, rows) - self.cutoffs[i]).unsqueeze(1)
            output = output.index_add(0, rows, logprob.gather(1, local).squeeze(1))
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, x, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](x), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return tracegrad.cat(parts, 1)

    def _head_2d(self, input, api):
        """The head's output for a batch ``(N, in_features)``: torch's log_prob/predict take no
        unbatched input (the head runs first, then dim 1 is out of range: IndexError)."""
        head_output = self.head(input)
        if input.dim() < 2:
            raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got 1) "
                             f"(AdaptiveLogSoftmaxWithLoss.{api} takes a batch (N, in_features))")
        return head_output

    def log_prob(self, input):
        """All ``n_classes`` log-probabilities: ``(N, n_classes)``. IndexError for a 1-D input,
        RuntimeError for more than 2 dims (torch's shapes do not fit)."""
        head_output = self._head_2d(input, "log_prob")
        if input.dim() > 2:
            raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss.log_prob: expected a 2-D input (N, in_features), got "
                               f"{list(input.shape)}: the class log-probabilities cannot be expanded to its shape")
        return self._full_log_prob(input, head_output)

    def predict(self, input):
        """The most likely class per row (int64): ``log_prob(input).argmax(-1)``. As torch, a
        batch whose head picks only shortlist classes is answered from the head alone (so an
        input of more than 2 dims gives the head's argmax over dim 1 then; RuntimeError when a
        cluster must be read)."""
        head_output = self._head_2d(input, "predict")
        if input.dim() > 2:
            output = head_output.argmax(1)
            if not bool((output >= self.shortlist_size).any()):
                return output
        return self.log_prob(input).argmax(-1)
