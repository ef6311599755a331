"""A Dask nanny preload that starts fedlib's workers with :data:`fedlib.sweeps.DASK_WORKER_ENV`,
for workers started from the command line::

    dask worker tcp://scheduler:8786 --nthreads 1 --preload-nanny fedlib.dask_preload

Dask's nanny spawns each worker process with ``distributed.nanny.pre-spawn-environ``, whose
default sets ``MALLOC_TRIM_THRESHOLD_=65536``: glibc then stops adapting its mmap threshold, and
torch's CPU training runs about 2x slower (``benchmarks/README.md``). A client's
``dask.config.set`` does not reach workers started elsewhere, and Dask's environment variables
*merge* into that default, so they cannot remove the setting (a YAML file of the workers' Dask
configuration can: ``MALLOC_TRIM_THRESHOLD_: null``); this preload runs in the nanny before it
spawns the worker and *replaces* the whole setting, as ``dask.config.set`` does in the README's
``LocalCluster`` recipe. Each entry's ``meta.json`` records the worker's
``malloc_trim_threshold`` (None: not set).
"""

from __future__ import annotations

import dask

from .sweeps import DASK_WORKER_ENV

dask.config.set({"distributed.nanny.pre-spawn-environ": dict(DASK_WORKER_ENV)})
