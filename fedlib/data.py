"""Datasets by name, loaded offline from their standard files into normalised tensors.

``load(name, data_root=None, device="cpu", download=False)`` returns a :class:`Dataset` with
``train`` and ``test`` (x, y) tensor pairs (x: float [n, C, H, W], normalised per channel with
the mean / std of the papers' code; y: int64). Names: ``mnist``, ``fashion_mnist``, ``svhn``,
``cifar10``, ``cifar100``, ``cinic10``, and the embedded ``digits`` (scikit-learn's 8x8 digits
upscaled to 28x28; ships inside the package, no download). ``synthetic_like(name)`` makes random
stand-ins with a dataset's shapes, classes and split sizes, for tests.

Where the files are looked up: ``data_root``, else ``$FEDLIB_DATA``, else ``~/.cache/fedlib``;
after that folder, a dataset that Debian packages is read from the folder its package installs
(:data:`SYSTEM_FOLDERS`: Fashion-MNIST from ``dataset-fashion-mnist``, in
``/usr/share/datasets/fashion-mnist/``), so ``load("fashion_mnist")`` needs no configuration
where the package is installed (``make fashion-mnist`` installs it).

Formats read without torchvision (so every loader runs, and is tested, on CPU machines where
torchvision cannot be imported):

========== =====================================================================
mnist      ``mnist.npz`` (Keras layout) or ``MNIST/raw/*-ubyte[.gz]``
fashion    ``FashionMNIST/raw/*-ubyte[.gz]``
svhn       ``train_32x32.mat``, ``test_32x32.mat`` (label 10 means digit 0)
cifar10    ``cifar-10-batches-py/data_batch_1..5, test_batch``
cifar100   ``cifar-100-python/train, test`` (fine labels)
cinic10    ``CINIC-10/train/<class>/*.png``, ``CINIC-10/test/<class>/*.png``
========== =====================================================================

torchvision is imported only when ``download=True`` (it writes exactly these files). Missing
data raises :class:`DataNotFoundError` naming the dataset, the folders searched, the files
expected and the command that downloads them (and, for a Debian-packaged dataset, the package).
"""

from __future__ import annotations

import gzip
import os
import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ._validate import InputError, check_problem_memory

__all__ = ["SYSTEM_FOLDERS", "DataNotFoundError", "Dataset", "available", "check_files", "data_roots", "load",
           "synthetic_like"]


@dataclass(frozen=True)
class Info:
    shape: tuple[int, int, int]
    classes: int
    n_train: int
    n_test: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    files: tuple[str, ...]
    description: str


# mean/std: FedAU / FedAWE code (IBM/fedau dataset.py) where it normalises; MNIST's for MNIST
# and (as that code does) FashionMNIST; the usual CIFAR-100 statistics.
INFO: dict[str, Info] = {
    "mnist": Info((1, 28, 28), 10, 60000, 10000, (0.1307,), (0.3081,),
                  ("mnist.npz", "or MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]"),
                  "MNIST handwritten digits"),
    "fashion_mnist": Info((1, 28, 28), 10, 60000, 10000, (0.1307,), (0.3081,),
                          ("FashionMNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]",),
                          "Fashion-MNIST clothing images"),
    "svhn": Info((3, 32, 32), 10, 73257, 26032, (0.4376821, 0.4437697, 0.47280442),
                 (0.19803012, 0.20101562, 0.19703614), ("train_32x32.mat", "test_32x32.mat"),
                 "Street View House Numbers"),
    "cifar10": Info((3, 32, 32), 10, 50000, 10000, (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010),
                    ("cifar-10-batches-py/data_batch_1..5", "cifar-10-batches-py/test_batch"), "CIFAR-10"),
    "cifar100": Info((3, 32, 32), 100, 50000, 10000, (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762),
                     ("cifar-100-python/train", "cifar-100-python/test"), "CIFAR-100 (fine labels)"),
    "cinic10": Info((3, 32, 32), 10, 90000, 90000, (0.47889522, 0.47227842, 0.43047404),
                    (0.24205776, 0.23828046, 0.25874835),
                    ("CINIC-10/train/<class>/*.png", "CINIC-10/test/<class>/*.png"), "CINIC-10"),
    "digits": Info((1, 28, 28), 10, 1437, 360, (0.0,), (1.0,), (), "scikit-learn digits upscaled to 28x28 "
                   "(embedded, standardised globally)"),
}

