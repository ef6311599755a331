"""fedlib.partition: every index used once, sizes, skew, seeding, bad input."""

import numpy as np
import pytest

from fedlib import partition

LABELS = np.random.default_rng(0).permutation(np.repeat(np.arange(10), 100))


def _covers(p, n):
    allidx = np.concatenate(p.indices)
    return len(allidx) == n and len(np.unique(allidx)) == n


@pytest.mark.parametrize("name,kw", [("iid", {}), ("dirichlet", {"alpha": 0.1}),
                                     ("dirichlet_prior", {"alpha": 0.1}),
                                     ("majority_label", {"similarity": 0.05}), ("one_class", {})])
def test_every_index_once_and_counts(name, kw):
    p = partition.build(name, LABELS, 20, seed=1, **kw)
    assert _covers(p, len(LABELS)) and p.num_clients == 20
    assert (p.sizes > 0).all() and p.counts.shape == (20, 10)
    for i, idx in enumerate(p.indices):
        assert (np.bincount(LABELS[idx], minlength=10) == p.counts[i]).all()
    q = partition.build(name, LABELS, 20, seed=1, **kw)
    assert all(np.array_equal(a, b) for a, b in zip(p.indices, q.indices, strict=True))


def _skew(p):
    return float((p.counts.max(1) / p.sizes).mean())


def test_dirichlet_alpha_orders_skew():
    skews = [_skew(partition.dirichlet(LABELS, 20, alpha=a, seed=2)) for a in (0.05, 0.5, 5.0, 500.0)]
    assert all(a > b for a, b in zip(skews, skews[1:], strict=False))


def test_dirichlet_prior_equal_sizes_and_skew():
    p = partition.dirichlet_prior(LABELS, 16, alpha=0.05, seed=0)
    assert p.sizes.max() - p.sizes.min() <= 1
    assert _skew(p) > _skew(partition.dirichlet_prior(LABELS, 16, alpha=100.0, seed=0))


def test_majority_label_shares():
    p = partition.majority_label(LABELS, 20, similarity=0.05, seed=0)
    share = p.counts.max(1) / p.sizes
    assert share.mean() > 0.85
    assert (p.counts.argmax(1) == np.repeat(np.arange(10), 2)).all()   # N/C = 2 clients per label
    with pytest.raises(ValueError, match="^num_clients"):
        partition.majority_label(LABELS, 15)


def test_one_class_and_iid():
    p = partition.one_class(LABELS, 20, seed=0)
    assert ((p.counts > 0).sum(1) == 1).all() and (p.counts.argmax(1) == np.arange(20) % 10).all()
    with pytest.raises(ValueError, match="^num_clients"):
        partition.one_class(LABELS, 5)
    i = partition.iid(LABELS, 7)
    assert i.sizes.max() - i.sizes.min() <= 1


@pytest.mark.parametrize("kwargs,field", [
    (dict(name="dirichlet", alpha=0.0), "alpha"), (dict(name="nope"), "partition"),
    (dict(name="iid", num_clients=0), "num_clients"), (dict(name="iid", num_clients=10_000), "num_clients"),
    (dict(name="majority_label", similarity=2.0), "similarity"),
])
def test_bad_input(kwargs, field):
    name = kwargs.pop("name")
    n = kwargs.pop("num_clients", 10)
    with pytest.raises(ValueError, match=f"^{field}"):
        partition.build(name, LABELS, n, **kwargs)


def test_partition_plots():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fedlib import plotting

    p = partition.dirichlet(LABELS, 12, alpha=0.1, seed=0)
    fig, (a, b) = plt.subplots(1, 2)
    plotting.label_distribution_bars(a, p.counts)
    plotting.label_distribution_bubbles(b, p.counts)
    heights = np.array([r.get_height() for r in a.patches]).reshape(10, 12).sum(0)
    assert np.allclose(heights, p.sizes)                      # stacked bars add up to client sizes
    assert len(b.collections[0].get_offsets()) == int((p.counts > 0).sum())
    plt.close(fig)
