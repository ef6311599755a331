"""fedlib.data: registry, offline readers on generated files of the real formats, clear errors."""

import gzip
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import fedlib
from fedlib import arithmetic, data

MNIST_NPZ = Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist.npz"


def _idx_bytes(arr: np.ndarray) -> bytes:
    head = bytes([0, 0, 0x08, arr.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
    return head + arr.astype(np.uint8).tobytes()


def _write_idx(folder: Path, rng, n_train=30, n_test=10, gz=True):
    folder.mkdir(parents=True)
    for pre, n in (("train", n_train), ("t10k", n_test)):
        x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        y = rng.integers(0, 10, n).astype(np.uint8)
        for stem, arr in ((f"{pre}-images-idx3-ubyte", x), (f"{pre}-labels-idx1-ubyte", y)):
            raw = _idx_bytes(arr)
            if gz:
                with gzip.open(folder / f"{stem}.gz", "wb") as f:
                    f.write(raw)
            else:
                (folder / stem).write_bytes(raw)
    return x, y


def test_registry_lists_every_dataset():
    assert set(data.available()) == {"mnist", "fashion_mnist", "svhn", "cifar10", "cifar100", "cinic10",
                                     "digits"}
    with pytest.raises(ValueError, match="^dataset"):
        data.load("imagenet")


def test_roots_order(monkeypatch, tmp_path):
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path))
    assert data.data_roots() == [tmp_path]
    assert data.data_roots("/x") == [Path("/x")]
    monkeypatch.delenv("FEDLIB_DATA")
    assert data.data_roots() == [Path("~/.cache/fedlib").expanduser()]


@pytest.mark.parametrize("name", ["mnist", "fashion_mnist", "svhn", "cifar10", "cifar100", "cinic10"])
def test_missing_data_message(name, tmp_path, monkeypatch):
    # the Debian package's folder as on a machine without the package
    absent = tmp_path / "no-package"
    monkeypatch.setattr(data, "SYSTEM_FOLDERS", {"fashion_mnist": (absent, "dataset-fashion-mnist")})
    with pytest.raises(data.DataNotFoundError) as e:
        data.load(name, data_root=tmp_path)
    msg = str(e.value)
    assert msg.startswith(f"{name}:") and str(tmp_path) in msg and "Expected" in msg
    assert ("download=True" in msg) or ("datashare" in msg)
    assert "Traceback" not in msg and "torchvision" not in msg
    # the package's folder is among those searched, and the package is named, only where Debian has one
    debian = name == "fashion_mnist"
    assert (f"{absent} (Debian's package dataset-fashion-mnist)" in msg) == debian
    assert ("apt-get install dataset-fashion-mnist" in msg) == debian


def test_missing_fashion_mnist_names_the_real_debian_folder(tmp_path, monkeypatch):
    folder, package = data.SYSTEM_FOLDERS["fashion_mnist"]
    assert folder == Path("/usr/share/datasets/fashion-mnist") and package == "dataset-fashion-mnist"
    monkeypatch.setattr(data, "_read_idx_set", lambda folder: None)      # as if the package were absent
    with pytest.raises(data.DataNotFoundError, match="^fashion_mnist: dataset files not found") as e:
        data.load("fashion_mnist", data_root=tmp_path)
    assert f"Searched: {tmp_path}, /usr/share/datasets/fashion-mnist (Debian's package" in str(e.value)


def _small_fashion(root: Path, seed: int) -> np.ndarray:
    """Small IDX files of Fashion-MNIST's layout under ``root``/FashionMNIST/raw: their test labels."""
    return _write_idx(root / "FashionMNIST" / "raw", np.random.default_rng(seed))[1]


