"""The papers' models, by name, initialised from a seeded ``torch.Generator``.

``build(name, seed=0)`` returns an ``nn.Module``; ``available()`` lists the names;
``param_count(model)`` counts parameters and ``spec_param_count(name)`` computes the count from
the layer specification alone (the tests compare the two).

BatchNorm cannot keep running statistics under ``vmap`` (each client would need its own
buffers, updated in place). ``resnet18`` therefore uses GroupNorm by default (2 groups per
layer, the common choice in FL code): it normalises each sample on its own, so training and
evaluation behave the same and no state is shared between clients. ``norm="batch"`` gives
BatchNorm that always uses the statistics of the current batch (``track_running_stats=False``);
its predictions then depend on the evaluation batch, which is why it is not the default.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator, Sequence

import torch
from torch import nn

from ._validate import InputError

__all__ = ["KeyedDropout", "available", "build", "dropout_masks", "dropout_shapes", "param_count",
           "short_name", "spec_param_count"]

# --------------------------------------------------------------------------------------------
# Keyed dropout: masks supplied by the caller, not drawn from torch's global generator
# --------------------------------------------------------------------------------------------
_DROPOUT = threading.local()     # per thread: .masks (iterator of mask tensors) or .shapes (list)


class KeyedDropout(nn.Module):
    """Dropout whose masks come from the caller (see :func:`dropout_masks`).

    In training mode inside ``with dropout_masks(masks):`` the i-th KeyedDropout call of a
    forward pass multiplies its input by ``masks[i]`` (already scaled by 1/(1-p)), so a client's
    masks can be drawn from a generator keyed by (seed, client, round, step) and the same masks
    reach every engine, whatever the order or thread clients run in. Outside such a context it
    behaves as ``nn.Dropout`` (torch's global generator), so the model stays usable on its own.
    In evaluation mode, or with ``p == 0``, it is the identity.
    """

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= float(p) < 1.0:
            raise InputError(f"dropout: must be in [0, 1), got {p!r}")
        self.p = float(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        shapes = getattr(_DROPOUT, "shapes", None)
        if shapes is not None:                       # recording pass (dropout_shapes)
            shapes.append((tuple(x.shape), self.p))
            return x
        masks = getattr(_DROPOUT, "masks", None)
        if masks is None:
            return nn.functional.dropout(x, self.p, True)
        try:
            return x * next(masks)
        except StopIteration:
            raise RuntimeError("dropout_masks: fewer masks than dropout calls in the forward "
                               "pass") from None

    def extra_repr(self) -> str:
        return f"p={self.p}"


@contextlib.contextmanager
def dropout_masks(masks: Sequence[torch.Tensor]) -> Iterator[None]:
    """Within the block, the KeyedDropout layers of a forward pass (in call order) use ``masks``
    (thread-local: threads training different clients do not interfere)."""
    prev = getattr(_DROPOUT, "masks", None)
    _DROPOUT.masks = iter(masks)
    try:
        yield
    finally:
        _DROPOUT.masks = prev


def dropout_shapes(model: nn.Module, input_shape: tuple[int, ...], dtype=torch.float32,
                   device="cpu") -> list[tuple[tuple[int, ...], float]]:
    """(shape, p) of every KeyedDropout call of one training-mode forward pass on an input of
    ``input_shape`` (batch dimension included), in call order."""
    was_training = model.training
    _DROPOUT.shapes = []
    try:
        model.train()
        with torch.no_grad():
            model(torch.zeros(input_shape, dtype=dtype, device=device))
        return _DROPOUT.shapes
    finally:
        _DROPOUT.shapes = None
        model.train(was_training)


def _init_default(model: nn.Module, g: torch.Generator) -> None:
    """PyTorch's default init for Conv/Linear (uniform +-1/sqrt(fan_in)), seeded."""
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            bound = 1.0 / math.sqrt(m.weight[0].numel())
            with torch.no_grad():
                m.weight.uniform_(-bound, bound, generator=g)
                if m.bias is not None:
                    m.bias.uniform_(-bound, bound, generator=g)


def _init_kaiming(model: nn.Module, g: torch.Generator, skip_last: bool = True) -> None:
    """FedAU/FedAWE code: Kaiming-normal (ReLU gain) weights and zero biases for the conv and
    hidden linear layers; the output layer keeps the default init."""
    layers = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    _init_default(model, g)
    for m in layers[:-1] if skip_last else layers:
        std = math.sqrt(2.0 / m.weight[0].numel())
        with torch.no_grad():
            m.weight.normal_(0.0, std, generator=g)
            m.bias.zero_()


class _MaxPool2x2(torch.autograd.Function):
    """2x2 max-pool with stride 2, equal to ``F.max_pool2d(x, 2)`` in value and gradient (the
    gradient goes to the first maximal element of each window in row-major order, as
    max_pool2d's index does), without the int64 index tensor: 1.3-1.4x faster on CPUs for the
    papers' small CNNs (``benchmarks/README.md``)."""

    @staticmethod
    def forward(ctx, x):
        H2, W2 = x.shape[-2] // 2, x.shape[-1] // 2
        q = [x[..., i:2 * H2:2, j:2 * W2:2] for i in (0, 1) for j in (0, 1)]
        m = torch.maximum(torch.maximum(q[0], q[1]), torch.maximum(q[2], q[3]))
        ctx.save_for_backward(x, m)
        return m

    @staticmethod
    def backward(ctx, g):
        x, m = ctx.saved_tensors
        H2, W2 = x.shape[-2] // 2, x.shape[-1] // 2
        gx = torch.zeros_like(x)
        taken = torch.zeros_like(m, dtype=torch.bool)
        for i in (0, 1):
            for j in (0, 1):
                hit = (x[..., i:2 * H2:2, j:2 * W2:2] == m) & ~taken
                gx[..., i:2 * H2:2, j:2 * W2:2] = g * hit
                taken |= hit
        return gx


def max_pool_2x2(x: torch.Tensor) -> torch.Tensor:
    """``F.max_pool2d(x, 2)``, same values and gradients; a faster autograd function on CPUs.
    Under ``torch.func`` transforms (vmap, grad), under ``torch.compile`` (which cannot trace the
    transforms' check) or on other devices it is max_pool2d itself."""
    if (x.device.type == "cpu" and x.dim() == 4 and not torch.compiler.is_compiling()
            and not torch._C._functorch.is_functorch_wrapped_tensor(x)):
        return _MaxPool2x2.apply(x)
    return nn.functional.max_pool2d(x, 2)


class SimpleCNN(nn.Module):
    """conv(k x k, 'same' padding) -> ReLU -> 2x2 max-pool blocks, then an MLP with ReLU
    (optional dropout, FedSUM's MNIST CNN). ``dropout_after_conv`` lists the conv blocks whose
    output (before ReLU) passes through dropout (FedSUM Table 2: C(10,20)-D-R-M)."""

    def __init__(self, in_ch: int, convs: list[int], fcs: list[int], image: int, kernel: int = 3,
                 num_classes: int = 10, dropout: float = 0.0, dropout_after_conv: tuple = ()):
        super().__init__()
        self.convs = nn.ModuleList()
        ch = in_ch
        for out in convs:
            self.convs.append(nn.Conv2d(ch, out, kernel, padding=kernel // 2))
            ch = out
        side = image // 2 ** len(convs)
        dims = [ch * side * side, *fcs, num_classes]
        self.fcs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:], strict=True))
        self.drop = KeyedDropout(dropout)
        self.dropout_after_conv = set(dropout_after_conv)

    def forward(self, x):
        for k, conv in enumerate(self.convs):
            x = conv(x)
            if k in self.dropout_after_conv:
                x = self.drop(x)
            x = max_pool_2x2(torch.relu(x))
        x = x.flatten(1)
        for fc in self.fcs[:-1]:
            x = self.drop(torch.relu(fc(x)))
        return self.fcs[-1](x)


