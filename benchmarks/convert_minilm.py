"""Make the compact all-MiniLM-L6-v2 weights memlog ships (``embeddings/minilm/``).

    python benchmarks/convert_minilm.py SOURCE_MODEL_DIR OUT_DIR

SOURCE_MODEL_DIR is the upstream sentence-transformers directory (its
``model.safetensors`` must have the pinned sha256; e.g. a Hugging Face cache
snapshot).  Writes ``model.int8.safetensors``: the word embeddings (30522 ×
384) as int8 with one float32 scale per row, each dense weight of the six
layers as int8 with one float32 scale per 64 consecutive values of a row
(``<name>`` I8 + ``<name>_scale`` F32, symmetric, ``scale = max|values| / 127``;
one scale per row alone loses too much on the FFN output matrices, whose rows
hold outliers of up to 175 standard deviations: cosine 0.9964 against the
reference, 0.9994 with groups of 64), everything else float32; ``position_ids``
and the unused pooler are left out.  ``vocab.txt`` and ``config.json`` are
copied.  The conversion is deterministic: the same source gives the same
bytes, whose sha256 ``embeddings/local.py`` pins.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

SOURCE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
DROPPED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")
GROUP = 64
COPIED = ("vocab.txt", "config.json")
DTYPES = {"F32": np.float32, "F16": np.float16, "I8": np.int8, "I64": np.int64}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = meta["data_offsets"]
        raw = data[8 + size + begin : 8 + size + end]
        out[name] = np.frombuffer(raw, dtype=DTYPES[meta["dtype"]]).reshape(meta["shape"])
    return out


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
    """Tensors in sorted name order, each starting on an 8-byte boundary of the data section."""
    header: dict[str, object] = {"__metadata__": metadata}
    offset = 0
    blobs = []
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        pad = -offset % 8
        blobs.append(b"\0" * pad)
        offset += pad
        blob = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {
            "dtype": NAMES[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-(8 + len(encoded)) % 8)  # data section starts 8-byte aligned
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(encoded)))
        handle.write(encoded)
        for blob in blobs:
            handle.write(blob)


def quantise_rows(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-row int8: ``weight ~= q * scale[:, None]``."""
    w = weight.astype(np.float64)
    peak = np.abs(w).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0)
    q = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def quantise_groups(weight: np.ndarray, group: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 with one scale per ``group`` consecutive values of a row.

    ``weight ~= (q.reshape(rows, -1, group) * scale[:, :, None]).reshape(rows, cols)``
    """
    rows, cols = weight.shape
    q, scale = quantise_rows(weight.reshape(rows * cols // group, group))
    return q.reshape(rows, cols), scale.reshape(rows, cols // group)


def is_large(name: str, tensor: np.ndarray) -> bool:
    """The word embeddings and the dense weights of the encoder layers."""
    if name == "embeddings.word_embeddings.weight":
        return True
    return name.startswith("encoder.layer.") and name.endswith(".weight") and tensor.ndim == 2


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    if sha256(source / "model.safetensors") != SOURCE_SHA256:
        sys.exit(f"{source / 'model.safetensors'} is not the expected all-MiniLM-L6-v2 file")
    tensors = read_safetensors(source / "model.safetensors")
    grouped: dict[str, np.ndarray] = {}
    for name, tensor in tensors.items():
        if name in DROPPED:
            continue
        if name == "embeddings.word_embeddings.weight":
            grouped[name], grouped[name + "_scale"] = quantise_rows(tensor)
        elif is_large(name, tensor):
            grouped[name], grouped[name + "_scale"] = quantise_groups(tensor, GROUP)
        else:
            grouped[name] = tensor.astype(np.float32)
    meta = {
        "source": "sentence-transformers/all-MiniLM-L6-v2 model.safetensors",
        "source_sha256": SOURCE_SHA256,
        "license": "Apache-2.0",
        "format": f"int8-groups-{GROUP}",
    }
    write_safetensors(out / "model.int8.safetensors", grouped, meta)
    for name in COPIED:
        shutil.copyfile(source / name, out / name)
    for path in sorted(p for p in out.iterdir() if p.is_file()):
        print(f"{sha256(path)}  {path.name}")


if __name__ == "__main__":
    main()
