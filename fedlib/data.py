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

A dataset of one's own is registered with :func:`register_dataset` (a loader returning
``{"train": (x, y), "test": (x, y)}`` and a :class:`DatasetInfo`), exactly as the built-in ones
are; its arrays are checked at every load, and a config's ``problem_args={"dataset": name}``
uses it.

torchvision is imported only when ``download=True`` (it writes exactly these files). Missing
data raises :class:`DataNotFoundError` naming the dataset, the folders searched, the files
expected and the command that downloads them (and, for a Debian-packaged dataset, the package).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import pickle
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ._validate import InputError, check_new_name
from .paths import project_root

__all__ = ["SYSTEM_FOLDERS", "DataNotFoundError", "Dataset", "DatasetInfo", "DatasetSpec", "available",
           "check_files", "data_roots", "get_dataset", "info", "load", "register_dataset", "synthetic_like"]


@dataclass(frozen=True)
class DatasetInfo:
    """What fedlib knows of a dataset (declared with it: :func:`register_dataset`).

    Attributes:
        shape: (channels, height, width) of one image.
        classes: number of classes; labels are 0 .. classes - 1.
        mean, std: per-channel (or one for all channels) statistics the pixels, scaled to [0, 1],
            are normalised with: (x / high - mean) / std.
        n_train, n_test: the published split sizes, used only as the default sizes of
            :func:`synthetic_like` (None: unknown). Files are not checked against them: a
            loader's files of any size load (a user's own subset of MNIST, say), and the checks
            before a run (:func:`check_run_data`) count the samples the files hold.
        files: the files the loader reads (a missing dataset's message lists them).
        description: one line on the dataset.
        label: its name in figures and tables (``"CIFAR-10"``; default: the registered name).
        pixels: the range (low, high) the loader's pixel values lie in (default (0, 255), e.g.
            uint8 images), checked at load; None: the loader returns images already normalised
            (used as they are).
        source: how to get the files where no download exists (``{root}`` is the data folder).
    """

    shape: tuple[int, int, int]
    classes: int
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    n_train: int | None = None
    n_test: int | None = None
    files: tuple[str, ...] = ()
    description: str = ""
    label: str = ""
    pixels: tuple[float, float] | None = (0, 255)
    source: str = ""

    def __post_init__(self) -> None:
        shape = tuple(self.shape) if isinstance(self.shape, (tuple, list)) else ()
        if len(shape) != 3 or not all(isinstance(d, (int, np.integer)) and d >= 1 for d in shape):
            raise InputError("info.shape: must be (channels, height, width), three integers >= 1; got "
                             f"{self.shape!r}")
        object.__setattr__(self, "shape", tuple(int(d) for d in shape))
        if isinstance(self.classes, bool) or not isinstance(self.classes, (int, np.integer)) \
                or self.classes < 1:
            raise InputError(f"info.classes: must be an integer >= 1, got {self.classes!r}")
        for name in ("mean", "std"):
            v = tuple(float(x) for x in np.atleast_1d(getattr(self, name)))
            if len(v) not in (1, shape[0]) or not all(np.isfinite(v)) or (name == "std" and min(v) <= 0):
                raise InputError(f"info.{name}: must be one finite number or one per channel ({shape[0]})"
                                 f"{', each > 0' if name == 'std' else ''}; got {getattr(self, name)!r}")
            object.__setattr__(self, name, v)
        for name in ("n_train", "n_test"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
                raise InputError(f"info.{name}: must be an integer >= 1 or None, got {v!r}")
        if self.pixels is not None:
            lo, hi = (tuple(self.pixels) + (None, None))[:2]
            if not all(isinstance(v, (int, float, np.number)) and np.isfinite(v) for v in (lo, hi)) \
                    or lo >= hi:
                raise InputError("info.pixels: must be (low, high) with low < high, or None; got "
                                 f"{self.pixels!r}")
        object.__setattr__(self, "files", tuple(self.files))


@dataclass(frozen=True)
class DatasetSpec:
    """A registered dataset (:func:`register_dataset`): its name, loader, info and download."""

    name: str
    loader: Callable[[Path], dict | None]
    info: DatasetInfo
    download: Callable[[Path], None] | None = None

    @property
    def module(self) -> str:
        """The module that defines the loader (a worker process imports it)."""
        fn = getattr(self.loader, "func", self.loader)                      # a functools.partial
        return getattr(fn, "__module__", None) or ""


#: datasets that Debian packages: name -> (the folder its package installs the files into, in
#: the layout of the column "files" above without the dataset's subfolder, and the package). Read
#: after the folders of :func:`data_roots`, which take precedence.
SYSTEM_FOLDERS: dict[str, tuple[Path, str]] = {
    "fashion_mnist": (Path("/usr/share/datasets/fashion-mnist"), "dataset-fashion-mnist"),
}

class DataNotFoundError(FileNotFoundError):
    """A dataset's files are not where fedlib looked."""


@dataclass
class Dataset:
    """Normalised tensors of one dataset.

    Attributes:
        name: registry name.
        train, test: (x [n, C, H, W] float32, y [n] int64).
        num_classes: number of classes.
        from_files: whether its content was read from files (False: a stand-in of
            :func:`synthetic_like`, a function of its seed).
        digest: ``"sha256:..."`` of the content a run computes on (:func:`content_digest`: the
            normalised images and the labels of both splits, with their shapes), whatever the
            files' format or compression; None for a stand-in. Computed when first asked for
            (hashing MNIST takes a fraction of a second). A stored run records it
            (:attr:`fedlib.tasks.Neural.data_digests`), so that ``verify`` can tell other data
            from other code.
    """

    name: str
    train: tuple[torch.Tensor, torch.Tensor]
    test: tuple[torch.Tensor, torch.Tensor]
    num_classes: int
    from_files: bool = True

    @functools.cached_property
    def digest(self) -> str | None:
        return content_digest(self.train, self.test) if self.from_files else None


def available() -> dict[str, str]:
    """Dataset names (built-in and registered) with a one-line description each."""
    return {k: v.info.description for k, v in _DATASETS.items()}


def get_dataset(name: str) -> DatasetSpec:
    """The registered dataset ``name`` (its loader, info and download).

    Raises:
        InputError: an unknown name, naming the known ones.
    """
    if not isinstance(name, str) or name not in _DATASETS:
        raise InputError(f"dataset: unknown dataset {name!r}; known datasets: {', '.join(_DATASETS)}")
    return _DATASETS[name]


def info(name: str) -> DatasetInfo:
    """What fedlib knows of dataset ``name`` (shape, classes, split sizes, normalisation, files)."""
    return get_dataset(name).info


def data_roots(data_root: str | os.PathLike | None = None) -> list[Path]:
    """Folders searched, in order: ``data_root`` if given, else ``$FEDLIB_DATA`` if set (a relative
    path taken from the project's folder, :func:`fedlib.paths.project_root`, as the README and the
    Makefile say, so that a notebook's kernel in ``notebooks/`` finds what the project's folder
    names), else ``~/.cache/fedlib``.

    Raises:
        InputError: the folder given (``data_root`` or ``$FEDLIB_DATA``) is a file, naming it and
            its folder."""
    if data_root is not None:
        return [_folder("data_root", Path(data_root).expanduser())]
    if os.environ.get("FEDLIB_DATA"):
        env = Path(os.environ["FEDLIB_DATA"]).expanduser()
        return [_folder("FEDLIB_DATA", env if env.is_absolute() else project_root() / env)]
    return [Path("~/.cache/fedlib").expanduser()]


def _folder(name: str, path: Path) -> Path:
    """``path`` unless it is a file (a dataset's own file given instead of its folder)."""
    if path.is_file():
        raise InputError(f"{name}: must be the folder that holds the datasets' files, got {path}, which is a "
                         f"file (give its folder, {path.parent})")
    return path


def _missing(spec: DatasetSpec, roots: list[Path]) -> DataNotFoundError:
    name, info = spec.name, spec.info
    cmd = (f"On a machine with internet: python -c \"from fedlib import data; data.load('{name}', "
           f"data_root='{roots[0]}', download=True)\" " if spec.download is not None else
           (info.source.format(root=roots[0]) + " " if info.source else
            f"Its loader ({spec.module}) found no files in {roots[0]}. "))
    searched = [str(r) + ("" if r.is_dir() else " (no such folder)") for r in roots]
    debian = ""
    if name in SYSTEM_FOLDERS:
        folder, package = SYSTEM_FOLDERS[name]
        searched.append(f"{folder} (Debian's package {package})")
        debian = (f"On Debian: apt-get install {package} (as root; `make fashion-mnist` does it), which puts "
                  f"{{train,t10k}}-{{images-idx3,labels-idx1}}-ubyte.gz into {folder}. ")
    return DataNotFoundError(
        f"{name}: dataset files not found. Searched: {', '.join(searched)}. "
        f"Expected: {'; '.join(info.files) or 'the files its loader reads'}. {debian}{cmd}"
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
                    raise InputError(f"mnist: {npz} is not in the Keras layout: it lacks "
                                     f"{', '.join(missing)} (has {', '.join(z.files) or 'nothing'}; "
                                     f"expected {', '.join(keys)})")
                return {"train": (z["x_train"], z["y_train"]), "test": (z["x_test"], z["y_test"])}
        except (OSError, EOFError, zipfile.BadZipFile) as e:
            raise InputError(f"mnist: cannot read {npz} ({type(e).__name__}: {e}); the file is truncated or "
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


def _read_cifar(root: Path, *, folder: str, train_files: list[str], test_file: str, key: bytes):
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


def _torchvision(name: str, cls_name: str, splits: bool = False) -> Callable[[Path], None]:
    """A download into the data folder by torchvision's dataset ``cls_name`` (which writes exactly
    the files the reader reads)."""
    def download(root: Path) -> None:
        try:
            import torchvision
        except Exception as e:  # noqa: BLE001 - torchvision may be absent or broken (CUDA build on CPU)
            raise DataNotFoundError(f"{name}: download=True needs torchvision, which could not be "
                                    f"imported ({type(e).__name__}: {e}); install the 'vision' "
                                    "extra") from None
        cls = getattr(torchvision.datasets, cls_name)
        root.mkdir(parents=True, exist_ok=True)
        parts = [{"split": "train"}, {"split": "test"}] if splits else [{"train": True}, {"train": False}]
        for kw in parts:
            cls(str(root), download=True, **kw)
    return download


def check_files(name: str, data_root: str | os.PathLike | None = None) -> dict[str, int]:
    """Check the files of dataset ``name`` as :func:`load` reads them (image shape, one label per
    image, labels in range, pixels in the declared range and not already scaled to [0, 1]) without
    normalising them, and return the sizes of its splits (``{"train": n, "test": m}``): for a
    config's validation, so that a run is refused before it starts rather than stored as an
    error. Cached per folder (its modification time), so a sweep checks the files once. The
    embedded digits and CINIC-10's 180,000 PNG files are not read: their declared split sizes
    come back.

    Raises:
        InputError: unknown name, a bad ``data_root``, or files :func:`load` would misread.
        DataNotFoundError: the files are missing.
    """
    spec = get_dataset(name)
    if data_root is not None and not isinstance(data_root, (str, os.PathLike)):
        raise InputError(f"data_root: must be a folder path (str or os.PathLike) or None, "
                         f"got {type(data_root).__name__} {data_root!r}")
    if name in ("digits", "cinic10") and spec.info.n_train:     # embedded; PNG files (labels by folder)
        return {"train": spec.info.n_train, "test": spec.info.n_test}
    roots = data_roots(data_root) + ([SYSTEM_FOLDERS[name][0]] if name in SYSTEM_FOLDERS else [])
    key = (name, *((str(r), r.stat().st_mtime_ns if r.is_dir() else None) for r in roots))
    if key not in _CHECKED:
        parts = _find(spec, data_roots(data_root), download=False)
        if parts is None:
            raise _missing(spec, data_roots(data_root))
        _CHECKED[key] = {split: len(x) for split, (x, _) in _checked_parts(spec, parts).items()}
    return dict(_CHECKED[key])


_CHECKED: dict[tuple, dict[str, int]] = {}


def check_run_data(dataset: Any, num_clients: Any, *, synthetic: bool = False, synthetic_sizes: Any = None,
                   data_root: Any = None, partition: Any = None) -> None:
    """What a run on ``dataset`` split over ``num_clients`` clients needs of its data, checked
    before it runs (a problem's ``inputs`` declaration, :func:`fedlib.problems.register_problem`,
    which :meth:`ExperimentConfig.validate` runs), so that a sweep stores no error entry for an
    input it could have refused: the dataset's files (:func:`check_files`; a synthetic stand-in
    of ``synthetic_sizes`` reads none) and a client count the training split can serve (one
    sample each at least; ``partition="one_class"``: one client per class at least). A dataset that
    is not a known name is left to the problem's own
    check; files missing from this machine to :func:`load`.

    Raises:
        InputError: ``"<argument>: ..."``, naming the problem argument (``dataset``, ``data_root``
            or ``num_clients``).
    """
    if not isinstance(dataset, str) or dataset not in available():
        return                                              # named by the problem's own check
    classes = info(dataset).classes
    n = num_clients
    if partition == "one_class" and isinstance(n, (int, np.integer)) and 1 <= n < classes:
        raise InputError(f"num_clients: partition 'one_class' needs at least one client "
                         f"per class (dataset {dataset!r} has {classes}), got {n}")
    if synthetic:
        first = synthetic_sizes[0] if isinstance(synthetic_sizes, (tuple, list)) and synthetic_sizes else None
        n_train = first if isinstance(first, int) and first > 0 else info(dataset).n_train
    else:
        try:
            n_train = check_files(dataset, data_root)["train"]
        except DataNotFoundError:
            return                                          # the machine lacks the data: load() says so
        except ValueError as e:
            field = "" if str(e).startswith("data_root:") else "dataset: "
            raise InputError(f"{field}{e}") from None
    if n_train and isinstance(n, (int, np.integer)) and not isinstance(n, bool) and not 1 <= n <= n_train:
        raise InputError(f"num_clients: must be an integer in 1..{n_train} (dataset {dataset!r} has "
                         f"{n_train} training samples; a client needs one at least), got {n}")


def _normalise(x: np.ndarray, info: DatasetInfo) -> torch.Tensor:
    t = torch.tensor(np.array(x), dtype=torch.float32)
    if t.ndim == 3:
        t = t.unsqueeze(1)
    lo, hi = info.pixels if info.pixels is not None else (0, 255)
    t = (t - lo) / (hi - lo) if lo != 0 else t / float(hi)
    mean = torch.tensor(info.mean).view(1, -1, 1, 1)
    std = torch.tensor(info.std).view(1, -1, 1, 1)
    return (t - mean) / std


def _read_digits(root: Path, seed: int = 0, test_fraction: float = 0.2) -> dict:
    """scikit-learn's digits (1,797 8x8 images shipped inside the package) upscaled bilinearly
    to 28x28 and standardised globally, split with a seeded class-stratified shuffle (the data
    folder is not used).

    Computed in float64 with numpy's elementwise operations (:func:`_upscale_bilinear`), then
    rounded to float32 once: the same bits on every CPU and under any ``ATEN_CPU_CAPABILITY``
    (torch's interpolation and reductions round by the instruction set, so a replay under other
    kernels trained on other data)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = _upscale_bilinear(np.asarray(d.images, dtype=np.float64) / 16.0, 28)[:, None]
    x = ((x - x.mean()) / x.std(ddof=1)).astype(np.float32)
    y = d.target.astype(np.int64)
    rng = np.random.default_rng(seed)
    test = np.sort(np.concatenate([rng.permutation(np.flatnonzero(d.target == c))[
        : int(round(test_fraction * (d.target == c).sum()))] for c in range(10)]))
    train = np.setdiff1d(np.arange(len(y)), test)
    return {"train": (x[train], y[train]), "test": (x[test], y[test])}


def _upscale_bilinear(images: np.ndarray, size: int) -> np.ndarray:
    """``images`` (n, h, w) resized to (n, size, size) as ``torch.nn.functional.interpolate(...,
    mode="bilinear", align_corners=False)`` samples: output pixel i reads source coordinate
    (i + 0.5) h / size - 0.5 (clamped at 0) between its two neighbours, weighted linearly. Rows
    then columns, each a product and a sum of two terms (no fused multiply-add, no BLAS)."""
    def along(a: np.ndarray, axis: int) -> np.ndarray:
        n = a.shape[axis]
        src = np.maximum((np.arange(size) + 0.5) * (n / size) - 0.5, 0.0)
        i0 = src.astype(np.int64)
        i1 = np.minimum(i0 + 1, n - 1)
        w1 = src - i0
        shape = [1] * a.ndim
        shape[axis] = size
        w1 = w1.reshape(shape)
        return np.take(a, i0, axis=axis) * (1.0 - w1) + np.take(a, i1, axis=axis) * w1
    return along(along(images, 1), 2)


# ------------------------------------------------------------------------------- the registry
_DATASETS: dict[str, DatasetSpec] = {}
#: how many datasets were registered in this process (the per-process problem cache's key:
#: :meth:`fedlib.ExperimentConfig.build_problem` builds again after a dataset is replaced)
_registrations = 0
_BUILTIN: frozenset[str] = frozenset()


def register_dataset(name: str, loader: Callable[[Path], dict | None], *, info: DatasetInfo,
                     download: Callable[[Path], None] | None = None, replace: bool = False) -> DatasetSpec:
    """Register a dataset, so that :func:`load`, :func:`synthetic_like` and the ``neural`` problem
    (a config's ``problem_args={"dataset": name, ...}``) know it, exactly as the built-in ones.

    Args:
        name: the dataset's name; a built-in name, or one already registered (unless
            ``replace``), is refused.
        loader: ``loader(root)`` -> ``{"train": (x, y), "test": (x, y)}``, or None when its files
            are not in the data folder ``root`` (:func:`data_roots`; a loader that knows its files
            may ignore it). ``x``: images [n, C, H, W] (or [n, H, W] with one channel) with values
            in ``info.pixels`` (numpy arrays or tensors); ``y``: integer labels [n] in
            0 .. classes - 1. Checked at every load: a wrong shape, label or pixel value is one
            error naming the dataset, the split and what is allowed.
        info: its :class:`DatasetInfo` (shape, classes, normalisation, ...).
        download: ``download(root)`` writing the files into ``root`` (``load(download=True)``).
        replace: replace a dataset registered before (not a built-in one).

    A dataset defined in ``__main__`` (a notebook cell) loads in this process; a sweep with
    worker processes refuses it (define it in a module and import that).

    Raises:
        InputError: a bad name, a clash, a loader that is not callable, an info that is not a
            :class:`DatasetInfo`.
    """
    check_new_name("dataset", name, _BUILTIN, _DATASETS, replace)
    if not callable(loader):
        raise InputError(f"loader: dataset {name!r} needs a function root -> {{'train': (x, y), "
                         f"'test': (x, y)}}, got {loader!r}")
    if not isinstance(info, DatasetInfo):
        raise InputError(f"info: dataset {name!r} needs a fedlib.data.DatasetInfo, got {info!r}")
    if download is not None and not callable(download):
        raise InputError(f"download: must be a function root -> None or None, got {download!r}")
    spec = DatasetSpec(name, loader, info, download)
    _DATASETS[name] = spec
    global _registrations
    _registrations += 1              # a problem built from the registry before is built again
    return spec


def _register_builtins() -> None:
    """The built-in datasets, through the same registration as a user's. mean/std: FedAU / FedAWE
    code (IBM/fedau dataset.py) where it normalises; MNIST's for MNIST and (as that code does)
    FashionMNIST; the usual CIFAR-100 statistics."""
    idx = "{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]"
    register_dataset("mnist", _read_mnist, download=_torchvision("mnist", "MNIST"), info=DatasetInfo(
        (1, 28, 28), 10, (0.1307,), (0.3081,), 60000, 10000, ("mnist.npz", f"or MNIST/raw/{idx}"),
        "MNIST handwritten digits", "MNIST"))
    fashion = _torchvision("fashion_mnist", "FashionMNIST")
    register_dataset("fashion_mnist", _read_fashion, download=fashion, info=DatasetInfo(
        (1, 28, 28), 10, (0.1307,), (0.3081,), 60000, 10000, (f"FashionMNIST/raw/{idx}",),
        "Fashion-MNIST clothing images", "FashionMNIST"))
    register_dataset("svhn", _read_svhn, download=_torchvision("svhn", "SVHN", splits=True), info=DatasetInfo(
        (3, 32, 32), 10, (0.4376821, 0.4437697, 0.47280442), (0.19803012, 0.20101562, 0.19703614), 73257,
        26032, ("train_32x32.mat", "test_32x32.mat"), "Street View House Numbers", "SVHN"))
    register_dataset("cifar10", functools.partial(
        _read_cifar, folder="cifar-10-batches-py", train_files=[f"data_batch_{i}" for i in range(1, 6)],
        test_file="test_batch", key=b"labels"), download=_torchvision("cifar10", "CIFAR10"), info=DatasetInfo(
        (3, 32, 32), 10, (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010), 50000, 10000,
        ("cifar-10-batches-py/data_batch_1..5", "cifar-10-batches-py/test_batch"), "CIFAR-10", "CIFAR-10"))
    register_dataset("cifar100", functools.partial(
        _read_cifar, folder="cifar-100-python", train_files=["train"], test_file="test", key=b"fine_labels"),
        download=_torchvision("cifar100", "CIFAR100"), info=DatasetInfo(
            (3, 32, 32), 100, (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762), 50000, 10000,
            ("cifar-100-python/train", "cifar-100-python/test"), "CIFAR-100 (fine labels)", "CIFAR-100"))
    register_dataset("cinic10", _read_cinic, info=DatasetInfo(
        (3, 32, 32), 10, (0.47889522, 0.47227842, 0.43047404), (0.24205776, 0.23828046, 0.25874835), 90000,
        90000, ("CINIC-10/train/<class>/*.png", "CINIC-10/test/<class>/*.png"), "CINIC-10", "CINIC-10",
        source="On a machine with internet: download CINIC-10 from its publisher "
               "(https://datashare.ed.ac.uk/handle/10283/3192) and extract it so that {root}/CINIC-10/train "
               "exists"))
    register_dataset("digits", _read_digits, info=DatasetInfo(
        (1, 28, 28), 10, (0.0,), (1.0,), 1437, 360, (), "scikit-learn digits upscaled to 28x28 "
        "(embedded, standardised globally)", "digits", pixels=None))


_register_builtins()
_BUILTIN = frozenset(_DATASETS)


# ------------------------------------------------------------------------------- loading
def _check_split(name: str, split: str, x: np.ndarray, y: np.ndarray, info: DatasetInfo) -> None:
    """The loader's ``split`` has images of the declared shape, labels in range and pixel values
    in ``info.pixels``; else one ValueError naming the dataset, the split and what is allowed."""
    where = f"dataset {name!r}, {split} split"
    c, h, w = info.shape
    if not (x.ndim == 4 and x.shape[1:] == info.shape) \
            and not (x.ndim == 3 and c == 1 and x.shape[1:] == (h, w)):
        raise InputError(f"{where}: images of shape {tuple(x.shape)}; expected [n, {c}, {h}, {w}]"
                         f"{f' or [n, {h}, {w}]' if c == 1 else ''} (info.shape {info.shape})")
    if len(x) == 0 or y.shape != (len(x),):
        raise InputError(f"{where}: labels of shape {tuple(y.shape)}; expected one per image, [{len(x)}] "
                         "(and at least one image)")
    if y.dtype.kind not in "iu" and not (y.dtype.kind == "f" and np.all(y == np.round(y))):
        raise InputError(f"{where}: labels must be integers 0..{info.classes - 1}, got dtype {y.dtype}")
    bad = (y < 0) | (y >= info.classes)
    if bad.any():
        raise InputError(f"{where}: labels must lie in 0..{info.classes - 1} (info.classes {info.classes}); "
                         f"label {y[bad][0].item()!r} at index {int(np.flatnonzero(bad)[0])}")
    if x.dtype.kind not in "iuf":
        raise InputError(f"{where}: images must be numbers, got dtype {x.dtype}")
    if x.dtype == np.uint8 and info.pixels is not None and tuple(info.pixels) == (0, 255):
        return                                                     # always in range
    if info.pixels is not None and tuple(info.pixels) == (0, 255) and x.dtype.kind == "f" and x.size \
            and np.isfinite(x).all() and 0 <= x.min() and x.max() <= 1.0:
        raise InputError(f"{where}: pixels are floats in {x.min():g}..{x.max():g}, already scaled to [0, 1]; "
                         "fedlib scales 0..255 pixels by 1/255 itself (they would all be near 0): store the "
                         "images as their 0..255 values (uint8), or declare their range: "
                         "DatasetInfo(pixels=(0, 1))")
    lo, hi = info.pixels if info.pixels is not None else (-np.inf, np.inf)
    ok = np.isfinite(x) & (x >= lo) & (x <= hi)
    if not ok.all():
        allowed = "finite" if info.pixels is None else f"in [{lo:g}, {hi:g}] (info.pixels)"
        finite = x[np.isfinite(x)]
        span = f"{finite.min():g}..{finite.max():g}" if finite.size else "none finite"
        first = x[~ok].ravel()[0].item()
        raise InputError(f"{where}: pixel values must be {allowed}; found {first!r} (values {span})")


def _checked_parts(spec: DatasetSpec, parts: object) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The loader's arrays per split, checked (:func:`_check_split`)."""
    if not isinstance(parts, dict) or set(parts) != {"train", "test"}:
        raise InputError(f"dataset {spec.name!r}: its loader must return {{'train': (x, y), 'test': (x, y)}} "
                         f"or None, got {type(parts).__name__}"
                         f"{' with keys ' + ', '.join(map(str, parts)) if isinstance(parts, dict) else ''}")
    out = {}
    for split in ("train", "test"):
        pair = parts[split]
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InputError(f"dataset {spec.name!r}, {split} split: expected a pair (x, y), got "
                             f"{type(pair).__name__}")
        x, y = (np.asarray(v.detach().cpu() if hasattr(v, "detach") else v) for v in pair)
        _check_split(spec.name, split, x, y, spec.info)
        out[split] = (x, y)
    return out


def _tensors(spec: DatasetSpec, parts: object) -> Dataset:
    """The loader's arrays, checked, as normalised tensors (on the CPU)."""
    out = {}
    for split, (x, y) in _checked_parts(spec, parts).items():
        if spec.info.pixels is None:
            xt = torch.tensor(np.array(x), dtype=torch.float32)
            xt = xt.unsqueeze(1) if xt.ndim == 3 else xt
        else:
            xt = _normalise(x, spec.info)
        out[split] = (xt, torch.tensor(np.array(y), dtype=torch.long))
    return Dataset(spec.name, out["train"], out["test"], spec.info.classes)


def content_digest(*splits: tuple[torch.Tensor, torch.Tensor]) -> str:
    """``"sha256:..."`` of the splits' tensors as a run computes on them: each tensor's dtype, shape
    and bytes (on the CPU), in order. Two loads of the same data give the same digest whatever
    the files' format; one changed pixel or label gives another."""
    h = hashlib.sha256()
    for t in (t for split in splits for t in split):
        c = t.detach().cpu().contiguous()
        h.update(f"{c.dtype}{tuple(c.shape)};".encode())
        h.update(c.numpy().data)                 # the buffer itself, no copy of its bytes
    return f"sha256:{h.hexdigest()}"


def _find(spec: DatasetSpec, roots: list[Path], download: bool) -> object:
    """The loader's parts from the first root that holds the files, else the Debian package's
    folder (:data:`SYSTEM_FOLDERS`), else downloaded into the first root; None: not found."""
    parts = next((p for p in (spec.loader(r) for r in roots) if p is not None), None)
    if parts is None and spec.name in SYSTEM_FOLDERS:             # after the roots, which take precedence
        parts = _read_idx_set(SYSTEM_FOLDERS[spec.name][0])
    if parts is None and download and spec.download is not None:
        spec.download(roots[0])
        parts = spec.loader(roots[0])
    return parts


def load(name: str, data_root: str | os.PathLike | None = None, device: str | torch.device = "cpu",
         download: bool = False) -> Dataset:
    """Load dataset ``name`` (see :func:`available`) as normalised tensors on ``device``, from the
    first folder of :func:`data_roots` that holds its files, else from its Debian package's folder
    (:data:`SYSTEM_FOLDERS`).

    Raises:
        InputError: unknown name; a loader's arrays of the wrong shape, labels or pixel values.
        DataNotFoundError: the files are missing (and ``download`` is False or impossible).
    """
    spec = get_dataset(name)
    if data_root is not None and not isinstance(data_root, (str, os.PathLike)):
        raise InputError(f"data_root: must be a folder path (str or os.PathLike) or None, "
                         f"got {type(data_root).__name__} {data_root!r}")
    roots = data_roots(data_root)
    parts = _find(spec, roots, download)
    if parts is None:
        raise _missing(spec, roots)
    ds = _tensors(spec, parts)
    dev = torch.device(device)
    return Dataset(ds.name, tuple(t.to(dev) for t in ds.train), tuple(t.to(dev) for t in ds.test),
                   ds.num_classes)


def synthetic_like(name: str, n_train: int | None = None, n_test: int | None = None, seed: int = 0,
                   device: str | torch.device = "cpu") -> Dataset:
    """Random stand-in with the shapes, class count and (by default) split sizes of ``name``:
    uint8 noise images normalised like the real data, balanced labels in random order."""
    spec = get_dataset(name)
    info = spec.info
    rng = np.random.default_rng(seed)
    out = []
    for what, n, default in (("n_train", n_train, info.n_train), ("n_test", n_test, info.n_test)):
        if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
            raise InputError(f"{what}: must be a positive integer (or None: info.{what}), got {n!r}")
        if (n or default) is None:
            raise InputError(f"{what}: dataset {name!r} declares no split size (info.{what}); give {what}")
        x = rng.integers(0, 256, (n or default, *info.shape), dtype=np.uint8)
        y = rng.permutation(np.arange(n or default) % info.classes)
        out.append((_normalise_uint8(x, info).to(device),
                    torch.as_tensor(y, dtype=torch.long, device=device)))
    return Dataset(f"synthetic_like({name})", out[0], out[1], info.classes, from_files=False)


def _normalise_uint8(x: np.ndarray, info: DatasetInfo) -> torch.Tensor:
    """uint8 noise normalised as the real pixels are: / 255, then the dataset's mean / std."""
    t = torch.tensor(np.array(x), dtype=torch.float32) / 255.0
    return (t - torch.tensor(info.mean).view(1, -1, 1, 1)) / torch.tensor(info.std).view(1, -1, 1, 1)


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
