"""The data a GPU window needs, packed here and unpacked on the device machine (issue 48).

The device tool sends the working tree (tracked files and untracked ones git does not ignore)
plus at most 8 ``carry`` paths, 64 MiB in all, and the device machine has no dataset and no
network. So the window's data travel as one ignored folder, ``.gpu-data/``:

    python benchmarks/gpu_window.py pack            # here: fills .gpu-data/, prints the sizes
    python3 benchmarks/gpu_window.py unpack         # there: .gpu-data/ -> data/ (FEDLIB_DATA=data)

``pack`` copies ``mnist.npz`` from ``$FEDLIB_DATA`` (notebook 02, App. H's checks) and, unless
``--mnist-only``, Fashion-MNIST's four IDX files (notebook 08's paper profile) from wherever
:func:`fedlib.data.load` finds them (``$FEDLIB_DATA/FashionMNIST/raw`` or Debian's
``/usr/share/datasets/fashion-mnist``), recompressed with xz (the gzip files take 29.5 MiB, xz
25.3 MiB: with the tree's ~25 MiB and MNIST's 11 MiB the gzip files would not fit). It prints
the tree's size plus the folder's against the 64 MiB limit; over it, carry MNIST in one call and
Fashion-MNIST in the next (``--mnist-only`` / ``--fashion-only``: the warm machine keeps what an
earlier call carried). ``unpack`` writes ``data/mnist.npz`` and
``data/FashionMNIST/raw/*-ubyte``, which :func:`fedlib.data.load` reads with ``FEDLIB_DATA=data``.
"""

from __future__ import annotations

import argparse
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / ".gpu-data"
LIMIT_MIB = 64.0
FASHION = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
           "t10k-labels-idx1-ubyte")


def _fashion_folder() -> Path:
    """The folder holding Fashion-MNIST's four gzip'd or plain IDX files on this machine."""
    candidates = []
    if os.environ.get("FEDLIB_DATA"):
        candidates.append(Path(os.environ["FEDLIB_DATA"]) / "FashionMNIST" / "raw")
    sys.path.insert(0, str(ROOT))
    from fedlib import data
    candidates.append(data.SYSTEM_FOLDERS["fashion_mnist"][0])
    for c in candidates:
        if all((c / f).exists() or (c / f"{f}.gz").exists() for f in FASHION):
            return c
    raise SystemExit(f"Fashion-MNIST: not found in {', '.join(map(str, candidates))} (make fashion-mnist)")


def _tree_mib() -> float:
    """MiB of what the device tool sends besides carried paths: tracked and untracked-not-ignored files."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, check=True).stdout.split(b"\0")
    files = [ROOT / p.decode() for p in out if p]
    return sum(f.stat().st_size for f in files if f.is_file()) / 2 ** 20


def pack(args) -> None:
    exclude = ROOT / subprocess.run(["git", "rev-parse", "--git-path", "info/exclude"], cwd=ROOT,
                                    capture_output=True, text=True, check=True).stdout.strip()
    if "/.gpu-data/" not in (exclude.read_text() if exclude.exists() else ""):   # travels by carry only
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with open(exclude, "a") as f:
            f.write("/.gpu-data/\n")
    shutil.rmtree(PACK, ignore_errors=True)
    PACK.mkdir()
    if not args.fashion_only:
        src = Path(os.environ.get("FEDLIB_DATA", "")) / "mnist.npz"
        if not src.is_file():
            raise SystemExit(f"MNIST: no {src} (set FEDLIB_DATA to the folder holding mnist.npz)")
        shutil.copyfile(src, PACK / "mnist.npz")
    if not args.mnist_only:
        folder = _fashion_folder()
        (PACK / "FashionMNIST").mkdir()
        for f in FASHION:
            plain = folder / f
            raw = plain.read_bytes() if plain.exists() else __import__("gzip").decompress(
                (folder / f"{f}.gz").read_bytes())
            (PACK / "FashionMNIST" / f"{f}.xz").write_bytes(lzma.compress(raw, preset=9))
    size = sum(p.stat().st_size for p in PACK.rglob("*") if p.is_file()) / 2 ** 20
    tree = _tree_mib()
    verdict = "fits" if tree + size <= LIMIT_MIB else \
        "does NOT fit: pack --mnist-only for one call and --fashion-only for the next"
    print(f".gpu-data: {size:.1f} MiB; the tree: {tree:.1f} MiB; together {tree + size:.1f} of "
          f"{LIMIT_MIB:.0f} MiB: {verdict}")


def unpack(args) -> None:
    data = ROOT / "data"
    data.mkdir(exist_ok=True)
    if (PACK / "mnist.npz").exists():
        shutil.copyfile(PACK / "mnist.npz", data / "mnist.npz")
    raw = data / "FashionMNIST" / "raw"
    for f in FASHION:
        src = PACK / "FashionMNIST" / f"{f}.xz"
        if src.exists():
            raw.mkdir(parents=True, exist_ok=True)
            (raw / f).write_bytes(lzma.decompress(src.read_bytes()))
    print("data/: " + ", ".join(str(p.relative_to(data)) for p in sorted(data.rglob("*")) if p.is_file())
          + " (FEDLIB_DATA=data)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["pack", "unpack"])
    ap.add_argument("--mnist-only", action="store_true")
    ap.add_argument("--fashion-only", action="store_true")
    args = ap.parse_args()
    (pack if args.what == "pack" else unpack)(args)


if __name__ == "__main__":
    main()