def test_data_root_and_fedlib_data_take_precedence_over_the_debian_folder(tmp_path, monkeypatch):
    system = tmp_path / "system"
    system_y = _write_idx(system, np.random.default_rng(7), n_train=40, n_test=20)[1]   # the package's layout
    monkeypatch.setattr(data, "SYSTEM_FOLDERS", {"fashion_mnist": (system, "dataset-fashion-mnist")})
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path / "empty"))
    ds = data.load("fashion_mnist")                      # nothing under FEDLIB_DATA: the package's folder
    assert ds.train[0].shape == (40, 1, 28, 28) and ds.test[1].tolist() == system_y.tolist()
    env_y = _small_fashion(tmp_path / "env", 8)
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path / "env"))
    ds = data.load("fashion_mnist")                                   # FEDLIB_DATA before the package
    assert ds.train[0].shape == (30, 1, 28, 28) and ds.test[1].tolist() == env_y.tolist()
    root_y = _small_fashion(tmp_path / "root", 9)
    ds = data.load("fashion_mnist", data_root=tmp_path / "root")      # data_root before both
    assert ds.test[1].tolist() == root_y.tolist() != env_y.tolist()
    monkeypatch.delenv("FEDLIB_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))                # ~/.cache/fedlib before the package too
    home_y = _small_fashion(tmp_path / "home" / ".cache" / "fedlib", 10)
    assert data.load("fashion_mnist").test[1].tolist() == home_y.tolist()


_FASHION = data.SYSTEM_FOLDERS["fashion_mnist"][0]


@pytest.mark.skipif(not (_FASHION / "train-images-idx3-ubyte.gz").is_file(),
                    reason="Debian's dataset-fashion-mnist is not installed (make fashion-mnist installs it)")
def test_fashion_mnist_from_the_debian_package(monkeypatch, tmp_path):
    """The full official split of Fashion-MNIST (Xiao et al. 2017, arXiv:1708.07747) without any
    configuration: 60,000 / 10,000 images, 6,000 / 1,000 per class, pixels with mean 0.2860 and
    std 0.3530 (the values published for the training set, at 4 decimals)."""
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path / "empty"))        # nothing there: the package's folder
    ds = data.load("fashion_mnist")
    assert ds.train[0].shape == (60000, 1, 28, 28) and ds.test[0].shape == (10000, 1, 28, 28)
    assert torch.bincount(ds.train[1], minlength=10).tolist() == [6000] * 10
    assert torch.bincount(ds.test[1], minlength=10).tolist() == [1000] * 10
    # back to [0, 1] pixels: loaded with MNIST's normalisation (0.1307, 0.3081), as FedAU's code does
    mean, std = data.info("fashion_mnist").mean[0], data.info("fashion_mnist").std[0]
    px = ds.train[0].double() * std + mean
    # tolerance: the published values are rounded to 4 decimals (+-5e-5); the fp32 normalisation
    # and its inversion move each pixel by at most ~1e-7 relative, far below that
    assert abs(float(px.mean()) - 0.2860) <= 5e-5 + 1e-6 and abs(float(px.std()) - 0.3530) <= 5e-5 + 1e-6


def test_download_without_torchvision_is_a_clear_error(tmp_path):
    try:
        import torchvision  # noqa: F401
        pytest.skip("torchvision imports here; the download path would go online")
    except Exception:  # noqa: BLE001
        pass
    with pytest.raises(data.DataNotFoundError, match="^cifar10: download=True needs torchvision"):
        data.load("cifar10", data_root=tmp_path, download=True)


def test_idx_readers_mnist_and_fashion(tmp_path):
    rng = np.random.default_rng(0)
    xt, yt = _write_idx(tmp_path / "FashionMNIST" / "raw", rng, gz=True)
    ds = data.load("fashion_mnist", data_root=tmp_path)
    assert ds.train[0].shape == (30, 1, 28, 28) and ds.test[0].shape == (10, 1, 28, 28)
    assert torch.equal(ds.test[1], torch.as_tensor(yt, dtype=torch.long))
    expect = (xt[0] / 255.0 - 0.1307) / 0.3081
    assert np.allclose(ds.test[0][0, 0].numpy(), expect, atol=1e-6)
    _write_idx(tmp_path / "MNIST" / "raw", rng, gz=False)
    assert data.load("mnist", data_root=tmp_path).train[0].shape == (30, 1, 28, 28)


