"""Warp functions on the CPU backend, lane by lane, against NumPy references written from the
PTX ISA (``shfl.sync``, ``vote.sync``, ``match.sync``, ``redux.sync``).

Each kernel is compiled once per process (a kernel keeps its CPU entry) and launched once per
module: its launch computes every case, and each test checks its own slice.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import cuforge as cf

FULL = 0xFFFFFFFF
WIDTHS = (1, 2, 4, 8, 16, 32)
OFFSETS = tuple(range(-4, 41))  # -4..-1 and 32..40 past the 5 bits that shfl.sync reads
KINDS = ("idx", "up", "down", "xor")
SHFL_THREADS = 256  # 2 blocks of 128: 8 warps


@cf.kernel
class Shuffles:
    """Every shuffle of every kind, width and offset, for four value types: out[kind][width][offset][thread]."""

    vi: cf.Out[cf.int32]
    vf: cf.Out[cf.float32]
    vd: cf.Out[cf.float64]
    vl: cf.Out[cf.int64]
    grid = 2
    block = 128
    body = """
    const unsigned full = 0xffffffffu;
    long long threads = (long long)gridDim.x * blockDim.x;
    long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    unsigned lane = threadIdx.x % 32, warp = unsigned(t / 32);
    int i = int(lane * 7 + 3 + 1000 * warp);
    float f = float(i) + 0.5f;
    double d = double(i) + 0.25;
    long long l = (long long)i | ((long long)(lane + 1) << 40);
    long long k = 0;
    for (int kind = 0; kind < 4; ++kind)
        for (int width = 1; width <= 32; width *= 2)
            for (int off = -4; off <= 40; ++off, ++k) {
                long long at = k * threads + t;
                if (kind == 0) {
                    vi[at] = __shfl_sync(full, i, off, width); vf[at] = __shfl_sync(full, f, off, width);
                    vd[at] = __shfl_sync(full, d, off, width); vl[at] = __shfl_sync(full, l, off, width);
                } else if (kind == 1) {
                    unsigned delta = unsigned(off);
                    vi[at] = __shfl_up_sync(full, i, delta, width); vf[at] = __shfl_up_sync(full, f, delta, width);
                    vd[at] = __shfl_up_sync(full, d, delta, width); vl[at] = __shfl_up_sync(full, l, delta, width);
                } else if (kind == 2) {
                    unsigned delta = unsigned(off);
                    vi[at] = __shfl_down_sync(full, i, delta, width); vf[at] = __shfl_down_sync(full, f, delta, width);
                    vd[at] = __shfl_down_sync(full, d, delta, width); vl[at] = __shfl_down_sync(full, l, delta, width);
                } else {
                    vi[at] = __shfl_xor_sync(full, i, off, width); vf[at] = __shfl_xor_sync(full, f, off, width);
                    vd[at] = __shfl_xor_sync(full, d, off, width); vl[at] = __shfl_xor_sync(full, l, off, width);
                }
            }
    """


def lane_values(threads: int) -> dict[str, np.ndarray]:
    """What each thread of Shuffles shuffles, per type (as its body computes them)."""
    t = np.arange(threads)
    i = (t % 32) * 7 + 3 + 1000 * (t // 32)
    return {
        "int32": i.astype(np.int32),
        "float32": i.astype(np.float32) + np.float32(0.5),
        "float64": i.astype(np.float64) + 0.25,
        "int64": i.astype(np.int64) | ((t % 32 + 1).astype(np.int64) << 40),
    }


def shfl_source(kind: str, b: int, width: int) -> np.ndarray:
    """The lane each of a warp's 32 lanes reads in ``shfl.sync`` (PTX ISA): own lane where the
    source is out of its segment. CUDA's ``__shfl*_sync(mask, v, b, width)`` passes c =
    ((32 - width) << 8) | 31 (c = (32 - width) << 8 for up) and the hardware reads b[4:0]."""
    segmask = 32 - width
    bval = b & 31
    lane = np.arange(32)
    min_lane = lane & segmask
    max_lane = min_lane if kind == "up" else min_lane | (31 & ~segmask)
    if kind == "idx":
        j = min_lane | (bval & ~segmask)
        valid = j <= max_lane
    elif kind == "up":
        j = lane - bval
        valid = j >= max_lane
    elif kind == "down":
        j = lane + bval
        valid = j <= max_lane
    else:
        j = lane ^ bval
        valid = j <= max_lane
    return np.where(valid, j, lane)


@functools.lru_cache(maxsize=1)
def shuffled() -> dict[str, np.ndarray]:
    shape = (len(KINDS), len(WIDTHS), len(OFFSETS), SHFL_THREADS)
    out = {
        "int32": np.zeros(shape, np.int32),
        "float32": np.zeros(shape, np.float32),
        "float64": np.zeros(shape, np.float64),
        "int64": np.zeros(shape, np.int64),
    }
    Shuffles(out["int32"], out["float32"], out["float64"], out["int64"], device="cpu")
    return out


def shuffle_mismatches(kind: str, dtype: str, offsets: range | tuple[int, ...]) -> list[str]:
    got = shuffled()[dtype][KINDS.index(kind)]
    values = lane_values(SHFL_THREADS)[dtype].reshape(-1, 32)  # (warp, lane)
    wrong = []
    for w, width in enumerate(WIDTHS):
        for b in offsets:
            want = values[:, shfl_source(kind, b, width)].ravel()
            have = got[w, OFFSETS.index(b)]
            if not np.array_equal(have, want):
                lanes = np.flatnonzero(have != want)[:4].tolist()
                wrong.append(f"width {width}, offset {b}: threads {lanes} got {have[lanes]}, want {want[lanes]}")
    return wrong


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "int64"])
@pytest.mark.parametrize("kind", KINDS)
def test_shuffle_every_lane_width_and_offset(kind, dtype):
    assert shuffle_mismatches(kind, dtype, range(32)) == []


@pytest.mark.parametrize("kind", KINDS)
def test_shuffle_offsets_past_five_bits(kind):
    beyond = tuple(b for b in OFFSETS if not 0 <= b < 32)
    assert [m for dtype in ("int32", "int64") for m in shuffle_mismatches(kind, dtype, beyond)] == []


def test_shuffle_reference_matches_cuda_documentation():
    """The reference itself, on the cases CUDA's programming guide spells out."""
    assert shfl_source("idx", 9, 8).tolist()[:8] == [1] * 8  # srcLane outside [0, width): srcLane % width
    assert shfl_source("idx", 40, 32).tolist() == [8] * 32
    assert shfl_source("up", 1, 8).tolist()[8:16] == [8, 8, 9, 10, 11, 12, 13, 14]  # first lane keeps its own
    assert shfl_source("down", 3, 16).tolist()[12:16] == [15, 13, 14, 15]
    # a later segment is out of reach (own value), an earlier one is not (CUDA's guide says so for xor)
    assert shfl_source("xor", 16, 16).tolist() == list(range(16)) + list(range(16))


