"""Findings of the deep OpInfo run (TRACEGRAD_OPINFO_SAMPLES=1000 over test_opinfo.py's error and
forward checks).

The one difference found is in which index ``mode`` returns among equal values: torch sorts each
row with std::sort, which keeps equal keys in input order only up to 16 elements (insertion sort),
so on longer rows its index among ties is libstdc++'s introsort's. test_opinfo.py therefore checks
the indices of mode/kthvalue/topk by what they pick (``assert_tie_indices``); these tests pin
tracegrad's choice where torch's is defined (short rows: the last of the equal values) and check
that the tie-aware comparison still rejects wrong indices.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")   # torch's OpInfo SampleInput module imports it

import tracegrad  # noqa: E402
from torch.testing._internal.opinfo.core import SampleInput  # noqa: E402

from _opinfo_helpers import assert_tie_indices  # noqa: E402

ROWS = [[1., 2, 1, 3, 1], [2., 0, 2, 0], [5., 5, 5, 5], [3., 2, 1]]
# NaN rows are left out: torch sorts them with `<`, under which NaN is unordered, so its mode of
# [nan, 2, 3] is nan at 0 by the insertion sort leaving the row as it is (tracegrad: 2 at 1)


@pytest.mark.parametrize("row", ROWS)
def test_mode_short_row_ties_pick_torchs_index(row):
    want = torch.mode(torch.tensor(row))
    got = tracegrad.mode(tracegrad.tensor(row))
    assert got.indices.item() == want.indices.item()
    torch.testing.assert_close(torch.tensor(got.values.item()), want.values, equal_nan=True)


def test_mode_dim_keepdim_matches_torch():
    x = [[1., 2, 2, 1, 3, 3], [0., 0, 1, 1, 1, 0]]
    for dim, keep in ((0, False), (1, True), (-1, False)):
        want = torch.mode(torch.tensor(x), dim, keep)
        got = tracegrad.mode(tracegrad.tensor(x), dim, keep)
        assert got.values.tolist() == want.values.tolist()
        assert got.indices.tolist() == want.indices.tolist()


def test_tie_indices_check_accepts_any_tied_index_and_rejects_others():
    x = torch.tensor([[1., 2, 1, 3], [4, 4, 5, 6]])
    ref = torch.mode(x, 1)   # values (1, 4), each at two positions
    sample = SampleInput(x, args=(1,))
    for ok in ([0, 0], [2, 1], [0, 1]):
        assert_tie_indices(tracegrad.tensor(ok), ref, sample, 0)
    for bad in ([1, 1], [2, 2], [4, 0]):
        with pytest.raises(AssertionError):
            assert_tie_indices(tracegrad.tensor(bad), ref, sample, 0)
    with pytest.raises(AssertionError):   # dtype is compared too
        assert_tie_indices(tracegrad.tensor([0, 0], dtype=tracegrad.int32), ref, sample, 0)
    kept = SampleInput(x, args=(1, True))
    assert_tie_indices(tracegrad.tensor([[2], [0]]), torch.mode(x, 1, True), kept, 0)


def test_mode_long_row_values_match_and_index_picks_the_mode():
    # 40 elements: past std::sort's insertion-sort cutoff, torch's index among ties is unspecified
    vals = [float(v % 7) for v in range(40)]
    x = torch.tensor(vals)
    ref = torch.mode(x)
    got = tracegrad.mode(tracegrad.tensor(vals))
    assert got.values.item() == ref.values.item()
    assert_tie_indices(got.indices, ref, SampleInput(x), 0)
