"""Simple Q4_K / Q6_K quantisers and block packers for test fixtures (numpy only).

They only need to produce VALID blocks whose values approximate the input, so that a fixture
model built from them behaves like a model; they are not ggml's quantisers (which search
scales more carefully) and nothing compares their choices with ggml's. What a block decodes
to is defined by ggml_blocks_reference.decode, which the fixtures use for the reference.
"""
import numpy as np

import ggml_blocks_reference as ref


def _f16(x):
    """Nearest finite f16 (as float64), never 0 (a zero super-scale would zero the block)."""
    h = np.asarray(x, dtype=np.float64).astype(np.float16)
    h = np.where(h == 0, np.float16(2.0 ** -24), h)
    return h


def pack_q4_k(d, dmin, sc, mn, q):
    """d, dmin [nb] f16; sc, mn [nb x 8] in 0..63; q [nb x 256] in 0..15 -> bytes."""
    nb = q.shape[0]
    b = np.zeros(nb, dtype=np.dtype(ref.LAYOUTS["Q4_K"]))
    b["d"], b["dmin"] = d, dmin
    raw = np.zeros((nb, 12), dtype=np.int64)
    raw[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    raw[:, 4:8] = mn[:, 0:4] | ((mn[:, 4:8] >> 4) << 6)
    raw[:, 8:12] = (sc[:, 4:8] & 0xF) | ((mn[:, 4:8] & 0xF) << 4)
    b["scales"] = raw.astype(np.uint8)
    qs = np.zeros((nb, 128), dtype=np.int64)
    for k in range(4):
        qs[:, 32 * k:32 * k + 32] = q[:, 64 * k:64 * k + 32] | (q[:, 64 * k + 32:64 * k + 64] << 4)
    b["qs"] = qs.astype(np.uint8)
    return b.tobytes()


def pack_q6_k(d, sc, q):
    """d [nb] f16; sc [nb x 16] in -128..127; q [nb x 256] in -32..31 -> bytes."""
    nb = q.shape[0]
    b = np.zeros(nb, dtype=np.dtype(ref.LAYOUTS["Q6_K"]))
    b["d"] = d
    b["scales"] = sc.astype(np.int8)
    u = q + 32
    ql = np.zeros((nb, 128), dtype=np.int64)
    qh = np.zeros((nb, 64), dtype=np.int64)
    lanes = np.arange(32)
    for h in range(2):
        for s in range(4):
            w = u[:, 128 * h + 32 * s + lanes]
            ql[:, 64 * h + 32 * (s % 2) + lanes] |= (w & 0xF) << (4 * (s // 2))
            qh[:, 32 * h + lanes] |= (w >> 4) << (2 * s)
    b["ql"], b["qh"] = ql.astype(np.uint8), qh.astype(np.uint8)
    return b.tobytes()


def quantize_q4_k(x):
    """x [rows x cols] (cols % 256 == 0) -> bytes: per 32-weight sub-block an affine 4-bit grid."""
    v = np.asarray(x, dtype=np.float64).reshape(-1, 8, 32)
    lo = np.minimum(v.min(axis=2), 0.0)
    span = (v.max(axis=2) - lo) / 15.0
    d = _f16(span.max(axis=1) / 63.0).astype(np.float64)
    dmin = _f16((-lo).max(axis=1) / 63.0).astype(np.float64)
    sc = np.clip(np.rint(span / d[:, None]), 1, 63).astype(np.int64)
    mn = np.clip(np.rint(-lo / dmin[:, None]), 0, 63).astype(np.int64)
    step = (d[:, None] * sc)[:, :, None]
    q = np.clip(np.rint((v + (dmin[:, None] * mn)[:, :, None]) / step), 0, 15).astype(np.int64)
    return pack_q4_k(d.astype(np.float16), dmin.astype(np.float16), sc, mn, q.reshape(-1, 256))


def quantize_q6_k(x):
    """x [rows x cols] (cols % 256 == 0) -> bytes: per 16-weight sub-block a symmetric 6-bit grid."""
    v = np.asarray(x, dtype=np.float64).reshape(-1, 16, 16)
    scale = np.abs(v).max(axis=2) / 31.0
    d = _f16(scale.max(axis=1) / 127.0).astype(np.float64)
    sc = np.clip(np.rint(scale / d[:, None]), 1, 127).astype(np.int64)
    step = (d[:, None] * sc)[:, :, None]
    q = np.clip(np.rint(v / step), -32, 31).astype(np.int64)
    return pack_q6_k(d.astype(np.float16), sc, q.reshape(-1, 256))


QUANTIZERS = {"Q4_K": quantize_q4_k, "Q6_K": quantize_q6_k}
