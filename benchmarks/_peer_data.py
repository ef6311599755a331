"""Data and model of the peers benchmark, importable by worker processes (Ray, threads).

The workload of FedSUM App. H: MNIST, N = 100 clients from fedlib's Dirichlet(0.1) split (seed
0), FedSUM's MNIST CNN, K = 10 local steps of batch 128, lr 0.01.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import torch

N, S, K, BATCH, LR = 100, 20, 10, 128, 0.01


@functools.lru_cache(maxsize=1)
def mnist() -> tuple[torch.Tensor, torch.Tensor]:
    """Normalised MNIST training images [60000, 1, 28, 28] and labels."""
    path = Path(os.environ.get("FEDLIB_DATA", "~/.cache/fedlib")).expanduser() / "mnist.npz"
    with np.load(path) as z:
        x, y = z["x_train"], z["y_train"]
    x = ((torch.tensor(x, dtype=torch.float32) / 255 - 0.1307) / 0.3081).unsqueeze(1)
    return x, torch.tensor(y, dtype=torch.long)


@functools.lru_cache(maxsize=1)
def partition() -> list[np.ndarray]:
    from fedlib import partition as part
    return part.dirichlet(mnist()[1].numpy(), N, 0.1, seed=0).indices


def model() -> torch.nn.Module:
    from fedlib import models
    return models.build("fedsum_mnist_cnn", seed=0)


def loader(cid: int, seed: int) -> torch.utils.data.DataLoader:
    """A shuffling DataLoader over client ``cid``'s images, batch 128."""
    x, y = mnist()
    idx = torch.as_tensor(partition()[cid])
    ds = torch.utils.data.TensorDataset(x[idx], y[idx])
    return torch.utils.data.DataLoader(ds, batch_size=BATCH, shuffle=True,
                                       generator=torch.Generator().manual_seed(seed))


def local_steps(net: torch.nn.Module, cid: int, seed: int) -> int:
    """K SGD steps of ``net`` on client ``cid`` (restarting the loader when it runs out, as a
    K-step client does); returns the number of samples seen."""
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    net.train()
    seen, steps = 0, 0
    while steps < K:
        for xb, yb in loader(cid, seed + steps):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(xb), yb).backward()
            opt.step()
            seen, steps = seen + len(yb), steps + 1
            if steps == K:
                break
    return seen
