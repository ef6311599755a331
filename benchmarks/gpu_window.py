"""The data a GPU window needs, packed here and unpacked on the device machine (issue 48).

The device tool sends the working tree (tracked files and untracked ones git does not ignore)
plus at most 8 ``carry`` paths, 64 MiB in all, and the device machine has no dataset and no
network. So the window's data travel as one ignored folder, ``.gpu-data/``:

    python benchmarks/gpu_window.py pack            # here: fills .gpu-data/, prints the sizes
    python3 benchmarks/gpu_window.py unpack         # there: .gpu-data/ -> data/ (FEDLIB_DATA=data)

``pack`` writes two parts: ``.gpu-data/mnist/mnist.npz`` from ``$FEDLIB_DATA`` (notebook 02,
App. H's checks) and ``.gpu-data/fashion/FashionMNIST/*.xz``, Fashion-MNIST's four IDX files
(notebook 08's paper profile) from wherever :func:`fedlib.data.load` finds them
(``$FEDLIB_DATA/FashionMNIST/raw`` or Debian's ``/usr/share/datasets/fashion-mnist``),
recompressed with xz (the gzip files take 29.5 MiB, xz 25.3 MiB; xz -9 takes minutes, so an
``.xz`` already there that decompresses to the same bytes is kept). ``--mnist-only`` /
``--fashion-only`` (re)write one part. It prints the tree's size plus each part's against
:data:`LIMIT_MIB` and the ``carry`` of each call: ``[".gpu-data"]`` in one call where the whole
fits, else ``[".gpu-data/mnist"]`` for the call of notebook 02 and ``[".gpu-data/fashion"]`` for
a second call of notebook 08 within 30 s (the warm machine keeps ``data/`` from the first).
``unpack`` writes ``data/mnist.npz`` and ``data/FashionMNIST/raw/*-ubyte`` from whichever parts
came, which :func:`fedlib.data.load` reads with ``FEDLIB_DATA=data``.
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
#: what pack lets the tree and a call's carried data measure together, in MiB (by its own count:
#: the files' bytes). The device tool's limit is "64 MiB", but on 2026-11-26 it refused a call that
#: pack counted at 27.2 + 36.2 = 63.4 MiB: the tool counts more than the files' bytes (an archive's
#: headers and padding, ~1 KiB for each of the tree's ~2,400 files, are ~2 MiB; a limit of 64
#: million bytes would be 61.0 MiB). 8 MiB below the stated limit covers both with room to spare.
LIMIT_MIB = 56.0
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


def _mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2 ** 20


def _xz(raw: bytes, dst: Path) -> None:
    """``raw`` as xz -9 into ``dst``, unless ``dst`` already holds exactly that (xz -9 takes minutes)."""
    if dst.exists():
        try:
            if lzma.decompress(dst.read_bytes()) == raw:
                return
        except lzma.LZMAError:
            pass
    dst.write_bytes(lzma.compress(raw, preset=9))


def pack(args) -> None:
    exclude = ROOT / subprocess.run(["git", "rev-parse", "--git-path", "info/exclude"], cwd=ROOT,
                                    capture_output=True, text=True, check=True).stdout.strip()
    if "/.gpu-data/" not in (exclude.read_text() if exclude.exists() else ""):   # travels by carry only
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with open(exclude, "a") as f:
            f.write("/.gpu-data/\n")
    (PACK / "mnist.npz").unlink(missing_ok=True)                    # the one-folder layout of before:
    if (PACK / "FashionMNIST").is_dir() and not (PACK / "fashion").exists():   # its xz files kept
        (PACK / "fashion").mkdir(parents=True)
        (PACK / "FashionMNIST").rename(PACK / "fashion" / "FashionMNIST")
    shutil.rmtree(PACK / "FashionMNIST", ignore_errors=True)
    if not args.fashion_only:
        src = Path(os.environ.get("FEDLIB_DATA", "")) / "mnist.npz"
        if not src.is_file():
            raise SystemExit(f"MNIST: no {src} (set FEDLIB_DATA to the folder holding mnist.npz)")
        (PACK / "mnist").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, PACK / "mnist" / "mnist.npz")
    if not args.mnist_only:
        folder = _fashion_folder()
        dst = PACK / "fashion" / "FashionMNIST"
        dst.mkdir(parents=True, exist_ok=True)
        for f in FASHION:
            plain = folder / f
            raw = plain.read_bytes() if plain.exists() else __import__("gzip").decompress(
                (folder / f"{f}.gz").read_bytes())
            _xz(raw, dst / f"{f}.xz")
    tree = _tree_mib()
    parts = {name: _mib(PACK / name) for name in ("mnist", "fashion") if (PACK / name).is_dir()}
    whole = tree + sum(parts.values())
    print(f"the tree: {tree:.1f} MiB; " + "; ".join(f".gpu-data/{k}: {v:.1f} MiB" for k, v in parts.items())
          + f" (pack's limit {LIMIT_MIB:.0f} MiB, the tool's 64 counted differently: see LIMIT_MIB)")
    if whole <= LIMIT_MIB:
        print(f"one call: {whole:.1f} MiB fits: carry=[\".gpu-data\"]")
        return
    for name, nb in (("mnist", "02_fedsum_main"), ("fashion", "08_amplified_fedavg")):
        if name in parts:
            size = tree + parts[name]
            verdict = "fits" if size <= LIMIT_MIB else "does NOT fit: make the tree smaller"
            print(f"{whole:.1f} MiB together does not fit; the call of {nb}: {size:.1f} MiB {verdict}: "
                  f"carry=[\".gpu-data/{name}\"]")


def unpack(args) -> None:
    data = ROOT / "data"
    data.mkdir(exist_ok=True)
    if (PACK / "mnist" / "mnist.npz").exists():
        shutil.copyfile(PACK / "mnist" / "mnist.npz", data / "mnist.npz")
    raw = data / "FashionMNIST" / "raw"
    for f in FASHION:
        src = PACK / "fashion" / "FashionMNIST" / f"{f}.xz"
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
