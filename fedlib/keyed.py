"""Keyed draws: minibatches and dropout masks as a pure function of (seed, client, round, step,
position), computed for all clients of a step at once on the device the model lives on, with
the same bits on every device.

The generator is Threefry-2x32 with 20 rounds (Salmon, Moraes, Dror & Shaw 2011, "Parallel
random numbers: as easy as 1, 2, 3", SC'11, Sec. 3 and Table 2 for the rotation constants),
the counter-based generator JAX keys its random numbers with. It needs only 32-bit addition,
rotation and exclusive or, so it is exact in any integer arithmetic wide enough:

* on a CPU, numpy ``uint32`` arrays, whose addition wraps modulo 2^32 by definition (and runs
  as fast as a ``torch.Generator``'s floats: ``benchmarks/README.md``);
* on any other device, torch ``int64`` tensors holding uint32 values, masked with
  ``0xFFFFFFFF`` after every addition and shift (no product ever leaves 64 bits, so nothing
  relies on overflow behaviour, which differs between C++ compilers and devices).

The two agree bit for bit (``tests/test_keyed.py``, which also checks the generator against the
known-answer vectors of the Random123 distribution).

Keys. The problem's seed gives the key ``(seed mod 2^32, seed div 2^32 mod 2^32)``; a stream is
keyed by two more applications of the generator, first on the counter (client, round), then on
(step, stream) with stream 0 for the minibatch and 1 + l for the l-th dropout call of the forward
pass. A stream's words are the generator on counters (0, q), q = 0, 1, ...: word 2q is the first
output, 2q+1 the second. Nothing depends on which other clients are active, on the engine, on
threads or on the device.

Minibatches (without replacement, as a data loader's shuffled epoch): the j-th sample of a
client of n_i samples gets the stream's j-th word as its sort key; the batch is the m =
min(B, n_i) samples of smallest key, in increasing order of key. Sorting i.i.d. uniform keys
gives every ordered m-subset the same probability; two equal keys (a 32-bit collision,
probability about n_i^2 / 2^33 per draw, ~4e-5 for 600 samples) are ordered by position, by a
stable sort, so the result is still a function of the key alone. A sort of per-position keys
was chosen over a keyed Feistel permutation because it vectorises over clients of different
sizes in one sort (positions past a client's n_i get a key above every word and sort last) and
sorts are deterministic on every torch device. Clients with n_i < B are padded as in the
legacy draws: copies of the first drawn sample with weight 0.

Dropout masks: element e of a layer's mask (row-major over the client's rows of the batch, so
the first m rows do not depend on the padding) takes 16 bits, the half ``e mod 2`` of word
``e div 2`` (low half first). It is dropped when those bits are below ``round(p * 2^16)``: the
dropout probability is p rounded to a multiple of 2^-16 (0.2 becomes 0.1999969; the legacy
masks compare a 24-bit float with p), and kept elements are scaled by 1 / (1 - p) as
``nn.Dropout`` does. 16 bits per element rather than 32 halve the work; the rounding of p is
far below the sampling noise of any mask.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import torch

from ._validate import InputError, check_real

__all__ = ["COMPILED", "DRAWS", "MINIBATCH", "drop_threshold", "dropout_bits", "dropout_keep",
           "minibatch_positions", "step_draws", "stream_keys", "threefry2x32", "words"]

#: the draw schemes a neural problem knows: "legacy" (a ``torch.Generator`` per client and step,
#: seeded through ``numpy.random.SeedSequence``: every store computed before keyed draws existed)
#: and "keyed" (this module)
DRAWS = ("legacy", "keyed")

#: the stream of the minibatch; the l-th dropout call of a forward pass uses stream 1 + l
MINIBATCH = 0

_M = 0xFFFFFFFF
_PARITY = 0x1BD11BDA
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_SENTINEL = 1 << 32          # a sort key above every 32-bit word: positions past a client's data
_CHUNK = 1 << 15             # counters per numpy pass (3 x 128 KiB of words: in a core's L2 cache)


def _threefry_np(k0, k1, c0, c1) -> tuple[np.ndarray, np.ndarray]:
    u = np.uint32
    k0, k1 = np.asarray(k0, dtype=u), np.asarray(k1, dtype=u)
    ks = (k0, k1, k0 ^ k1 ^ u(_PARITY))
    x0, x1 = np.broadcast_arrays(np.add(np.asarray(c0, dtype=u), ks[0], dtype=u),
                                 np.add(np.asarray(c1, dtype=u), ks[1], dtype=u))
    x0, x1 = x0.copy(), x1.copy()
    t = np.empty_like(x1)
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 += x1
            np.right_shift(x1, u(32 - r), out=t)
            np.left_shift(x1, u(r), out=x1)
            x1 |= t
            x1 ^= x0
        x0 += ks[(i + 1) % 3]
        x1 += ks[(i + 2) % 3]
        x1 += u(i + 1)
    return x0, x1


def _threefry_int(k0: int, k1: int, c0: int, c1: int) -> tuple[int, int]:
    """The generator on Python ints: for a few keys, ~15x faster than numpy on arrays of one."""
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0, x1 = (c0 + k0) & _M, (c1 + k1) & _M
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = (x0 + x1) & _M
            x1 = (((x1 << r) & _M) | (x1 >> (32 - r))) ^ x0
        x0 = (x0 + ks[(i + 1) % 3]) & _M
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & _M
    return x0, x1


def _threefry_torch(k0, k1, c0, c1) -> tuple[torch.Tensor, torch.Tensor]:
    # six tensor operations per rotation (each a kernel on a GPU, where their count, not their
    # arithmetic, sets the cost): x0 is masked once per group of four rotations (it stays below
    # 5 * 2^32, and only its low 32 bits, the sum mod 2^32, ever reach x1); x1 is masked after
    # each rotation, so the shifts see its exact 32-bit value (x1 << r < 2^61)
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0, x1 = torch.broadcast_tensors((c0 + ks[0]) & _M, (c1 + ks[1]) & _M)
    x0, x1 = x0.clone(), x1.clone()
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0.add_(x1)
            t = x1 >> (32 - r)
            x1.bitwise_left_shift_(r).bitwise_or_(t).bitwise_xor_(x0).bitwise_and_(_M)
        x0.add_(ks[(i + 1) % 3]).bitwise_and_(_M)
        x1.add_(ks[(i + 2) % 3]).add_(i + 1).bitwise_and_(_M)
    return x0, x1


@functools.cache
def _compiled_threefry() -> Callable:
    """:func:`_threefry_torch` compiled by ``torch.compile`` (inductor: each call one fused kernel
    instead of ~150 elementwise ones), built once per process and selected per call by
    :func:`step_draws`' ``compiled``. Integer additions, shifts and masks of int64 values below
    2^62 are exact in any kernel, fused or not, so the bits are the plain path's
    (``tests/test_keyed.py``; on a GPU ``benchmarks/gpu_check.py`` compares them with the CPU's).
    Its inputs are tensors only (keys too), so a new seed is not a new compilation; shapes may
    change (participation with a varying S): dynamo's automatic dynamic shapes recompile once."""
    return torch.compile(_threefry_torch, fullgraph=True)


def threefry2x32(key: Sequence, counter: Sequence) -> tuple:
    """Threefry-2x32-20 of ``counter`` under ``key`` (Salmon et al. 2011): each a pair of
    broadcastable uint32 values, numpy ``uint32`` arrays or torch ``int64`` tensors (holding
    values in [0, 2^32); Python ints are allowed as keys). Returns the pair of output words, of
    the counter's kind."""
    if len(key) != 2 or len(counter) != 2:
        raise InputError(f"key, counter: each must be a pair of words, got {len(key)} and {len(counter)}")
    if isinstance(counter[0], torch.Tensor) or isinstance(counter[1], torch.Tensor):
        return _threefry_torch(*key, *counter)
    return _threefry_np(*key, *counter)


def stream_keys(seed: int, clients: np.ndarray | torch.Tensor, round: int, step: int, stream: int) -> tuple:
    """The keys (pair of [S] words) of stream ``stream`` of ``clients`` [S] (a numpy array, or an
    int64 tensor on the device the words are wanted on) at (round, step) under ``seed``. With a
    tensor ``clients``, ``round`` and ``step`` may be 0-d int64 tensors on its device (a captured
    CUDA graph replays with new values)."""
    seed = int(seed)
    base = (seed & _M, (seed >> 32) & _M)
    if isinstance(clients, torch.Tensor):          # round, step: ints or int64 tensors (no host read)
        clients = clients.to(torch.int64) & _M
        zero = torch.zeros_like(clients)
        k = threefry2x32(base, (clients, zero + (round & _M)))
        return threefry2x32(k, (zero + (step & _M), zero + (int(stream) & _M)))
    clients = np.asarray(clients, dtype=np.int64).astype(np.uint32)
    if len(clients) <= 8:                           # a few clients (the CPU's client-by-client path)
        pairs = [_threefry_int(*_threefry_int(*base, int(c), int(round) & _M), int(step) & _M,
                               int(stream) & _M) for c in clients]
        return (np.array([a for a, _ in pairs], dtype=np.uint32).reshape(clients.shape),
                np.array([b for _, b in pairs], dtype=np.uint32).reshape(clients.shape))
    k = threefry2x32(base, (clients, np.full_like(clients, int(round) & _M)))
    return threefry2x32(k, (np.full_like(clients, int(step) & _M), np.full_like(clients, int(stream) & _M)))


def words(keys: tuple, n: int) -> np.ndarray | torch.Tensor:
    """The first ``n`` words [S, n] of the streams keyed by ``keys`` (a pair of [S] words)."""
    k0, k1 = keys
    q = (n + 1) // 2
    if isinstance(k0, torch.Tensor):
        c1 = torch.arange(q, dtype=torch.int64, device=k0.device)[None, :]
        x0, x1 = threefry2x32((k0[:, None], k1[:, None]), (torch.zeros_like(c1), c1))
        return torch.stack([x0, x1], dim=2).reshape(len(k0), 2 * q)[:, :n]
    c1 = np.arange(q, dtype=np.uint32)[None, :]
    x0, x1 = threefry2x32((k0[:, None], k1[:, None]), (np.zeros_like(c1), c1))
    return np.stack([x0, x1], axis=2).reshape(len(k0), 2 * q)[:, :n]


def minibatch_positions(seed: int, clients: np.ndarray | torch.Tensor, sizes: np.ndarray | torch.Tensor,
                        round: int, step: int, batch: int,
                        width: int | None = None):
    """Positions [S, B] into each client's own data of its minibatch at (round, step), and the
    number m = min(B, n_i) [S] of real samples (see the module docstring). ``clients`` and
    ``sizes`` ([S], the clients' n_i) are numpy arrays (computed with numpy) or int64 tensors (on
    their device). Entries past m repeat the first position (zero-weight padding). ``width``
    (at least every n_i) fixes the shape of the sort for static shapes; it changes no result."""
    torch_path = isinstance(clients, torch.Tensor)
    keys = stream_keys(seed, clients, round, step, MINIBATCH)
    if torch_path:
        sizes = sizes.to(torch.int64)
        W = max(int(batch), int(width) if width is not None else int(sizes.max()))
        return _positions_torch(words(keys, W), sizes, batch)
    sizes = np.asarray(sizes, dtype=np.int64)
    W = max(int(batch), int(width) if width is not None else int(sizes.max()))
    u = words(keys, W).astype(np.int64)
    pos = np.arange(W, dtype=np.int64)[None, :]
    u = np.where(pos < sizes[:, None], u, _SENTINEL)
    order = np.argsort(u, axis=1, kind="stable")[:, :batch]
    m = np.minimum(sizes, batch)
    return np.where(pos[:, :batch] < m[:, None], order, order[:, :1]), m


def _positions_torch(u: torch.Tensor, sizes: torch.Tensor, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The minibatch [S, B] and m [S] from a stream's words u [S, W] (torch path)."""
    pos = torch.arange(u.shape[1], dtype=torch.int64, device=u.device)[None, :]
    u = torch.where(pos < sizes[:, None], u, torch.full_like(u, _SENTINEL))
    order = torch.sort(u, dim=1, stable=True).indices[:, :batch]
    m = sizes.clamp(max=batch)
    return torch.where(pos[:, :batch] < m[:, None], order, order[:, :1]), m


def _keep_torch(x0: torch.Tensor, x1: torch.Tensor, t: int, elements: int) -> torch.Tensor:
    """Keep flags [S, elements] from a dropout stream's output words (counters 0..q-1)."""
    keep = torch.stack([(x0 & 0xFFFF) >= t, (x0 >> 16) >= t, (x1 & 0xFFFF) >= t, (x1 >> 16) >= t], dim=2)
    return keep.reshape(x0.shape[0], -1)[:, :elements]


#: the ways :func:`step_draws` can run ``torch.compile``'d (its ``compiled``): False (plain
#: tensor operations), True (the whole step: the generator's three calls, the sort keys, the keep
#: flags) and "threefry" (the generator's calls alone)
COMPILED = (False, True, "threefry")


def step_draws(seed: int, clients: torch.Tensor, sizes: torch.Tensor, round, step, batch: int, width: int,
               layers: Sequence[tuple[int, float]], compiled: bool | str = False
               ) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """One step's draws of ``clients`` [S] (int64 tensor) at once, on their device: the minibatch
    positions [S, B] and m [S] of :func:`minibatch_positions` (``width`` as there) and the keep
    flags [S, elements] of :func:`dropout_keep` for each dropout call ``layers[l] = (elements, p)``.

    The same bits as those functions (``tests/test_keyed.py``), in three calls of the generator
    instead of 3 x (1 + L): the (client, round) key once, the stream keys of all 1 + L streams in one
    call, and the words of every stream in one call over the streams' counters laid side by side
    (each counter with its stream's key). On a GPU each call is ~150 elementwise kernels, so the
    step launches (or a captured graph replays) about a third as many (``benchmarks/host.py``).
    ``round`` and ``step``: ints or 0-d int64 tensors on the clients' device.

    ``compiled`` (one of :data:`COMPILED`): True runs the whole step as one ``torch.compile``'d
    function (:func:`_compiled_step`), "threefry" only the generator's calls
    (:func:`_compiled_threefry`). Integer additions, shifts, masks and comparisons of int64 values
    below 2^62 are exact in any kernel, fused or not, and the sort is stable, so the bits are the
    plain path's (``tests/test_keyed.py`` on the CPU; ``benchmarks/gpu_check.py`` against the CPU's
    numpy draws on each GPU model). The first call of a process compiles (a minute or more)."""
    if compiled not in COMPILED or not isinstance(compiled, (bool, str)):
        raise InputError(f"compiled: must be one of {', '.join(map(repr, COMPILED))}, got {compiled!r}")
    seed = int(seed)
    base = (seed & _M, (seed >> 32) & _M)
    W = max(int(batch), int(width))
    shape = (int(batch), W, tuple(int(e) for e, _ in layers), tuple(drop_threshold(p) for _, p in layers))
    if compiled is False:
        return _step(*base, clients, sizes, round, step, *shape, _threefry_torch)
    dev = clients.device        # tensors, not ints, for what changes between calls: no compilation
    k0, k1, r, s = (v if isinstance(v, torch.Tensor) else torch.full((), v, dtype=torch.int64, device=dev)
                    for v in (*base, round, step))                  # per seed, round or step
    if compiled is True:
        return _compiled_step()(k0, k1, clients, sizes, r, s, *shape)
    return _step(k0, k1, clients, sizes, r, s, *shape, _compiled_threefry())


def _step(k0, k1, clients: torch.Tensor, sizes: torch.Tensor, round, step, batch: int, W: int,
          elements: tuple[int, ...], thresholds: tuple[int, ...], threefry: Callable
          ) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """:func:`step_draws`' arithmetic: seed words ``k0``, ``k1``, ``round`` and ``step`` as ints or
    0-d tensors, the sort width W, each dropout call's element count and 16-bit threshold, and the
    generator to call (plain or compiled)."""
    dev = clients.device
    c = clients.to(torch.int64) & _M
    zero = torch.zeros_like(c)
    k0, k1 = threefry(k0, k1, c, zero + (round & _M))
    L = 1 + len(elements)
    streams = torch.arange(L, dtype=torch.int64, device=dev)[:, None]
    s0, s1 = threefry(k0[None, :], k1[None, :], zero[None, :] + (step & _M), streams)   # [L, S]
    q = [(W + 1) // 2] + [(e + 3) // 4 for e in elements]
    seg = torch.cat([torch.full((n,), j, dtype=torch.int64, device=dev) for j, n in enumerate(q)])
    ctr = torch.cat([torch.arange(n, dtype=torch.int64, device=dev) for n in q])[None, :]
    x0, x1 = threefry(s0.t().index_select(1, seg), s1.t().index_select(1, seg), 0, ctr)   # [S, Q]
    ends = [sum(q[:j]) for j in range(len(q) + 1)]
    u = torch.stack([x0[:, :q[0]], x1[:, :q[0]]], dim=2).reshape(len(c), 2 * q[0])[:, :W]
    pos, m = _positions_torch(u, sizes.to(torch.int64), batch)
    keeps = [_keep_torch(x0[:, a:b], x1[:, a:b], t, e)
             for e, t, a, b in zip(elements, thresholds, ends[1:-1], ends[2:], strict=True)]
    return pos, m, keeps


@functools.cache
def _compiled_step() -> Callable:
    """:func:`_step` with the plain generator, compiled whole by ``torch.compile`` (inductor fuses
    the generator's ~450 elementwise operations, the index arithmetic and the keep flags; the
    stable sort stays a library kernel): built once per process, selected per call by
    :func:`step_draws`' ``compiled=True``. Seed, round and step enter as tensors, so only a new
    shape (S, the sort width, the model's dropout sizes) compiles again; after the first change,
    dynamo's automatic dynamic shapes compile one graph for all sizes."""
    def step(k0, k1, clients, sizes, round, step, batch, W, elements, thresholds):
        return _step(k0, k1, clients, sizes, round, step, batch, W, elements, thresholds, _threefry_torch)
    return torch.compile(step)


def drop_threshold(p: float) -> int:
    """The 16-bit threshold of dropout probability ``p``: elements whose bits are below it drop."""
    return int(round(check_real("p", p, 0.0, 1.0) * 65536))


def dropout_bits(seed: int, clients: np.ndarray | torch.Tensor, round: int, step: int, layer: int,
                 elements: int):
    """The 16-bit values [S, elements] (int64 tensors, or int32 arrays for numpy ``clients``) of
    dropout call ``layer`` of ``clients`` at (round, step): an element is kept when its value is
    >= :func:`drop_threshold` of the layer's p (see the module docstring)."""
    keys = stream_keys(seed, clients, round, step, 1 + int(layer))
    w = words(keys, (elements + 1) // 2)
    if isinstance(w, torch.Tensor):
        halves = torch.stack([w & 0xFFFF, w >> 16], dim=2)
    else:
        halves = np.stack([w & np.uint32(0xFFFF), w >> np.uint32(16)], axis=2).astype(np.int32)
    return halves.reshape(w.shape[0], -1)[:, :elements]


def dropout_keep(seed: int, clients: np.ndarray | torch.Tensor, round: int, step: int, layer: int,
                 elements: int, p: float):
    """Keep flags [S, elements] (bool; numpy for numpy ``clients``, else torch on their device) of
    dropout call ``layer`` with probability ``p``: ``dropout_bits(...) >= drop_threshold(p)``,
    computed from the generator's two output words without building the 16-bit values (element
    4q + j takes the low (j even) or high half of output word j // 2 of counter q)."""
    t = drop_threshold(p)
    keys = stream_keys(seed, clients, round, step, 1 + int(layer))
    q = (elements + 3) // 4
    k0, k1 = keys
    if isinstance(k0, torch.Tensor):
        c1 = torch.arange(q, dtype=torch.int64, device=k0.device)[None, :]
        x0, x1 = threefry2x32((k0[:, None], k1[:, None]), (torch.zeros_like(c1), c1))
        return _keep_torch(x0, x1, t, elements)
    keep = np.empty((len(k0), q, 4), dtype=bool)
    low, keys2 = np.uint32(0xFFFF), (k0[:, None], k1[:, None])
    for a in range(0, q, _CHUNK):                 # chunks whose words stay in a core's cache
        c1 = np.arange(a, min(a + _CHUNK, q), dtype=np.uint32)[None, :]
        x0, x1 = threefry2x32(keys2, (np.zeros_like(c1), c1))
        part = keep[:, a:a + _CHUNK]
        for j, (x, high) in enumerate(((x0, False), (x0, True), (x1, False), (x1, True))):
            np.greater_equal((x >> np.uint32(16)) if high else (x & low), t, out=part[:, :, j])
    return keep.reshape(len(k0), 4 * q)[:, :elements]


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