# ---------------------------------------------------------------- votes, match, reduce

VOTE_BLOCK, VOTE_GRID = 128, 4
VOTE_THREADS = VOTE_BLOCK * VOTE_GRID
NONE = 0xDEADBEEF  # what a lane outside the mask leaves


@cf.kernel
class Votes:
    """Votes, matches and reductions over the full warp (rows 0-14) and over a mask per warp
    that only its lanes reach, inside an if (rows 15-24)."""

    pred: cf.In[cf.int32]
    keys: cf.In[cf.int32]
    vals: cf.In[cf.int32]
    masks: cf.In[cf.uint32]
    out: cf.Out[cf.uint32]
    n: cf.int64
    grid = VOTE_GRID
    block = VOTE_BLOCK
    body = """
    const unsigned full = 0xffffffffu;
    long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    unsigned lane = threadIdx.x % 32;
    int p = pred[t], key = keys[t], v = vals[t];
    int all_same = 0;
    out[0 * n + t] = __ballot_sync(full, p);
    out[1 * n + t] = __any_sync(full, p);
    out[2 * n + t] = __all_sync(full, p);
    out[3 * n + t] = __match_any_sync(full, key);
    out[4 * n + t] = __match_all_sync(full, key, &all_same);
    out[5 * n + t] = all_same;
    out[6 * n + t] = __reduce_add_sync(full, v);
    out[7 * n + t] = __reduce_min_sync(full, v);
    out[8 * n + t] = __reduce_max_sync(full, v);
    out[9 * n + t] = __reduce_min_sync(full, unsigned(v));
    out[10 * n + t] = __reduce_max_sync(full, unsigned(v));
    out[11 * n + t] = __reduce_and_sync(full, unsigned(v));
    out[12 * n + t] = __reduce_or_sync(full, unsigned(v));
    out[13 * n + t] = __reduce_xor_sync(full, unsigned(v));
    out[14 * n + t] = lane;
    for (int row = 15; row < 25; ++row) out[row * n + t] = 0xdeadbeefu;
    __syncwarp();
    unsigned m = masks[t / 32];
    if (m >> lane & 1) {
        unsigned leader = 0;
        while (!(m >> leader & 1)) ++leader;
        out[15 * n + t] = __ballot_sync(m, p);
        out[16 * n + t] = __any_sync(m, p);
        out[17 * n + t] = __all_sync(m, p);
        out[18 * n + t] = __match_any_sync(m, key);
        out[19 * n + t] = __match_all_sync(m, key, &all_same);
        out[20 * n + t] = all_same;
        out[21 * n + t] = __reduce_add_sync(m, v);
        out[22 * n + t] = __reduce_max_sync(m, v);
        out[23 * n + t] = __shfl_sync(m, unsigned(v), int(leader));
        __syncwarp(m);
        out[24 * n + t] = __reduce_or_sync(m, 1u << lane);
    }
    """