#: datasets that Debian packages: name -> (the folder its package installs the files into, in
#: the layout of the column "files" above without the dataset's subfolder, and the package). Read
#: after the folders of :func:`data_roots`, which take precedence.
SYSTEM_FOLDERS: dict[str, tuple[Path, str]] = {
    "fashion_mnist": (Path("/usr/share/datasets/fashion-mnist"), "dataset-fashion-mnist"),
}

_TV_NAMES = {"mnist": "MNIST", "fashion_mnist": "FashionMNIST", "svhn": "SVHN", "cifar10": "CIFAR10",
             "cifar100": "CIFAR100"}


class DataNotFoundError(FileNotFoundError):
    """A dataset's files are not where fedlib looked."""


@dataclass
class Dataset:
    """Normalised tensors of one dataset.

    Attributes:
        name: registry name.
        train, test: (x [n, C, H, W] float32, y [n] int64).
        num_classes: number of classes.
    """

    name: str
    train: tuple[torch.Tensor, torch.Tensor]
    test: tuple[torch.Tensor, torch.Tensor]
    num_classes: int


def available() -> dict[str, str]:
    """Dataset names with a one-line description each."""
    return {k: v.description for k, v in INFO.items()}


def data_roots(data_root: str | os.PathLike | None = None) -> list[Path]:
    """Folders searched, in order: ``data_root`` if given, else ``$FEDLIB_DATA`` if set, else
    ``~/.cache/fedlib``."""
    if data_root is not None:
        return [Path(data_root).expanduser()]
    if os.environ.get("FEDLIB_DATA"):
        return [Path(os.environ["FEDLIB_DATA"]).expanduser()]
    return [Path("~/.cache/fedlib").expanduser()]


def _missing(name: str, roots: list[Path]) -> DataNotFoundError:
    info = INFO[name]
    cmd = (f"python -c \"from fedlib import data; data.load('{name}', data_root='{roots[0]}', "
           f"download=True)\"" if name in _TV_NAMES else
           "download CINIC-10 from its publisher (https://datashare.ed.ac.uk/handle/10283/3192) and "
           f"extract it so that {roots[0] / 'CINIC-10' / 'train'} exists")
    searched = [str(r) for r in roots]
    debian = ""
    if name in SYSTEM_FOLDERS:
        folder, package = SYSTEM_FOLDERS[name]
        searched.append(f"{folder} (Debian's package {package})")
        debian = (f"On Debian: apt-get install {package} (as root; `make fashion-mnist` does it), which puts "
                  f"{{train,t10k}}-{{images-idx3,labels-idx1}}-ubyte.gz into {folder}. ")
    return DataNotFoundError(
        f"{name}: dataset files not found. Searched: {', '.join(searched)}. "
        f"Expected: {'; '.join(info.files)}. {debian}On a machine with internet: {cmd} "
        f"(or set FEDLIB_DATA to the folder that holds them).")


# ---------------------------------------------------------------------------- format readers
def _idx(path: Path) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def _find_idx(folder: Path, stem: str) -> Path | None:
    for cand in (folder / stem, folder / f"{stem}.gz"):
        if cand.is_file():
            return cand
    return None


def _read_idx_set(folder: Path):
    parts = {}
    for split, pre in (("train", "train"), ("test", "t10k")):
        xi, yi = _find_idx(folder, f"{pre}-images-idx3-ubyte"), _find_idx(folder, f"{pre}-labels-idx1-ubyte")
        if xi is None or yi is None:
            return None
        parts[split] = (_idx(xi), _idx(yi))
    return parts


def _read_mnist(root: Path):
    npz = root / "mnist.npz"
    if npz.is_file():
        keys = ("x_train", "y_train", "x_test", "y_test")
        try:
            with np.load(npz, allow_pickle=False) as z:
                missing = [k for k in keys if k not in z.files]
                if missing:
                    raise ValueError(f"mnist: {npz} is not in the Keras layout: it lacks "
                                     f"{', '.join(missing)} (has {', '.join(z.files) or 'nothing'}; "
                                     f"expected {', '.join(keys)})")
                return {"train": (z["x_train"], z["y_train"]), "test": (z["x_test"], z["y_test"])}
        except (OSError, EOFError, zipfile.BadZipFile) as e:
            raise ValueError(f"mnist: cannot read {npz} ({type(e).__name__}: {e}); the file is truncated or "
                             "not an .npz archive: replace it") from None
    return _read_idx_set(root / "MNIST" / "raw")


def _read_fashion(root: Path):
    return _read_idx_set(root / "FashionMNIST" / "raw")


