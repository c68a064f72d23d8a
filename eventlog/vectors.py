"""How an embedding is written in an ``entry.reembedded`` event: ``q8`` since this version.

A vector is ranked by its cosine with a query and linked to its nearest
neighbours; neither needs float32.  ``q8`` keeps each vector as its own
scale and one signed byte per dimension:

    scale   float32, little-endian: the largest magnitude of the vector / 127
    values  d × int8: round(x / scale), ties to even (0 for a zero vector)

384 dimensions take 388 bytes instead of 1,536, and the retrieval benchmark
ranks the same with them (README).  Lines written before (``f32``: d
little-endian float32) replay as they always did: the fold turns them into
``q8`` with the same arithmetic as a new line (``to_q8``), so a log mixing
both makes the same view as a log of either.

The arithmetic is float64, element by element (x · 127 / m, rounded), so
the same floats always give the same bytes.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SCALE = struct.Struct("<f")
LEVELS = 127


def q8_size(dimensions: int) -> int:
    """Bytes of a ``q8`` vector of ``dimensions``."""
    return SCALE.size + dimensions


def quantise(floats: npt.ArrayLike) -> bytes:
    """The ``q8`` bytes of one vector (any float array of one dimension)."""
    import numpy as np

    return quantise_rows(np.asarray(floats, dtype=np.float64).reshape(1, -1))[0]


def quantise_rows(matrix: npt.ArrayLike) -> list[bytes]:
    """The ``q8`` bytes of each row of ``matrix`` (a zero or non-finite row: all zeros)."""
    import numpy as np

    values = np.asarray(matrix, dtype=np.float64)
    peaks = np.max(np.abs(values), axis=1) if values.size else np.zeros(len(values))
    usable = np.isfinite(peaks) & (peaks > 0.0)
    divisor = np.where(usable, peaks, 1.0)[:, None]
    levels = np.where(usable[:, None], np.rint(values * LEVELS / divisor), 0.0).astype(np.int8)
    scales = np.where(usable, peaks / LEVELS, 0.0).astype("<f4")
    return [scale.tobytes() + row.tobytes() for scale, row in zip(scales, levels, strict=True)]


def to_q8(data: bytes, encoding: str, dimensions: int) -> bytes:
    """``data`` of ``encoding`` as ``q8`` (unchanged when it already is)."""
    if encoding == "q8":
        return data
    import numpy as np

    return quantise(np.frombuffer(data, dtype="<f4", count=dimensions))


def floats(data: bytes) -> npt.NDArray[np.float32]:
    """A ``q8`` vector as float32 values (scale × level)."""
    import numpy as np

    (scale,) = SCALE.unpack_from(data)
    levels = np.frombuffer(data, dtype=np.int8, offset=SCALE.size)
    return (levels.astype(np.float32) * np.float32(scale)).astype(np.float32)