def vote_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(28)
    warps = VOTE_THREADS // 32
    pred = rng.integers(0, 2, VOTE_THREADS).astype(np.int32) * rng.integers(1, 9, VOTE_THREADS).astype(np.int32)
    pred[32:64] = 5  # a warp where every predicate holds
    pred[64:96] = 0  # and one where none does
    keys = rng.integers(0, 4, VOTE_THREADS).astype(np.int32)  # values that repeat
    keys[0:32] = 7  # a warp whose lanes all match
    keys[96:128] = np.where(np.arange(32) % 2 == 0, 3, np.arange(32) + 100)  # even lanes match
    vals = rng.integers(-(2**31), 2**31, VOTE_THREADS, dtype=np.int64).astype(np.int32)
    vals[128:160] = 2**31 - 1  # a sum that wraps around
    masks = rng.integers(1, 2**32, warps, dtype=np.uint64).astype(np.uint32)
    masks[:8] = [FULL, 1 << 5, 0x55555555, 0xFFFF0000, 0x80000001, FULL, 0x55555555, 0x0000FFFF]
    return {"pred": pred, "keys": keys, "vals": vals, "masks": masks}


@functools.lru_cache(maxsize=1)
def votes() -> tuple[dict[str, np.ndarray], np.ndarray]:
    inputs = vote_inputs()
    out = np.zeros((25, VOTE_THREADS), np.uint32)
    Votes(inputs["pred"], inputs["keys"], inputs["vals"], inputs["masks"], out, VOTE_THREADS, device="cpu")
    return inputs, out


def bits(flags: np.ndarray) -> int:
    return int(sum(1 << int(lane) for lane in np.flatnonzero(flags)))