def test_cifar_readers(tmp_path):
    rng = np.random.default_rng(1)
    for folder, train_files, test_file, key, classes in (
            ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)], "test_batch", b"labels", 10),
            ("cifar-100-python", ["train"], "test", b"fine_labels", 100)):
        d = tmp_path / folder
        d.mkdir()
        for f in [*train_files, test_file]:
            blob = {b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8),
                    key: rng.integers(0, classes, 4).tolist()}
            with open(d / f, "wb") as fh:
                pickle.dump(blob, fh)
    c10 = data.load("cifar10", data_root=tmp_path)
    assert c10.train[0].shape == (20, 3, 32, 32) and c10.test[0].shape == (4, 3, 32, 32)
    assert c10.num_classes == 10
    with open(tmp_path / "cifar-10-batches-py" / "test_batch", "rb") as fh:
        blob = pickle.load(fh)
    px = blob[b"data"][0].reshape(3, 32, 32)[1, 0, 0]          # channel 1 (green), pixel (0, 0)
    assert np.isclose(float(c10.test[0][0, 1, 0, 0]), (px / 255 - 0.4822) / 0.1994, atol=1e-5)
    assert data.load("cifar100", data_root=tmp_path).num_classes == 100


def test_svhn_reader_maps_label_10_to_0(tmp_path):
    from scipy.io import savemat

    rng = np.random.default_rng(2)
    for split, n in (("train", 6), ("test", 3)):
        X = rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8)
        y = np.array([[10], [1], [2], [10], [5], [9]][:n], dtype=np.uint8)
        savemat(tmp_path / f"{split}_32x32.mat", {"X": X, "y": y})
    ds = data.load("svhn", data_root=tmp_path)
    assert ds.train[0].shape == (6, 3, 32, 32)
    assert ds.train[1].tolist() == [0, 1, 2, 0, 5, 9]


