"""Splitting a labelled dataset over clients (the papers' label-skew partitions).

Every function takes the label vector and returns a :class:`Partition`: one sorted index array
per client (every sample used exactly once, every client non-empty) and the label-count matrix
[N, classes]. All randomness comes from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._validate import InputError, check_int, check_real

__all__ = ["Partition", "available", "build", "builder", "dirichlet", "dirichlet_prior", "iid",
           "majority_label", "one_class"]


@dataclass(frozen=True, eq=False)
class Partition:
    """Client index arrays and their label counts.

    Attributes:
        indices: list of N sorted int arrays into the dataset.
        counts: int array [N, classes], samples of each class held by each client.
    """

    indices: list
    counts: np.ndarray

    @property
    def num_clients(self) -> int:
        return len(self.indices)

    @property
    def sizes(self) -> np.ndarray:
        """Samples per client [N]."""
        return self.counts.sum(1)


def _finish(parts: list, labels: np.ndarray, num_classes: int) -> Partition:
    idx = [np.sort(np.asarray(p, dtype=np.int64)) for p in parts]
    counts = np.stack([np.bincount(labels[p], minlength=num_classes) for p in idx])
    return Partition(idx, counts)


def _check(labels, num_clients: int) -> tuple[np.ndarray, int]:
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer) or labels.min() < 0:
        raise InputError("labels: expected a 1-D array of non-negative integer class labels")
    if isinstance(num_clients, bool) or not isinstance(num_clients, (int, np.integer)) \
            or not 1 <= num_clients <= len(labels):
        raise InputError(f"num_clients: must be an integer in 1..{len(labels)} (one sample each at least), "
                         f"got {num_clients!r}")
    return labels, int(labels.max()) + 1


def iid(labels, num_clients: int, seed: int = 0) -> Partition:
    """Uniformly random split into N parts whose sizes differ by at most one."""
    labels, C = _check(labels, num_clients)
    perm = np.random.default_rng(seed).permutation(len(labels))
    return _finish(np.array_split(perm, num_clients), labels, C)


def dirichlet(labels, num_clients: int, alpha: float, seed: int = 0, min_size: int = 1) -> Partition:
    """Dirichlet(alpha) label split (FedSUM / FedAU / FedAWE style).

    For every class, its samples are shuffled and cut among the N clients in proportions
    p ~ Dir(alpha 1_N). Rule for non-empty clients: the whole draw is repeated (same generator)
    until every client holds at least ``min_size`` samples, at most 1000 times. Smaller alpha
    gives more skewed clients."""
    labels, C = _check(labels, num_clients)
    alpha = check_real("alpha", alpha, 0.0, low_open=True)
    if num_clients * min_size > len(labels):
        raise InputError(f"min_size: {num_clients} clients x {min_size} exceeds {len(labels)} samples")
    rng = np.random.default_rng(seed)
    for _ in range(1000):
        parts: list[list[int]] = [[] for _ in range(num_clients)]
        for c in range(C):
            idx = rng.permutation(np.flatnonzero(labels == c))
            cuts = (np.cumsum(rng.dirichlet(np.full(num_clients, alpha)))[:-1] * len(idx)).astype(int)
            for i, chunk in enumerate(np.split(idx, cuts)):
                parts[i].extend(chunk.tolist())
        if min(len(p) for p in parts) >= min_size:
            return _finish(parts, labels, C)
    raise InputError(f"alpha: Dirichlet({alpha}) left a client with fewer than {min_size} samples in 1000 "
                     "draws; use fewer clients or a larger alpha")


def dirichlet_prior(labels, num_clients: int, alpha: float, seed: int = 0) -> Partition:
    """Dirichlet split with equal client sizes, after the FOCUS code's (Ying, Li & Yang 2025,
    arXiv:2503.20117): the same law per client, by another procedure.

    Each client gets floor(n/N) or ceil(n/N) samples. Its label mix is p_i ~ Dir(alpha * prior),
    prior = the global class frequencies; the client is filled one sample at a time by drawing a
    class from p_i restricted to the classes that still have unassigned samples (renormalised),
    then a random unassigned sample of that class. (The FOCUS code cuts each class over the
    clients in proportion to their p_i, then moves random samples from clients above the even
    size to those below: the label skew of the two can differ.)"""
    labels, C = _check(labels, num_clients)
    alpha = check_real("alpha", alpha, 0.0, low_open=True)
    rng = np.random.default_rng(seed)
    prior = np.bincount(labels, minlength=C) / len(labels)
    pools = [list(rng.permutation(np.flatnonzero(labels == c))) for c in range(C)]
    left = np.array([len(p) for p in pools])
    sizes = np.diff(np.linspace(0, len(labels), num_clients + 1).astype(int))
    parts = []
    for size in sizes:
        mix = rng.dirichlet(alpha * prior + 1e-12)
        mine = []
        for _ in range(size):
            w = mix * (left > 0)
            w = w / w.sum() if w.sum() > 0 else (left > 0) / (left > 0).sum()
            c = rng.choice(C, p=w)
            mine.append(pools[c].pop())
            left[c] -= 1
        parts.append(mine)
    return _finish(parts, labels, C)


def majority_label(labels, num_clients: int, similarity: float = 0.05, seed: int = 0) -> Partition:
    """Wang & Ji (2022): each client has one majority label (N/C clients per label, e.g. 25 per
    label for N = 250 and 10 classes); a sample goes with probability ``similarity`` to a
    uniformly random client, otherwise to the least-filled client of its label (ties: lowest
    index). Requires N to be a multiple of the number of classes."""
    labels, C = _check(labels, num_clients)
    if num_clients % C:
        raise InputError(f"num_clients: must be a multiple of the {C} classes, got {num_clients}")
    check_real("similarity", similarity, 0.0, 1.0)
    rng = np.random.default_rng(seed)
    per = num_clients // C
    owners = {c: np.arange(c * per, (c + 1) * per) for c in range(C)}
    fill = np.zeros(num_clients, dtype=np.int64)
    parts: list[list[int]] = [[] for _ in range(num_clients)]
    for s in rng.permutation(len(labels)):
        if rng.random() < similarity:
            k = int(rng.integers(num_clients))
        else:
            cand = owners[int(labels[s])]
            k = int(cand[np.argmin(fill[cand])])
        parts[k].append(int(s))
        fill[k] += 1
    if min(fill) == 0:
        raise InputError("num_clients: a client received no sample; use fewer clients")
    return _finish(parts, labels, C)


def one_class(labels, num_clients: int, seed: int = 0) -> Partition:
    """FedACS's extreme split: client i holds samples of class i mod C only; a class's samples
    are shuffled and split evenly among its clients. Requires N >= C (so no class is dropped)."""
    labels, C = _check(labels, num_clients)
    if num_clients < C:
        raise InputError(f"num_clients: one_class needs at least one client per class ({C}), "
                         f"got {num_clients}")
    rng = np.random.default_rng(seed)
    parts: list = [None] * num_clients
    for c in range(C):
        mine = np.arange(c, num_clients, C)
        for k, chunk in zip(mine, np.array_split(rng.permutation(np.flatnonzero(labels == c)), len(mine)),
                            strict=True):
            parts[k] = chunk
    if min(len(p) for p in parts) == 0:
        raise InputError("num_clients: more clients than samples of some class")
    return _finish(parts, labels, C)


_PARTITIONS: dict[str, tuple[Callable[..., Partition], str]] = {
    "iid": (iid, "uniformly random, equal sizes"),
    "dirichlet": (dirichlet, "per-class Dir(alpha) proportions over clients (FedSUM/FedAU)"),
    "dirichlet_prior": (dirichlet_prior, "client mixes Dir(alpha * prior), equal sizes (FOCUS code)"),
    "majority_label": (majority_label, "one majority label per client, ~similarity others (Wang & Ji)"),
    "one_class": (one_class, "one class per client (FedACS extreme MNIST)"),
}


def available() -> dict[str, str]:
    """Partition names with a one-line description each."""
    return {k: v[1] for k, v in _PARTITIONS.items()}


def builder(name: str) -> Callable[..., Partition]:
    """The function of a registered partition (its signature lists the partition's arguments)."""
    if name not in _PARTITIONS:
        raise InputError(f"partition: unknown partition {name!r}; known partitions: {', '.join(_PARTITIONS)}")
    return _PARTITIONS[name][0]


def build(name: str, labels, num_clients: int, seed: int = 0, **kwargs) -> Partition:
    """Partition by name (see :func:`available`)."""
    if name not in _PARTITIONS:
        raise InputError(f"partition: unknown partition {name!r}; known partitions: {', '.join(_PARTITIONS)}")
    fn = _PARTITIONS[name][0]
    sig = inspect.signature(fn).parameters
    params = [p for p in sig if p not in ("labels", "num_clients", "seed")]
    unknown = sorted(set(kwargs) - set(params))
    if unknown:
        raise InputError(f"{unknown[0]}: not an argument of partition {name!r}; its arguments: "
                         f"{', '.join(params) or '(none)'}")
    missing = [p for p in params if sig[p].default is inspect.Parameter.empty and p not in kwargs]
    if missing:
        raise InputError(f"{missing[0]}: partition {name!r} needs it (its arguments: {', '.join(params)})")
    check_int("seed", seed, 0)
    return fn(labels, num_clients, seed=seed, **kwargs)


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