class BasicBlock(nn.Module):
    """ResNet basic block: two 3x3 convs with normalisation, identity or 1x1 projection skip."""

    def __init__(self, cin: int, cout: int, stride: int, norm: Callable[[int], nn.Module]):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.n1 = norm(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.n2 = norm(cout)
        self.short = nn.Sequential()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), norm(cout))

    def forward(self, x):
        out = torch.relu(self.n1(self.conv1(x)))
        return torch.relu(self.n2(self.conv2(out)) + self.short(x))


class ResNet18(nn.Module):
    """CIFAR-style ResNet-18: 3x3 stem with 64 channels and no max-pool, stages of two basic
    blocks with 64, 128, 256, 512 channels (strides 1, 2, 2, 2), global average pool, linear."""

    def __init__(self, num_classes: int = 10, norm: str = "group", groups: int = 2):
        super().__init__()
        if norm == "group":
            def mk(c):
                return nn.GroupNorm(groups, c)
        elif norm == "batch":
            def mk(c):
                return nn.BatchNorm2d(c, track_running_stats=False)
        else:
            raise InputError(f"norm: must be 'group' or 'batch', got {norm!r}")
        self.stem = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.n0 = mk(64)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride, mk), BasicBlock(cout, cout, 1, mk)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.layers(torch.relu(self.n0(self.stem(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


# Wang & Ji's FashionMNIST CNN: one layer spec, two inits (see _CNN)
_WJ_FMNIST = dict(in_ch=1, convs=[32, 32], fcs=[128], image=28, kernel=5)

# name -> (constructor kwargs for SimpleCNN, init, input shape, description)
_CNN = {
    "fedsum_mnist_cnn": (dict(in_ch=1, convs=[10, 20], fcs=[50], image=28, dropout=0.2,
                              dropout_after_conv=(1,)), "default", (1, 28, 28),
                         "FedSUM Table 2 MNIST: C(1,10)-R-M-C(10,20)-D-R-M-L(50)-R-D-L(10)"),
    "fedsum_svhn_cnn": (dict(in_ch=3, convs=[32, 32], fcs=[128], image=32), "default", (3, 32, 32),
                        "FedSUM Table 2 SVHN: C(3,32)-R-M-C(32,32)-R-M-L(128)-R-L(10)"),
    "fedsum_cifar10_cnn": (dict(in_ch=3, convs=[32, 32], fcs=[256, 64], image=32), "default", (3, 32, 32),
                           "FedSUM Table 2 CIFAR-10: C(3,32)-R-M-C(32,32)-R-M-L(256)-R-L(64)-R-L(10)"),
    "fedau_cifar10_cnn": (dict(in_ch=3, convs=[32, 32], fcs=[256, 64], image=32), "kaiming", (3, 32, 32),
                          "FedAU/FedAWE CIFAR-10 CNN (as FedSUM's, Kaiming init)"),
    "fedau_svhn_cnn": (dict(in_ch=3, convs=[32, 32], fcs=[128], image=32), "kaiming", (3, 32, 32),
                       "FedAU/FedAWE SVHN CNN (Kaiming init)"),
    "fedau_fmnist_cnn": (dict(in_ch=1, convs=[32, 32], fcs=[128], image=28), "kaiming", (1, 28, 28),
                         "FedAU/FedAWE (Fashion-)MNIST CNN: conv 1-32-32, FC 1568-128-10, Kaiming init"),
    "focus_cifar10_cnn": (dict(in_ch=3, convs=[16, 32, 64], fcs=[500], image=32), "default", (3, 32, 32),
                          "FOCUS CIFAR-10: conv3x3 3-16-32-64 (ReLU + max-pool each), FC 1024-500-10"),
    # Wang & Ji's FashionMNIST CNN keeps PyTorch's default init, where the authors' code draws
    # Kaiming-normal weights and zero biases for the conv and hidden layers: notebook 08's paper
    # store was computed with it (found after; changing it would compute every stored run again;
    # on two seeds' warm-ups the authors' init moved the last cycle's test accuracy by < 0.01:
    # benchmarks/init_08.py)
    "wj_fmnist_cnn": (_WJ_FMNIST, "default", (1, 28, 28),
                      "Wang & Ji FashionMNIST: 5x5 conv 1-32-32, FC 1568-128-10 (default init; "
                      "theirs: Kaiming)"),
    # the same CNN as the authors' code initialises it, to measure what the init changes
    # (benchmarks/init_08.py)
    "wj_fmnist_cnn_kaiming": (_WJ_FMNIST, "kaiming", (1, 28, 28),
                              "Wang & Ji FashionMNIST: 5x5 conv 1-32-32, FC 1568-128-10, "
                              "Kaiming init (as the authors' code)"),
    "wj_cifar10_cnn": (dict(in_ch=3, convs=[32, 64], fcs=[512, 128], image=32, kernel=5), "kaiming",
                       (3, 32, 32), "Wang & Ji CIFAR-10: 5x5 conv 3-32-64, FC 4096-512-128-10, Kaiming init "
                       "(as the authors' code)"),
}


# name -> the short name a claim's setting gives the model (the papers' own words for it)
_SHORT = {"fedsum_mnist_cnn": "FedSUM's small CNN", "focus_cifar10_cnn": "App. F.1's three-layer CNN",
          "wj_fmnist_cnn": "Wang & Ji's CNN"}


def short_name(name: str) -> str:
    """The model's short name in prose (e.g. "FedSUM's small CNN"); ``name`` itself where the
    model has none.

    Raises:
        InputError: ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise InputError(f"name: must be a model's name (a string), got {type(name).__name__} {name!r}")
    return _SHORT.get(name, name)


def available() -> dict[str, str]:
    """Model names with a one-line description each."""
    out = {k: v[3] for k, v in _CNN.items()}
    out["resnet18"] = "CIFAR-style ResNet-18 (3x3 stem, no max-pool), GroupNorm by default"
    return out


def input_shape(name: str) -> tuple[int, int, int]:
    """(channels, height, width) the model expects."""
    return (3, 32, 32) if name == "resnet18" else _CNN[_known(name)][2]


def _known(name: str) -> str:
    if name not in _CNN and name != "resnet18":
        raise InputError(f"model: unknown model {name!r}; known models: {', '.join(available())}")
    return name


def build(name: str, seed: int = 0, num_classes: int = 10, **kwargs) -> nn.Module:
    """The model ``name`` with parameters drawn from ``torch.Generator().manual_seed(seed)``.

    Args:
        name: see :func:`available`.
        seed: initialisation seed.
        num_classes: output classes (10; 100 for CIFAR-100).
        **kwargs: ``dropout`` for the CNNs; ``norm`` / ``groups`` for ``resnet18``.
    """
    from ._validate import check_int
    _known(name)
    seed = check_int("seed", seed, 0)
    num_classes = check_int("num_classes", num_classes, 1)
    allowed = ("norm", "groups") if name == "resnet18" else \
        ("dropout", "kernel", "convs", "fcs", "in_ch", "image", "dropout_after_conv")
    for k in kwargs:
        if k not in allowed:
            raise InputError(f"{k}: not an argument of model {name!r}; its arguments: {', '.join(allowed)}")
    g = torch.Generator().manual_seed(seed)
    if _known(name) == "resnet18":
        model = ResNet18(num_classes=num_classes, **kwargs)
        _init_default(model, g)
        return model
    spec, init, _, _ = _CNN[name]
    model = SimpleCNN(**{**spec, **kwargs}, num_classes=num_classes)
    (_init_kaiming if init == "kaiming" else _init_default)(model, g)
    return model


def param_count(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def spec_param_count(name: str, num_classes: int = 10) -> int:
    """Parameter count computed from the layer specification (not from a built model)."""
    if _known(name) == "resnet18":
        conv = lambda cin, cout, k: cin * cout * k * k  # noqa: E731
        gn = lambda c: 2 * c  # noqa: E731
        total = conv(3, 64, 3) + gn(64)
        cin = 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            for b in range(2):
                ci = cin if b == 0 else cout
                total += conv(ci, cout, 3) + gn(cout) + conv(cout, cout, 3) + gn(cout)
                if b == 0 and (stride != 1 or ci != cout):
                    total += conv(ci, cout, 1) + gn(cout)
            cin = cout
        return total + 512 * num_classes + num_classes
    spec = _CNN[name][0]
    k = spec.get("kernel", 3)
    chans = [spec["in_ch"], *spec["convs"]]
    total = sum(a * b * k * k + b for a, b in zip(chans[:-1], chans[1:], strict=True))
    side = spec["image"] // 2 ** len(spec["convs"])
    dims = [chans[-1] * side * side, *spec["fcs"], num_classes]
    return total + sum(a * b + b for a, b in zip(dims[:-1], dims[1:], strict=True))


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
