"""The digits example trains (one epoch), saves, reloads into a fresh model and gets the same
accuracy. Imports the example's train function rather than running a subprocess."""
import pytest

pytest.importorskip("sklearn")


def test_digits_one_epoch_trains_saves_and_reloads(tmp_path):
    from tracegrad.examples.digits import DigitsCNN, train
    import tracegrad

    path = tmp_path / "digits.safetensors"
    result = train(epochs=1, save=str(path), progress=False)
    assert result["test_accuracy"] > 0.5  # chance is 0.1
    assert result["reloaded_accuracy"] == result["test_accuracy"]
    assert path.exists()
    saved = tracegrad.load(path)
    expected = DigitsCNN().state_dict()
    assert list(saved) == list(expected)
    for name, value in result["model"].state_dict().items():
        assert tuple(saved[name].shape) == tuple(expected[name].shape)
        assert saved[name].tolist() == value.tolist()
