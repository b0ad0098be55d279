"""The ONNX preparation gates judge every text of the sample, not the mean (synthetic
vectors: no model, no export).

One text of the int8 model below the threshold refuses it even when the mean passes;
one text of the fp32 export below ``FP32_MIN_COSINE`` is a broken export (FatalError)
even when the mean passes. Vectors with exact cosines to a reference stand in for the
models, since the gates only compare vectors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from headwater.errors import FatalError
from headwater.pipeline.embed.onnx_prepare import FP32_MIN_COSINE, MIN_COSINE, fp32_gate, int8_gate

TEXTS = 50
DIMENSION = 16


def reference() -> np.ndarray:
    vectors = np.random.default_rng(7).normal(size=(TEXTS, DIMENSION))
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def at_cosines(ref: np.ndarray, cosines: list[float]) -> np.ndarray:
    """Unit vectors whose cosine to each reference row is exactly the given one."""
    out = []
    rng = np.random.default_rng(11)
    for row, cosine in zip(ref, cosines, strict=True):
        other = rng.normal(size=DIMENSION)
        other -= other.dot(row) * row  # orthogonal to the reference row
        other /= np.linalg.norm(other)
        out.append(cosine * row + np.sqrt(1.0 - cosine**2) * other)
    return np.asarray(out)


def one_bad(good: float, bad: float) -> list[float]:
    return [bad if i == 7 else good for i in range(TEXTS)]


def test_one_text_below_the_threshold_refuses_int8_though_the_mean_passes() -> None:
    ref = reference()
    cosines = one_bad(1.0, 0.9)
    assert np.mean(cosines) >= MIN_COSINE  # a mean gate would pass this model
    stats, refused = int8_gate(at_cosines(ref, cosines), ref, MIN_COSINE)
    assert stats["min"] == pytest.approx(0.9) and stats["mean"] >= MIN_COSINE
    assert refused is not None and "min cosine to torch 0.9000" in refused, refused
    assert f"expected >= {MIN_COSINE}" in refused and "runtime 'onnx'" in refused


def test_int8_passes_when_every_text_meets_the_threshold() -> None:
    ref = reference()
    stats, refused = int8_gate(at_cosines(ref, [MIN_COSINE + 0.001] * TEXTS), ref, MIN_COSINE)
    assert refused is None and stats["min"] >= MIN_COSINE


def test_one_text_below_the_fp32_threshold_is_a_broken_export_though_the_mean_passes() -> None:
    ref = reference()
    cosines = one_bad(1.0, 0.99)
    assert np.mean(cosines) >= FP32_MIN_COSINE  # a mean gate would pass this export
    with pytest.raises(FatalError) as broken:
        fp32_gate(at_cosines(ref, cosines), ref, Path("/models/minilm"))
    message = str(broken.value)
    assert "the ONNX export of /models/minilm disagrees with torch" in message, message
    assert "min cosine 0.9900 on 50 texts" in message and 'runtime = "torch"' in message


def test_an_fp32_export_whose_every_text_agrees_passes() -> None:
    ref = reference()
    stats = fp32_gate(at_cosines(ref, [0.9995] * TEXTS), ref, Path("/models/minilm"))
    assert stats["min"] == pytest.approx(0.9995) and stats["mean"] == pytest.approx(0.9995)