def test_cinic_imagefolder_reader(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(3)
    for split in ("train", "test"):
        for cls in ("airplane", "cat"):
            d = tmp_path / "CINIC-10" / split / cls
            d.mkdir(parents=True)
            for k in range(2):
                Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(d / f"{k}.png")
    ds = data.load("cinic10", data_root=tmp_path)
    assert ds.train[0].shape == (4, 3, 32, 32) and ds.train[1].tolist() == [0, 0, 1, 1]


@pytest.mark.parametrize("name", ["mnist", "fashion_mnist", "svhn", "cifar10", "cifar100", "cinic10"])
def test_synthetic_like_has_the_real_shapes(name):
    ds = data.synthetic_like(name, n_train=50, n_test=20)
    info = data.info(name)
    assert ds.train[0].shape == (50, *info.shape) and ds.test[0].shape == (20, *info.shape)
    assert ds.num_classes == info.classes and int(ds.train[1].max()) < info.classes


def test_synthetic_like_default_sizes_are_the_real_ones():
    full = data.synthetic_like("svhn", seed=1, n_test=10)
    assert len(full.train[1]) == data.info("svhn").n_train == 73257


def test_digits_embedded():
    ds = data.load("digits")
    assert ds.train[0].shape[1:] == (1, 28, 28) and len(ds.train[1]) + len(ds.test[1]) == 1797


def test_digits_upscale_is_torchs_bilinear_in_float64():
    """The numpy upscale samples as torch's bilinear interpolation (align_corners=False) does: in
    float64 the two differ only by the rounding of a few products and sums (a few ulp of 1)."""
    from sklearn.datasets import load_digits

    images = load_digits().images[:50] / 16.0
    ours = data._upscale_bilinear(images, 28)
    torchs = torch.nn.functional.interpolate(torch.tensor(images).unsqueeze(1), size=(28, 28),
                                             mode="bilinear", align_corners=False)[:, 0].numpy()
    assert ours.shape == (50, 28, 28) and np.abs(ours - torchs).max() < 8 * np.finfo(np.float64).eps


def test_digits_are_the_same_bits_under_lowered_kernels():
    """The digits are computed with numpy, not torch's kernels: a process told to use SSE4.1
    kernels loads the same bits (their digest), so a replay under other kernels trains on the
    same data."""
    code = "import fedlib.data as d; print(d.load('digits').digest)"
    env = {**os.environ, **arithmetic.lowered_isa_env("sse41")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == data.load("digits").digest


@pytest.mark.skipif(not MNIST_NPZ.is_file(), reason="shared mnist.npz not available")
def test_real_mnist_npz(monkeypatch):
    monkeypatch.setenv("FEDLIB_DATA", str(MNIST_NPZ.parent))
    ds = data.load("mnist")
    assert ds.train[0].shape == (60000, 1, 28, 28) and ds.test[0].shape == (10000, 1, 28, 28)
    counts = torch.bincount(ds.train[1], minlength=10).tolist()
    assert counts == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert abs(float(ds.train[0].mean())) < 0.01 and abs(float(ds.train[0].std()) - 1) < 0.01


# ------------------------------------------------------------------ datasets of one's own
def _bars(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Images [n, 28, 28] uint8 of a horizontal (label 0) or vertical (label 1) bar."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = rng.integers(0, 40, (n, 28, 28)).astype(np.uint8)
    pos = rng.integers(4, 24, n)
    for i in range(n):
        if y[i] == 0:
            x[i, pos[i] - 2:pos[i] + 2, :] = 255
        else:
            x[i, :, pos[i] - 2:pos[i] + 2] = 255
    return x, y


@pytest.fixture
def bars():
    """A dataset registered by a user's loader (arrays made here, no files), removed after the test."""
    info = data.DatasetInfo((1, 28, 28), 2, mean=(0.2,), std=(0.35,), n_train=40, n_test=12,
                            description="horizontal or vertical bars", label="Bars")
    data.register_dataset("bars_test", lambda root: {"train": _bars(40, 0), "test": _bars(12, 1)}, info=info)
    yield "bars_test"
    data._DATASETS.pop("bars_test", None)


def test_a_dataset_of_ones_own_loads_like_a_built_in_one(bars):
    assert data.available()[bars] == "horizontal or vertical bars" and data.info(bars).label == "Bars"
    ds = data.load(bars)
    assert ds.train[0].shape == (40, 1, 28, 28) and ds.test[0].shape == (12, 1, 28, 28)
    assert ds.num_classes == 2
    x, y = _bars(40, 0)
    assert torch.equal(ds.train[1], torch.as_tensor(y)) and ds.train[1].dtype == torch.long
    assert torch.allclose(ds.train[0][:, 0], (torch.as_tensor(x, dtype=torch.float32) / 255 - 0.2) / 0.35)
    fake = data.synthetic_like(bars, seed=0)
    assert fake.train[0].shape == (40, 1, 28, 28) and set(fake.train[1].tolist()) == {0, 1}
    assert data.get_dataset(bars).module == __name__


def test_a_dataset_of_ones_own_is_a_neural_problem_in_a_config(bars):
    c = fedlib.ExperimentConfig(algorithm="fedavg", problem="neural", participation="full", rounds=2,
                                problem_args={"dataset": bars, "num_clients": 4, "partition": "iid",
                                              "batch_size": 5, "train_eval_per_client": 5},
                                lr_local=0.05, local_steps=2)
    c.validate()
    res = fedlib.run(c.algorithm, c.build_problem(), c.schedule(), rounds=2, lr_local=0.05, progress=False)
    assert res.history["test_acc"].notna().all() and len(res.history) == 3


@pytest.mark.parametrize("parts, pattern", [
    ({"train": (np.zeros((4, 3, 28, 28), np.uint8), np.zeros(4)), "test": None},
     r"^dataset 'bad_test', train split: images of shape \(4, 3, 28, 28\); expected \[n, 1, 28, 28\] or "
     r"\[n, 28, 28\] \(info.shape \(1, 28, 28\)\)$"),
    ({"train": (np.zeros((4, 28, 28), np.uint8), np.array([0, 1, 2, 1])), "test": None},
     r"^dataset 'bad_test', train split: labels must lie in 0..1 \(info.classes 2\); label 2 at index 2$"),
    ({"train": (np.zeros((4, 28, 28), np.uint8), np.zeros(3)), "test": None},
     r"^dataset 'bad_test', train split: labels of shape \(3,\); expected one per image, \[4\]"),
    ({"train": (np.full((4, 28, 28), 300.0), np.zeros(4)), "test": None},
     r"^dataset 'bad_test', train split: pixel values must be in \[0, 255\] \(info.pixels\); found 300.0"),
    ({"train": (np.full((4, 28, 28), np.nan), np.zeros(4)), "test": None},
     r"^dataset 'bad_test', train split: pixel values must be in \[0, 255\] \(info.pixels\); found nan"),
    ({"train": (np.zeros((4, 28, 28)), np.full(4, 0.5)), "test": None},
     r"^dataset 'bad_test', train split: labels must be integers 0..1, got dtype float64$"),
    ({"train": (np.zeros((4, 28, 28)), np.zeros(4))},
     r"^dataset 'bad_test': its loader must return \{'train': \(x, y\), 'test': \(x, y\)\} or None, got "
     r"dict with keys train$"),
    ({"train": np.zeros(4), "test": None},
     r"^dataset 'bad_test', train split: expected a pair \(x, y\), got ndarray"),
])
def test_a_loaders_arrays_are_checked_at_load(parts, pattern):
    data.register_dataset("bad_test", lambda root: parts, info=data.DatasetInfo((1, 28, 28), 2))
    try:
        with pytest.raises(ValueError, match=pattern):
            data.load("bad_test")
    finally:
        data._DATASETS.pop("bad_test", None)


def test_registering_a_dataset_refuses_clashes_and_bad_info(bars, tmp_path):
    loader = lambda root: None                                                   # noqa: E731
    with pytest.raises(ValueError, match=r"^name: dataset 'mnist' is a built-in dataset"):
        data.register_dataset("mnist", loader, info=data.DatasetInfo((1, 28, 28), 10), replace=True)
    with pytest.raises(ValueError, match=r"^name: dataset 'bars_test' is already registered \(by "
                                         r"tests.test_data\); pass replace=True"):
        data.register_dataset(bars, loader, info=data.DatasetInfo((1, 28, 28), 2))
    with pytest.raises(ValueError, match=r"^info.shape: must be \(channels, height, width\)"):
        data.DatasetInfo((28, 28), 2)
    with pytest.raises(ValueError, match=r"^info.mean: must be one finite number or one per channel \(3\)"):
        data.DatasetInfo((3, 32, 32), 10, mean=(0.1, 0.2))
    with pytest.raises(ValueError, match=r"^info: dataset 'x' needs a fedlib.data.DatasetInfo"):
        data.register_dataset("x", loader, info={"shape": (1, 28, 28)})
    # a loader that finds no files: the missing-data message names its module and the folder
    data.register_dataset(bars, loader, info=data.DatasetInfo((1, 28, 28), 2, files=("bars.npz",)),
                          replace=True)
    with pytest.raises(data.DataNotFoundError, match=r"^bars_test: dataset files not found. Searched: .*"
                                                      r"Expected: bars.npz. Its loader \(tests.test_data\) "
                                                      r"found"):
        data.load(bars, data_root=tmp_path)
    with pytest.raises(ValueError, match=r"^n_train: dataset 'bars_test' declares no split size"):
        data.synthetic_like(bars)


def test_a_relative_fedlib_data_is_taken_from_the_projects_folder(monkeypatch):
    """As the README says: a notebook's kernel runs in ``notebooks/`` (papermill ``--cwd notebooks``),
    and ``FEDLIB_DATA=../shared/data`` given in the project's folder names the same folder there; a
    folder that does not exist is said to be missing in the not-found message."""
    from pathlib import Path

    from fedlib.paths import project_root
    root = project_root(Path(__file__).parent)
    monkeypatch.chdir(root / "notebooks")
    monkeypatch.setenv("FEDLIB_DATA", "no/such/data")
    assert data.data_roots() == [root / "no/such/data"]
    with pytest.raises(FileNotFoundError, match=rf"Searched: {root}/no/such/data \(no such folder\)\."):
        data.load("mnist")


def test_a_datasets_digest_is_its_content_not_its_files(bars):
    """Dataset.digest: the same arrays in another dtype (another file format) give the same digest;
    one pixel or one label changed gives another; a synthetic stand-in records none."""
    ds = data.load(bars)
    assert ds.digest.startswith("sha256:") and data.load(bars).digest == ds.digest
    train, test = _bars(40, 0), _bars(12, 1)
    wide = {"train": (train[0].astype(np.int64), train[1].astype(np.int32)), "test": test}
    data.register_dataset(bars, lambda root: wide, info=data.info(bars), replace=True)
    assert data.load(bars).digest == ds.digest
    for split, part in ((0, 0), (0, 1), (1, 1)):
        edited = [list(train), list(test)]
        arr = edited[split][part].copy()
        arr.flat[3] = (arr.flat[3] + 1) % 2 if part else 255 - arr.flat[3]
        edited[split][part] = arr
        parts = {"train": tuple(edited[0]), "test": tuple(edited[1])}
        data.register_dataset(bars, lambda root, p=parts: p, info=data.info(bars), replace=True)
        assert data.load(bars).digest != ds.digest, (split, part)
    assert data.synthetic_like(bars, seed=0).digest is None