def _read_svhn(root: Path):
    if not all((root / f).is_file() for f in ("train_32x32.mat", "test_32x32.mat")):
        return None
    from scipy.io import loadmat

    out = {}
    for split in ("train", "test"):
        m = loadmat(root / f"{split}_32x32.mat")
        x = np.transpose(m["X"], (3, 2, 0, 1))               # [32, 32, 3, n] -> [n, 3, 32, 32]
        y = m["y"].reshape(-1).astype(np.int64) % 10           # label 10 is the digit 0
        out[split] = (x, y)
    return out


def _read_cifar(root: Path, folder: str, train_files: list[str], test_file: str, key: bytes):
    d = root / folder
    if not all((d / f).is_file() for f in [*train_files, test_file]):
        return None

    def read(files):
        xs, ys = [], []
        for f in files:
            with open(d / f, "rb") as fh:
                blob = pickle.load(fh, encoding="bytes")
            xs.append(np.asarray(blob[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            ys.append(np.asarray(blob[key], dtype=np.int64))
        return np.concatenate(xs), np.concatenate(ys)

    return {"train": read(train_files), "test": read([test_file])}


def _read_cinic(root: Path):
    base = root / "CINIC-10"
    if not (base / "train").is_dir() or not (base / "test").is_dir():
        return None
    from PIL import Image

    classes = sorted(p.name for p in (base / "train").iterdir() if p.is_dir())
    out = {}
    for split in ("train", "test"):
        xs, ys = [], []
        for c, cls in enumerate(classes):
            for f in sorted((base / split / cls).glob("*.png")):
                xs.append(np.asarray(Image.open(f).convert("RGB"), dtype=np.uint8).transpose(2, 0, 1))
                ys.append(c)
        out[split] = (np.stack(xs), np.asarray(ys, dtype=np.int64))
    return out


_READERS = {
    "mnist": _read_mnist,
    "fashion_mnist": _read_fashion,
    "svhn": _read_svhn,
    "cifar10": lambda r: _read_cifar(r, "cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)],
                                     "test_batch", b"labels"),
    "cifar100": lambda r: _read_cifar(r, "cifar-100-python", ["train"], "test", b"fine_labels"),
    "cinic10": _read_cinic,
}


def _download(name: str, root: Path) -> None:
    try:
        import torchvision
    except Exception as e:  # noqa: BLE001 - torchvision may be absent or broken (CUDA build on CPU)
        raise DataNotFoundError(f"{name}: download=True needs torchvision, which could not be imported "
                                f"({type(e).__name__}: {e}); install the 'vision' extra") from None
    cls = getattr(torchvision.datasets, _TV_NAMES[name])
    root.mkdir(parents=True, exist_ok=True)
    if name == "svhn":
        for split in ("train", "test"):
            cls(str(root), split=split, download=True)
    else:
        for train in (True, False):
            cls(str(root), train=train, download=True)


def _check_parts(name: str, parts: dict, where: str) -> dict[str, int]:
    """Refuse arrays a dataset's files hold that :func:`load` would misread: images not of the
    dataset's shape (a flat ``(n, 784)`` array), a label count that is not the image count,
    labels outside ``0..classes-1``, pixels that are not 0..255 (floats already scaled to [0, 1]
    would be divided by 255 again: every pixel near 0, training on noise). One ValueError naming
    the dataset, the files' folder, the split and what is allowed; the sizes of the splits else."""
    info = INFO[name]
    c, h, w = info.shape
    sizes = {}
    for split in ("train", "test"):
        x, y = (np.asarray(a) for a in parts[split])
        what = f"{name}: {where}: the {split} split's"
        shapes = [(c, h, w)] + ([(h, w)] if c == 1 else [])
        if x.ndim < 1 or tuple(x.shape[1:]) not in shapes:
            want = " or ".join(f"(n, {', '.join(map(str, s))})" for s in shapes)
            raise ValueError(f"{what} images have shape {tuple(x.shape)}; expected {want} (a flat array of "
                             f"{c * h * w} values a row must be reshaped to the image shape)")
        if y.ndim != 1 or len(y) != len(x):
            raise ValueError(f"{what} labels have shape {tuple(y.shape)} for {len(x)} images; expected one "
                             f"label per image, shape ({len(x)},)")
        if y.dtype.kind not in "iu" and not (y.dtype.kind == "f" and np.all(np.isfinite(y))
                                               and np.all(y == np.round(y))):
            raise ValueError(f"{what} labels must be integers 0..{info.classes - 1}, got dtype {y.dtype}")
        if len(y) and (y.min() < 0 or y.max() > info.classes - 1):
            raise ValueError(f"{what} labels must lie in 0..{info.classes - 1} ({info.classes} classes), got "
                             f"values in {y.min():g}..{y.max():g}")
        if x.dtype.kind not in "iuf":
            raise ValueError(f"{what} images must be numbers (pixels 0..255), got dtype {x.dtype}")
        lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo < 0 or hi > 255:
            raise ValueError(f"{what} pixels must lie in 0..255, got values in {lo:g}..{hi:g}")
        if x.dtype.kind == "f" and x.size and hi <= 1.0:
            raise ValueError(f"{what} pixels are floats in {lo:g}..{hi:g}, already scaled to [0, 1]; fedlib "
                             "scales 0..255 pixels by 1/255 itself (they would all be near 0): store the "
                             "images as their 0..255 values (uint8)")
        sizes[split] = len(x)
    return sizes


def _read(name: str, data_root, download: bool) -> tuple[dict, str]:
    """The raw arrays of ``name`` and the folder they came from (or DataNotFoundError)."""
    roots = data_roots(data_root)
    for r in roots:
        parts = _READERS[name](r)
        if parts is not None:
            return parts, str(r)
    if name in SYSTEM_FOLDERS:                                    # after the roots, which take precedence
        parts = _read_idx_set(SYSTEM_FOLDERS[name][0])
        if parts is not None:
            return parts, str(SYSTEM_FOLDERS[name][0])
    if download and name in _TV_NAMES:
        _download(name, roots[0])
        parts = _READERS[name](roots[0])
        if parts is not None:
            return parts, str(roots[0])
    raise _missing(name, roots)


_CHECKED: dict[tuple, dict[str, int]] = {}


def check_files(name: str, data_root: str | os.PathLike | None = None) -> dict[str, int]:
    """Check the files of dataset ``name`` as :func:`load` reads them (image shape, one label per
    image, labels in range, pixels 0..255 and not already scaled) without normalising them, and
    return the sizes of its splits (``{"train": n, "test": m}``): for a config's validation, so
    that a run is refused before it starts rather than stored as an error. Cached per folder
    (its modification time), so a sweep checks the files once. The embedded digits and CINIC-10's
    180,000 PNG files (decoded as uint8 RGB, labelled by their folder) are not read: their known
    split sizes come back.

    Raises:
        ValueError: unknown name, a bad ``data_root``, or files :func:`load` would misread.
        DataNotFoundError: the files are missing.
    """
    _check_name(name, data_root)
    if name in ("digits", "cinic10"):          # embedded; PNG files (decoded as uint8 RGB, labels by folder)
        return {"train": INFO[name].n_train, "test": INFO[name].n_test}
    roots = data_roots(data_root) + ([SYSTEM_FOLDERS[name][0]] if name in SYSTEM_FOLDERS else [])
    key = (name, *((str(r), r.stat().st_mtime_ns if r.is_dir() else None) for r in roots))
    if key not in _CHECKED:
        parts, where = _read(name, data_root, download=False)
        _CHECKED[key] = _check_parts(name, parts, where)
    return dict(_CHECKED[key])


def _check_name(name: str, data_root) -> None:
    if not isinstance(name, str) or name not in INFO:
        raise ValueError(f"dataset: unknown dataset {name!r}; known datasets: {', '.join(INFO)}")
    if data_root is not None and not isinstance(data_root, (str, os.PathLike)):
        raise ValueError(f"data_root: must be a folder path (str or os.PathLike) or None, "
                         f"got {type(data_root).__name__} {data_root!r}")


def check_run_inputs(config: Any, where: str = "config") -> None:
    """What a run of ``config`` depends on beyond its fields' own ranges, checked before it runs
    (from :meth:`ExperimentConfig.validate`), so that a sweep stores no error entry for an input it
    could have refused: a problem whose arrays cannot fit in this machine's memory, and for a
    neural problem its dataset's files (:func:`fedlib.data.check_files`: image shape, one label per
    image, labels in range, pixels 0..255) and a client count the training split can serve (one
    sample each at least). Raises one :class:`InputError` naming ``where`` and the field."""
    args = config.arguments("problem_args")
    check_problem_memory(config.problem, args, f"{where}.problem_args")
    if config.problem == "digits_cnn":
        dataset, synthetic, sizes, n = "digits", False, None, args.get("num_clients", 20)
    elif config.problem == "neural":
        dataset, synthetic = args.get("dataset", "mnist"), bool(args.get("synthetic", False))
        sizes, n = args.get("synthetic_sizes"), args.get("num_clients", 100)
    else:
        return
    if not isinstance(dataset, str) or dataset not in INFO:
        return                                              # named by the problem's own check
    if synthetic:
        first = sizes[0] if isinstance(sizes, (tuple, list)) and sizes else None
        n_train = first if isinstance(first, int) and first > 0 else INFO[dataset].n_train
    else:
        try:
            n_train = check_files(dataset, args.get("data_root"))["train"]
        except DataNotFoundError:
            return                                          # the machine lacks the data: load() says so
        except ValueError as e:
            field = "" if str(e).startswith("data_root:") else "dataset: "
            raise InputError(f"{where}.problem_args.{field}{e}") from None
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool) and not 1 <= n <= n_train:
        raise InputError(f"{where}.problem_args.num_clients: must be an integer in 1..{n_train} (dataset "
                         f"{dataset!r} has {n_train} training samples; a client needs one at least), got {n}")


def _normalise(x: np.ndarray, info: Info) -> torch.Tensor:
    t = torch.tensor(np.array(x), dtype=torch.float32)
    if t.ndim == 3:
        t = t.unsqueeze(1)
    t = t / 255.0
    mean = torch.tensor(info.mean).view(1, -1, 1, 1)
    std = torch.tensor(info.std).view(1, -1, 1, 1)
    return (t - mean) / std


def _digits(seed: int = 0, test_fraction: float = 0.2) -> Dataset:
    """scikit-learn's digits (1,797 8x8 images shipped inside the package) upscaled bilinearly
    to 28x28 and standardised globally, split with a seeded class-stratified shuffle."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    x = torch.nn.functional.interpolate(x, size=(28, 28), mode="bilinear", align_corners=False)
    x = (x - x.mean()) / x.std()
    y = torch.tensor(d.target, dtype=torch.long)
    rng = np.random.default_rng(seed)
    test = np.sort(np.concatenate([rng.permutation(np.flatnonzero(d.target == c))[
        : int(round(test_fraction * (d.target == c).sum()))] for c in range(10)]))
    train = np.setdiff1d(np.arange(len(y)), test)
    return Dataset("digits", (x[train], y[train]), (x[test], y[test]), 10)


def load(name: str, data_root: str | os.PathLike | None = None, device: str | torch.device = "cpu",
         download: bool = False) -> Dataset:
    """Load dataset ``name`` (see :func:`available`) as normalised tensors on ``device``, from the
    first folder of :func:`data_roots` that holds its files, else from its Debian package's folder
    (:data:`SYSTEM_FOLDERS`).

    Raises:
        ValueError: unknown name, or files it would misread (see :func:`check_files`).
        DataNotFoundError: the files are missing (and ``download`` is False or impossible).
    """
    _check_name(name, data_root)
    if name == "digits":
        ds = _digits()
    else:
        parts, where = _read(name, data_root, download)
        _check_parts(name, parts, where)
        info = INFO[name]
        train, test = ((_normalise(parts[s][0], info), torch.tensor(np.array(parts[s][1]), dtype=torch.long))
                       for s in ("train", "test"))
        ds = Dataset(name, train, test, info.classes)
    dev = torch.device(device)
    return Dataset(ds.name, tuple(t.to(dev) for t in ds.train), tuple(t.to(dev) for t in ds.test),
                   ds.num_classes)


def synthetic_like(name: str, n_train: int | None = None, n_test: int | None = None, seed: int = 0,
                   device: str | torch.device = "cpu") -> Dataset:
    """Random stand-in with the shapes, class count and (by default) split sizes of ``name``:
    uint8 noise images normalised like the real data, balanced labels in random order."""
    if name not in INFO:
        raise ValueError(f"dataset: unknown dataset {name!r}; known datasets: {', '.join(INFO)}")
    info = INFO[name]
    rng = np.random.default_rng(seed)
    out = []
    for n in (n_train or info.n_train, n_test or info.n_test):
        x = rng.integers(0, 256, (n, *info.shape), dtype=np.uint8)
        y = rng.permutation(np.arange(n) % info.classes)
        out.append((_normalise(x, info).to(device), torch.as_tensor(y, dtype=torch.long, device=device)))
    return Dataset(f"synthetic_like({name})", out[0], out[1], info.classes)


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
