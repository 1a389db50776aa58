"""float64 decoder of ggml tensor blocks, written from the published block layouts (gguf.md and
the block structs of ggml-common.h), independently of the C++ one (formats/src/ggml_dequant.cpp).

Each decoder views the bytes as a numpy structured array of blocks and computes every value
of every block at once with index arrays, in float64, where all the products are exact. The
C++ decoder computes in float32; rounding these values to float32 must give its results.

    decode(type_name, raw_bytes) -> np.ndarray[float64] of n_blocks * block_elements values
    quantize_mxfp4(float32 values) -> MXFP4 block bytes, as ggml's quantize_row_mxfp4_ref

Only numpy is needed.
"""
import numpy as np

QK_K = 256

# name -> (ggml type code, weights per block, bytes per block)
TYPES = {
    "Q4_0": (2, 32, 18),
    "Q4_1": (3, 32, 20),
    "Q5_0": (6, 32, 22),
    "Q5_1": (7, 32, 24),
    "Q8_0": (8, 32, 34),
    "Q2_K": (10, QK_K, 84),
    "Q3_K": (11, QK_K, 110),
    "Q4_K": (12, QK_K, 144),
    "Q5_K": (13, QK_K, 176),
    "Q6_K": (14, QK_K, 210),
    "Q8_K": (15, QK_K, 292),
    "IQ4_NL": (20, 32, 18),
    "IQ4_XS": (23, QK_K, 136),
    "MXFP4": (39, 32, 17),
}

# Block layouts as numpy structured dtypes (little-endian, packed: numpy adds no padding).
LAYOUTS = {
    "Q4_0": [("d", "<f2"), ("qs", "u1", 16)],
    "Q4_1": [("d", "<f2"), ("m", "<f2"), ("qs", "u1", 16)],
    "Q5_0": [("d", "<f2"), ("qh", "<u4"), ("qs", "u1", 16)],
    "Q5_1": [("d", "<f2"), ("m", "<f2"), ("qh", "<u4"), ("qs", "u1", 16)],
    "Q8_0": [("d", "<f2"), ("qs", "i1", 32)],
    "Q2_K": [("scales", "u1", 16), ("qs", "u1", 64), ("d", "<f2"), ("dmin", "<f2")],
    "Q3_K": [("hmask", "u1", 32), ("qs", "u1", 64), ("scales", "u1", 12), ("d", "<f2")],
    "Q4_K": [("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qs", "u1", 128)],
    "Q5_K": [("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qh", "u1", 32), ("qs", "u1", 128)],
    "Q6_K": [("ql", "u1", 128), ("qh", "u1", 64), ("scales", "i1", 16), ("d", "<f2")],
    "Q8_K": [("d", "<f4"), ("qs", "i1", 256), ("bsums", "<i2", 16)],
    "IQ4_NL": [("d", "<f2"), ("qs", "u1", 16)],
    "IQ4_XS": [("d", "<f2"), ("scales_h", "<u2"), ("scales_l", "u1", 4), ("qs", "u1", 128)],
    "MXFP4": [("e", "u1"), ("qs", "u1", 16)],
}

IQ4_NL_CODEBOOK = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=np.int64)
# ggml-common.h kvalues_mxfp4 (= kvalues_fp4): the E2M1 values doubled, nibble order of the OCP MX spec
# (bit 3 the sign, so nibble 8 is -0); ggml pairs them with half the E8M0 scale.
MXFP4_KVALUES = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.int64)

for _name, (_code, _elems, _nbytes) in TYPES.items():
    assert np.dtype(LAYOUTS[_name]).itemsize == _nbytes, _name


def blocks_of(type_name, raw):
    """The bytes as an array of blocks of the type's structured dtype."""
    dt = np.dtype(LAYOUTS[type_name])
    if len(raw) % dt.itemsize:
        raise ValueError("%s: %d bytes are not whole %d-byte blocks" % (type_name, len(raw), dt.itemsize))
    return np.frombuffer(bytes(raw), dtype=dt)


def _f64(field):
    return np.asarray(field, dtype=np.float64)[:, None]  # [blocks x 1], broadcast over weights


def _i64(a):
    return np.asarray(a, dtype=np.int64)


# -- 32-weight blocks: weight j < 16 is the low nibble of byte j, weight j >= 16 the high nibble of byte j - 16

def _nibbles32(qs):
    q = _i64(qs)
    return np.concatenate([q & 0xF, q >> 4], axis=1)  # [blocks x 32]


def _fifth_bits32(qh):
    """bit j of the little-endian u32 qh belongs to weight j."""
    return (_i64(qh)[:, None] >> np.arange(32)) & 1