def warp_reference(pred: np.ndarray, keys: np.ndarray, vals: np.ndarray, mask: int) -> dict[str, np.ndarray]:
    """What each lane of one warp gets from the warp functions with ``mask`` (PTX vote/match/redux)."""
    lanes = np.array([(mask >> lane) & 1 for lane in range(32)], bool)
    ballot = bits(lanes & (pred != 0))
    match_any = np.array([bits(lanes & (keys == keys[lane])) for lane in range(32)], np.uint32)
    same = bool((keys[lanes] == keys[lanes][0]).all())
    v = vals[lanes].astype(np.int64)
    u = v & 0xFFFFFFFF
    return {
        "ballot": np.uint32(ballot),
        "any": np.uint32(ballot != 0),
        "all": np.uint32(ballot == mask),
        "match_any": match_any,
        "match_all": np.uint32(mask if same else 0),
        "match_all_pred": np.uint32(same),
        "add": np.uint32(int(v.sum()) & 0xFFFFFFFF),
        "min": np.uint32(int(v.min()) & 0xFFFFFFFF),
        "max": np.uint32(int(v.max()) & 0xFFFFFFFF),
        "umin": np.uint32(u.min()),
        "umax": np.uint32(u.max()),
        "and": np.uint32(functools.reduce(lambda a, b: a & b, u.tolist())),
        "or": np.uint32(functools.reduce(lambda a, b: a | b, u.tolist())),
        "xor": np.uint32(functools.reduce(lambda a, b: a ^ b, u.tolist())),
        "leader": np.uint32(u[0]),
        "lane_bits": np.uint32(mask),
    }


FULL_ROWS = ("ballot", "any", "all", "match_any", "match_all", "match_all_pred", "add", "min", "max", "umin", "umax",
             "and", "or", "xor")  # fmt: skip
MASKED_ROWS = {15: "ballot", 16: "any", 17: "all", 18: "match_any", 19: "match_all", 20: "match_all_pred", 21: "add",
               22: "max", 23: "leader", 24: "lane_bits"}  # fmt: skip


