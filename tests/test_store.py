"""fedlib.store: entries on disk, bad stores and bad entries, reading a store back."""


import pandas as pd
import pytest

import fedlib
from fedlib.store import Store

from .run_helpers import base_config as _base
from .run_helpers import no_timing as _no_timing


def test_unwritable_store_fails_at_once_with_its_path(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match=rf"^store: cannot write to {blocker}/sub"):
        fedlib.sweep([_base()], blocker / "sub", progress=False)



def test_corrupt_entries_are_reported_by_name_and_recomputed(tmp_path):
    c = _base()
    fedlib.sweep([c], tmp_path, progress=False)
    path = tmp_path / c.key() / "history.csv"
    good = path.read_text()
    path.write_text(good[: len(good) // 2])                    # truncated: no longer its sealed digest
    with pytest.warns(RuntimeWarning, match=rf"edited entry {tmp_path / c.key()}: history.csv was edited"):
        df = fedlib.sweep([c], tmp_path, progress=False)
    assert path.read_text().count("\n") == good.count("\n") and len(df) == 13
    (tmp_path / c.key() / "meta.json").write_text("{not json")             # unparsable meta.json
    with pytest.warns(RuntimeWarning, match=rf"unreadable entry {tmp_path / c.key()}: JSONDecodeError"):
        fedlib.sweep([c], tmp_path, progress=False)
    (tmp_path / c.key() / "meta.json").unlink()                # incomplete
    with pytest.warns(RuntimeWarning, match="incomplete entry"):
        fedlib.sweep([c], tmp_path, progress=False)
    assert Store(tmp_path).get(c) is not None



def test_load_reads_a_store_into_the_sweep_frame_without_computing(tmp_path):
    a, b = _base(rounds=3), _base(rounds=3, seed=1)
    computed = fedlib.sweep([a, b], tmp_path, progress=False)
    every = fedlib.load(tmp_path)                                  # every entry, in key order
    assert set(every["key"]) == {a.key(), b.key()}
    one = fedlib.load(tmp_path, b)
    pd.testing.assert_frame_equal(_no_timing(one).reset_index(drop=True),
                                  _no_timing(computed[computed["key"] == b.key()]).reset_index(drop=True))
    with pytest.raises(ValueError, match=r"^store: .* lacks 1 of 1 runs"):
        fedlib.load(tmp_path, _base(rounds=3, seed=2))