def _q4_0(b):
    return _f64(b["d"]) * (_nibbles32(b["qs"]) - 8)


def _q4_1(b):
    return _f64(b["d"]) * _nibbles32(b["qs"]) + _f64(b["m"])


def _q5_0(b):
    return _f64(b["d"]) * ((_nibbles32(b["qs"]) + 16 * _fifth_bits32(b["qh"])) - 16)


def _q5_1(b):
    return _f64(b["d"]) * (_nibbles32(b["qs"]) + 16 * _fifth_bits32(b["qh"])) + _f64(b["m"])


def _q8_0(b):
    return _f64(b["d"]) * _i64(b["qs"])


def _iq4_nl(b):
    return _f64(b["d"]) * IQ4_NL_CODEBOOK[_nibbles32(b["qs"])]


def e8m0_half(e):
    """ggml_e8m0_to_fp32_half: half the E8M0 scale 2^(e - 127), i.e. 2^(e - 128), for every byte e
    (e < 2 gives the f32 subnormals 2^-128 and 2^-127; 255 is not treated as NaN)."""
    return np.ldexp(1.0, _i64(e) - 128)


def _mxfp4(b):
    """dequantize_row_mxfp4: kvalues_mxfp4[nibble] * 2^(e - 128); byte j holds element j (low nibble)
    and element j + 16 (high nibble), as Q4_0."""
    return e8m0_half(b["e"])[:, None] * MXFP4_KVALUES[_nibbles32(b["qs"])]


# -- K-quants (256 weights). Index maps per weight e = 0..255.

E = np.arange(QK_K)
SUB16 = E // 16            # 16-weight sub-block of e
SUB32 = E // 32            # 32-weight sub-block of e
HALF = E // 128            # which 128-weight half
QUARTER = (E % 128) // 32  # which 32-weight group of that half
LANE = E % 32


def _two_bit_fields(qs):
    """Q2_K / Q3_K low bits: the 32 bytes of half h hold four 2-bit fields; field s of byte i is weight 128h + 32s + i."""
    return (_i64(qs)[:, 32 * HALF + LANE] >> (2 * QUARTER)) & 3


def _q2_k(b):
    sc = _i64(b["scales"])[:, SUB16]
    return _f64(b["d"]) * (sc & 0xF) * _two_bit_fields(b["qs"]) - _f64(b["dmin"]) * (sc >> 4)