@pytest.mark.parametrize("row, name", list(enumerate(FULL_ROWS)), ids=FULL_ROWS)
def test_full_warp_votes_matches_and_reductions(row, name):
    inputs, out = votes()
    for w in range(VOTE_THREADS // 32):
        at = slice(32 * w, 32 * w + 32)
        want = warp_reference(inputs["pred"][at], inputs["keys"][at], inputs["vals"][at], FULL)[name]
        np.testing.assert_array_equal(out[row, at], np.broadcast_to(want, (32,)), err_msg=f"{name}, warp {w}")


def test_vote_cases_cover_all_any_and_match_all():
    _, out = votes()
    assert out[2, 32:64].tolist() == [1] * 32 and out[1, 64:96].tolist() == [0] * 32  # all true; none true
    assert out[5, 0:32].tolist() == [1] * 32 and out[4, 0:32].tolist() == [FULL] * 32  # every lane matches
    assert out[3, 96] == 0x55555555  # even lanes share key 3
    assert out[6, 128] == (32 * (2**31 - 1)) & 0xFFFFFFFF  # the sum wraps as on the GPU


@pytest.mark.parametrize("row, name", list(MASKED_ROWS.items()), ids=list(MASKED_ROWS.values()))
def test_partial_mask_lanes_inside_if(row, name):
    inputs, out = votes()
    for w in range(VOTE_THREADS // 32):
        at = slice(32 * w, 32 * w + 32)
        mask = int(inputs["masks"][w])
        want = np.broadcast_to(warp_reference(inputs["pred"][at], inputs["keys"][at], inputs["vals"][at], mask)[name], (32,))
        lanes = np.array([(mask >> lane) & 1 for lane in range(32)], bool)
        np.testing.assert_array_equal(out[row, at][lanes], want[lanes], err_msg=f"{name}, warp {w}, mask {mask:#x}")
        assert (out[row, at][~lanes] == NONE).all()


def test_lane_id_is_thread_index_mod_32():
    _, out = votes()
    assert out[14].tolist() == [t % 32 for t in range(VOTE_THREADS)]


# ---------------------------------------------------------------- warps of odd blocks


@cf.kernel
class WarpShapes:
    """Warps by linear thread index in 1-, 2- and 3-D blocks, a partial last warp, and __activemask."""

    pred: cf.In[cf.int32]
    out: cf.Out[cf.uint32]
    n: cf.int64
    activemask_only: cf.int32
    body = """
    unsigned lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    long long t = blockIdx.x * (long long)(blockDim.x * blockDim.y * blockDim.z) + lin;
    out[0 * n + t] = __activemask();
    if (activemask_only) return;
    out[1 * n + t] = __ballot_sync(0xffffffffu, pred[t]);
    unsigned down = __shfl_down_sync(0xffffffffu, unsigned(t), 1);  // (undefined from past the block's last thread)
    if (lin + 1 < blockDim.x * blockDim.y * blockDim.z || lin % 32 == 31) out[2 * n + t] = down;
    out[3 * n + t] = __shfl_sync(0xffffffffu, lin, 0);
    unsigned active = __activemask();
    out[4 * n + t] = active;
    out[5 * n + t] = __reduce_add_sync(active, 1u);
    out[6 * n + t] = threadIdx.x + 100 * threadIdx.y + 10000 * threadIdx.z;
    // lanes 0 and 1 go on to a warp function of their own while the others still wait to read the sum
    unsigned total = __reduce_add_sync(active, 1u);
    if (lin % 32 < 2) __ballot_sync(3u, 1);
    out[7 * n + t] = total;
    """


def warp_shapes(block: tuple[int, int, int], grid: int, activemask_only: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    per_block = block[0] * block[1] * block[2]
    n = per_block * grid
    pred = np.random.default_rng(per_block).integers(0, 2, n).astype(np.int32)
    out = np.zeros((8, n), np.uint32)
    WarpShapes(pred, out, n, activemask_only, grid=grid, block=block, device="cpu")
    return pred, out, per_block


def warps_of(per_block: int, grid: int):
    """(block, first linear index, live lanes) of every warp of a launch."""
    return [(b, w0, min(32, per_block - w0)) for b in range(grid) for w0 in range(0, per_block, 32)]


SHAPES = [((48, 1, 1), 3), ((8, 8, 1), 2), ((4, 4, 4), 2), ((16, 3, 1), 2)]


@pytest.mark.parametrize("block, grid", SHAPES, ids=["48", "8x8", "4x4x4", "16x3"])
def test_warps_by_linear_thread_index(block, grid):
    pred, out, per_block = warp_shapes(block, grid)
    lin = np.tile(np.arange(per_block), grid)
    t = np.arange(per_block * grid)
    for b, w0, live in warps_of(per_block, grid):
        at = slice(b * per_block + w0, b * per_block + w0 + live)
        live_mask = FULL if live == 32 else (1 << live) - 1
        assert out[1, at].tolist() == [bits(pred[at] != 0)] * live
        assert out[2, at][: live - 1].tolist() == (t[at][1:]).tolist()  # lane + 1 where that lane exists
        assert out[3, at].tolist() == [w0] * live
        assert out[4, at].tolist() == [live_mask] * live
        assert out[5, at].tolist() == [live] * live
    x, y, z = lin % block[0], (lin // block[0]) % block[1], lin // (block[0] * block[1])
    assert out[6].tolist() == (x + 100 * y + 10000 * z).tolist()


@pytest.mark.parametrize("block, grid", SHAPES[:2], ids=["48", "8x8"])
def test_activemask_of_convergent_threads_that_reach_no_warp_function(block, grid):
    _, out, per_block = warp_shapes(block, grid, activemask_only=1)
    for b, w0, live in warps_of(per_block, grid):
        at = b * per_block + w0
        assert out[0, at : at + live].tolist() == [FULL if live == 32 else (1 << live) - 1] * live


def test_activemask_where_the_first_thread_reaches_a_warp_function():
    _, out, per_block = warp_shapes((48, 1, 1), 3)
    for b, w0, live in warps_of(per_block, 3):
        at = b * per_block + w0
        assert out[0, at : at + live].tolist() == [FULL if live == 32 else (1 << live) - 1] * live


def test_warp_results_survive_a_smaller_mask_s_next_warp_function():
    _, out, per_block = warp_shapes((48, 1, 1), 3)
    for b, w0, live in warps_of(per_block, 3):
        at = b * per_block + w0
        assert out[7, at : at + live].tolist() == [live] * live


# ---------------------------------------------------------------- subset masks, then the whole warp

ROUNDS = 6


@cf.kernel
class MaskRounds:
    """Each round, per warp: a reduction over mask a in a's lanes, a shuffle from mask b's first
    lane in b's lanes (masks that overlap), then __syncwarp() in every lane (sm_70's pattern:
    a lane outside a mask goes on; one that reaches a whole-warp function waits)."""

    vals: cf.In[cf.int32]
    masks: cf.In[cf.uint32]
    red: cf.Out[cf.int32]
    got: cf.Out[cf.int32]
    n: cf.int64
    block = 96
    body = """
    long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    unsigned lane = threadIdx.x % 32;
    long long warp = t / 32;
    for (int r = 0; r < ROUNDS; ++r) {
        unsigned a = masks[(warp * ROUNDS + r) * 2], b = masks[(warp * ROUNDS + r) * 2 + 1];
        int v = vals[r * n + t];
        int x = -1, y = -1;
        if (a >> lane & 1) x = __reduce_max_sync(a, v);
        if (b >> lane & 1) y = __shfl_sync(b, v, __ffs(b) - 1);
        __syncwarp();
        red[r * n + t] = x;
        got[r * n + t] = y;
    }
    """
    options = cf.CompileOptions(defines={"ROUNDS": str(ROUNDS)})


def test_subset_mask_functions_then_syncwarp_in_a_loop():
    rng = np.random.default_rng(70)
    grid = 2
    n = grid * 96
    warps = n // 32
    vals = rng.integers(-1000, 1000, (ROUNDS, n)).astype(np.int32)
    masks = rng.integers(1, 2**32, (warps, ROUNDS, 2), dtype=np.uint64).astype(np.uint32)
    masks[0, 0] = [0x42108421, 0x42108421]  # the sm_70 example: every fifth lane, then __syncwarp()
    masks[0, 1] = [0x00000003, 0x00000006]  # lane 1 in both: b's function waits for it to leave a's
    masks[1, 0] = [FULL, 0x80000000]
    red, got = np.zeros((ROUNDS, n), np.int32), np.zeros((ROUNDS, n), np.int32)
    MaskRounds(vals, masks.ravel(), red, got, n, grid=grid, device="cpu")

    def bits_of(m: int) -> np.ndarray:
        return np.array([(int(m) >> lane) & 1 for lane in range(32)], bool)

    for w in range(warps):
        for r in range(ROUNDS):
            at = slice(32 * w, 32 * w + 32)
            v = vals[r, at]
            a, b = bits_of(masks[w, r, 0]), bits_of(masks[w, r, 1])
            np.testing.assert_array_equal(red[r, at], np.where(a, v[a].max(), -1), err_msg=f"warp {w}, round {r}")
            np.testing.assert_array_equal(got[r, at], np.where(b, v[np.flatnonzero(b)[0]], -1), err_msg=f"warp {w}, round {r}")


@cf.kernel
class CrossedWarpFunctions:
    """Lanes 0 and 1 of mask 0x3 call two different warp functions: each waits for the other."""

    out: cf.Out[cf.int32]
    block = 32
    body = """
    unsigned lane = threadIdx.x % 32;
    if (lane == 0) out[lane] = __shfl_sync(0x3u, 7, 0);
    else if (lane == 1) out[lane] = __ballot_sync(0x3u, 1);
    """


def test_lanes_of_one_mask_at_different_warp_functions_is_a_launch_error():
    with pytest.raises(
        cf.LaunchError,
        match=r"CrossedWarpFunctions .* block \(0, 0, 0\): thread 1 \(lane 1\) called __ballot_sync \(mask 0x00000003, "
        r"width 32\) at CrossedWarpFunctions.body, line 3 while lanes 0x00000001 of its warp wait at __shfl_sync "
        r"\(mask 0x00000003, width 32\) at CrossedWarpFunctions.body, line 2, each waiting for the other",
    ):
        CrossedWarpFunctions(np.zeros(32, np.int32), grid=1, device="cpu")