def _q3_k_scales(raw12):
    """16 six-bit scales minus 32: low nibbles of bytes 0..7 are scales 0..7, their high nibbles 8..15;
    bytes 8..11 hold the top two bits, scale 4k + m at bits 2k of byte 8 + m."""
    r = _i64(raw12)
    low = np.concatenate([r[:, 0:8] & 0xF, r[:, 0:8] >> 4], axis=1)
    idx = np.arange(16)
    top = (r[:, 8 + idx % 4] >> (2 * (idx // 4))) & 3
    return (low | (top << 4)) - 32


def _q3_k(b):
    scales = _q3_k_scales(b["scales"])[:, SUB16]
    high = (_i64(b["hmask"])[:, LANE] >> (4 * HALF + QUARTER)) & 1  # set bit: no -4
    q = _two_bit_fields(b["qs"]) - 4 * (1 - high)
    return _f64(b["d"]) * scales * q


def _k4_scales_mins(raw12):
    """8 six-bit scales and mins from 12 bytes: sub-blocks 0..3 take bytes 0..3 (scales) and 4..7 (mins),
    low six bits; sub-blocks 4..7 take the low / high nibble of bytes 8..11 and, as bits 4-5, the top two
    bits of bytes 0..3 (scales) and 4..7 (mins)."""
    r = _i64(raw12)
    sc = np.concatenate([r[:, 0:4] & 63, (r[:, 8:12] & 0xF) | ((r[:, 0:4] >> 6) << 4)], axis=1)
    mn = np.concatenate([r[:, 4:8] & 63, (r[:, 8:12] >> 4) | ((r[:, 4:8] >> 6) << 4)], axis=1)
    return sc, mn


def _k4_nibbles(qs):
    """Q4_K / Q5_K: sub-block 2k is the low nibbles of bytes 32k..32k+31, sub-block 2k+1 their high nibbles."""
    k, h = SUB32 // 2, SUB32 % 2
    return (_i64(qs)[:, 32 * k + LANE] >> (4 * h)) & 0xF


def _q4_k(b):
    sc, mn = _k4_scales_mins(b["scales"])
    return _f64(b["d"]) * sc[:, SUB32] * _k4_nibbles(b["qs"]) - _f64(b["dmin"]) * mn[:, SUB32]


def _q5_k(b):
    sc, mn = _k4_scales_mins(b["scales"])
    fifth = (_i64(b["qh"])[:, LANE] >> SUB32) & 1  # bit (sub-block) of qh[lane]
    q = _k4_nibbles(b["qs"]) + 16 * fifth
    return _f64(b["d"]) * sc[:, SUB32] * q - _f64(b["dmin"]) * mn[:, SUB32]


def _q6_k(b):
    """Half h: ql bytes 64h.., qh bytes 32h..; group s of the half takes low nibbles (s < 2) or high
    nibbles (s >= 2) of ql[64h + 32(s % 2) + lane] and bits 2s..2s+1 of qh[32h + lane]."""
    low = (_i64(b["ql"])[:, 64 * HALF + 32 * (QUARTER % 2) + LANE] >> (4 * (QUARTER // 2))) & 0xF
    high = (_i64(b["qh"])[:, 32 * HALF + LANE] >> (2 * QUARTER)) & 3
    q = (low | (high << 4)) - 32
    return _f64(b["d"]) * _i64(b["scales"])[:, SUB16] * q


def _iq4_xs(b):
    """Sub-block i = SUB32 has the six-bit scale (low nibble i % 2 of scales_l[i // 2], bits 2i..2i+1 of
    scales_h as bits 4-5) minus 32; weight e takes nibble (e % 32) // 16 of qs[16 i + e % 16]."""
    ls = ((_i64(b["scales_l"])[:, SUB32 // 2] >> (4 * (SUB32 % 2))) & 0xF) | (
        ((_i64(b["scales_h"])[:, None] >> (2 * SUB32)) & 3) << 4)
    nib = (_i64(b["qs"])[:, 16 * SUB32 + LANE % 16] >> (4 * (LANE // 16))) & 0xF
    return _f64(b["d"]) * (ls - 32) * IQ4_NL_CODEBOOK[nib]


def _q8_k(b):
    return _f64(b["d"]) * _i64(b["qs"])


DECODERS = {
    "Q4_0": _q4_0, "Q4_1": _q4_1, "Q5_0": _q5_0, "Q5_1": _q5_1, "Q8_0": _q8_0, "IQ4_NL": _iq4_nl,
    "Q2_K": _q2_k, "Q3_K": _q3_k, "Q4_K": _q4_k, "Q5_K": _q5_k, "Q6_K": _q6_k, "Q8_K": _q8_k,
    "IQ4_XS": _iq4_xs, "MXFP4": _mxfp4,
}


def decode(type_name, raw):
    """All values of the blocks in raw, float64, in storage order."""
    return DECODERS[type_name](blocks_of(type_name, raw)).reshape(-1)


def quantize_mxfp4(values):
    """ggml-quants.c quantize_row_mxfp4_ref on float32 values (a multiple of 32) -> block bytes.

    Per block of 32: amax = max |x|; e = floor(log2f(amax)) - 2 + 127 (0 when amax is 0), so the
    largest magnitude lands in [8, 16) times d = 2^(e - 128), the half scale; each element takes the
    first index i of kvalues_mxfp4 minimising fabsf(kvalues[i] * d - x) in float32 (ties to the lower
    index: +0 before -0, and between two neighbours the smaller code), element j < 16 in the low nibble
    of byte j, element j + 16 in its high nibble. log2f is taken as the float64 log2 rounded to float32
    (a correctly rounded log2f; it only matters for amax within an ulp or two below a power of two,
    where log2f rounds up to the integer). amax must be at least 2^-125 (e >= 0, as the C cast needs)."""
    x = np.asarray(values, dtype=np.float32).reshape(-1, 32)
    amax = np.max(np.abs(x), axis=1)
    lg = np.log2(np.where(amax > 0, amax, 1).astype(np.float64)).astype(np.float32)
    e = np.where(amax > 0, np.floor(lg).astype(np.int64) - 2 + 127, 0)
    if np.any((e < 0) | (e > 255)):
        raise ValueError("MXFP4: a block's largest magnitude is outside the E8M0 range")
    d = np.ldexp(np.float32(1.0), (e - 128).astype(np.int32)).astype(np.float32)  # exact, subnormals included
    candidates = MXFP4_KVALUES.astype(np.float32)[None, None, :] * d[:, None, None]  # exact products
    err = np.abs(candidates - x[:, :, None])  # float32: fabsf(kvalues[i] * d - x), rounded as in C
    idx = np.argmin(err, axis=2).astype(np.uint8)  # the first minimum, as the strict < of best_index_mxfp4
    out = np.zeros(len(x), dtype=np.dtype(LAYOUTS["MXFP4"]))
    out["e"] = e.astype(np.uint8)
    out["qs"] = idx[:, :16] | (idx[:, 16:] << 4)
    return out.tobytes()
