"""The neural task: a network trained on a dataset split over clients, with per-client
minibatches keyed by (seed, client, round, step) (built by name in :mod:`fedlib.problems`)."""

from __future__ import annotations

import contextlib
import copy
import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from . import grouped, keyed, models
from ._threads import cpu_threads, map_single_threaded, worker_pool
from ._validate import InputError, check_int
from .data import content_digest
from .objectives import Problem, stream_seed

__all__ = ["Neural", "Split"]

# --------------------------------------------------------------------------------------------
# Neural problems
# --------------------------------------------------------------------------------------------
@dataclass
class Split:
    """Tensors of one dataset split (kept on the problem's device)."""

    x: torch.Tensor
    y: torch.Tensor


class Neural(Problem):
    """A neural network trained on data partitioned over clients, with vectorized gradients.

    The model's parameters are handled as one flat vector; ``grads`` evaluates the minibatch
    gradients of all requested clients at once with ``torch.func.vmap(grad(...))`` over the
    stacked flat parameters. Minibatch indices come from a ``torch.Generator`` keyed by
    (seed, client, round, step): ``min(batch_size, n_i)`` distinct samples of the client (as a
    data loader's last, short batch would be), padded with zero-weight entries so every
    client's batch stacks to the same shape. The global objective is the data-weighted mean
    loss over all clients' samples (w_i = n_i / n).

    Args:
        model: an ``nn.Module`` (its current parameters define ``initial_params``; buffers are
            not trained). Must not use BatchNorm running statistics.
        partition: sequence of N index arrays into the training split.
        train, test: (x, y) tensors of the training and test splits.
        batch_size: B.
        device: where data and parameters live.
        seed: seed of the minibatch streams.
        loss: per-sample loss ``(logits, y) -> [B]`` (default cross-entropy).
        eval_batch: samples per forward pass in evaluation (the default 512 evaluates FedSUM's
            MNIST CNN ~3x faster on one CPU thread than 4096, whose activations leave the cache).
        strategy: how ``grads`` batches clients: ``"vmap"`` (one ``vmap(grad)`` call over all
            clients), ``"loop"`` (``torch.func.grad`` client by client), or ``"auto"`` (default:
            vmap on GPUs, loop on CPUs, where vmap lowers convolutions to grouped convolutions
            that run slower than separate small ones; see ``benchmarks/README.md``).
        train_eval_per_client: training metrics (``loss``, ``train_acc``) are computed on a
            fixed, seeded subset of at most this many samples of each client, weighted by
            n_i / (n m_i) so that they estimate the data-weighted global objective without
            bias; ``None`` uses every training sample. The default (100) keeps one evaluation
            of FedSUM's MNIST setting (N = 100) at <= 10,000 training images plus the full test
            set, about 2 s on a 2-core CPU instead of ~12 s.
        test_eval_size: test metrics (``test_loss``, ``test_acc``) on a fixed, seeded random
            subset of this many test samples (for runs evaluated every round); ``None``
            (default) uses the whole test split.
        parallel_draws: with ``strategy="vmap"``, draw each step's keyed minibatches and
            dropout masks for all clients in :func:`fedlib._threads.cpu_threads` worker threads,
            and the next step's while the device computes this one (default False). The draws
            are CPU work (keyed ``torch.Generator`` streams, so that every device gets the same
            masks) that left a GPU mostly idle on FedSUM's MNIST CNN (measured in
            ``benchmarks/README.md``). Every draw is the same function of its key, and on the
            CPU the gradients agree bit for bit with the serial draws (``tests/test_tasks.py``);
            on a GPU that check is still open (``benchmarks/gpu_draws.py``), so the default
            stays off. Only with ``draws="legacy"``.
        draws: the draw scheme of minibatches and dropout masks (:data:`fedlib.keyed.DRAWS`):
            ``"legacy"`` (default; every store computed before keyed draws existed): a
            ``torch.Generator`` per client and step on the CPU, seeded through
            :func:`~fedlib.objectives.stream_seed`, its draws copied to the device client by
            client; ``"keyed"``: Threefry-2x32 counter-based draws (:mod:`fedlib.keyed`),
            computed for all clients of a step at once on the problem's device, the same bits on
            every device. A config names it as ``problem_args`` ``draws`` (see
            :meth:`set_draws`).

    Dropout: layers of type :class:`fedlib.models.KeyedDropout` take their masks from a
    generator keyed by (seed, client, round, step) (:meth:`dropout_masks`), like the minibatch,
    so a client's trajectory does not depend on the engine, on the order clients are trained in,
    or on threads. A plain ``nn.Dropout`` in a user's model would draw from torch's global
    generator instead.
    """

    exact = False

    has_module = True

    def threaded_clients(self, device: torch.device) -> bool:
        """On CPUs with ``strategy="loop"``: clients in worker threads (faster than vmap there)."""
        return self.strategy == "loop" and torch.device(device).type == "cpu"

    def __init__(self, model: nn.Module, partition: Sequence[np.ndarray], train: tuple, test: tuple,
                 batch_size: int = 128, device="cpu", seed: int = 0,
                 loss: Callable | None = None, eval_batch: int = 512, strategy: str = "auto",
                 train_eval_per_client: int | None = 100, test_eval_size: int | None = None,
                 parallel_draws: bool = False, draws: str = "legacy"):
        self.device = torch.device(device)
        if not isinstance(parallel_draws, bool):
            raise InputError(f"parallel_draws: must be True or False, got {parallel_draws!r}")
        self.parallel_draws = bool(parallel_draws)
        self._prefetched: tuple[tuple, list[Future]] | None = None
        if strategy not in ("auto", "vmap", "loop"):
            raise InputError(f"strategy: must be one of auto, vmap, loop; got {strategy!r}")
        self.strategy = strategy if strategy != "auto" else (
            "loop" if self.device.type == "cpu" else "vmap")
        self._threads = threading.local()
        self._copy_lock = threading.Lock()
        self.model = model.to(self.device)
        self.names = [n for n, _ in model.named_parameters()]
        self.shapes = [p.shape for _, p in model.named_parameters()]
        self.numels = [p.numel() for _, p in model.named_parameters()]
        self.dtype = next(model.parameters()).dtype
        self.dim = sum(self.numels)
        self.buffers = {n: b for n, b in model.named_buffers()}
        self.train, self.test = (Split(torch.as_tensor(s[0]).to(self.device),
                                       torch.as_tensor(s[1]).to(self.device)) for s in (train, test))
        self.partition = [torch.as_tensor(np.asarray(p), dtype=torch.long, device=self.device)
                          for p in partition]
        self.num_clients = len(self.partition)
        sizes = torch.tensor([len(p) for p in self.partition], dtype=torch.float64)
        if self.num_clients < 1 or (sizes == 0).any():
            raise InputError("partition: need at least one client and every client non-empty")
        self.sizes = sizes
        self.weights = (sizes / sizes.sum()).to(self.dtype).to(self.device)
        if train_eval_per_client is not None and (isinstance(train_eval_per_client, bool) or not isinstance(
                train_eval_per_client, int) or train_eval_per_client < 1):
            raise InputError(f"train_eval_per_client: must be a positive int or None, got "
                             f"{train_eval_per_client!r}")
        self.train_eval_per_client = train_eval_per_client
        batch_size = check_int("batch_size", batch_size, 1)
        self.batch_size, self.seed, self.eval_batch = int(batch_size), int(seed), int(eval_batch)
        self.per_sample_loss = loss or (lambda logits, y: nn.functional.cross_entropy(
            logits, y, reduction="none"))
        self._x0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
        self._grad = grad(self._batch_loss)
        self._vgrad = vmap(self._grad, in_dims=(0, 0, 0, 0, 0), randomness="error")
        self._drop_shapes: dict[int, list] = {}
        self._train_eval_idx, self._train_eval_w = self._train_eval_subset()
        n_test = len(self.test.y)
        if test_eval_size is not None and (isinstance(test_eval_size, bool) or not isinstance(
                test_eval_size, int) or not 1 <= test_eval_size):
            raise InputError(f"test_eval_size: must be a positive int or None, got {test_eval_size!r}")
        self.test_eval_size = test_eval_size
        if test_eval_size is None or test_eval_size >= n_test:
            self._test_idx = None
        else:
            rng = np.random.default_rng(stream_seed(self.seed, 0, 0xE7E5))
            self._test_idx = torch.as_tensor(np.sort(rng.choice(n_test, test_eval_size, replace=False)),
                                             device=self.device)
        self.draws = "legacy"
        self.set_draws(draws)

    def set_draws(self, draws: str) -> None:
        """Use the draw scheme ``draws`` (see the class docstring) from now on; with ``"keyed"``
        the partition is also kept as one padded [N, W] index tensor on the device (W = max(n_i,
        B)), so a step's samples are gathered without a copy from the host."""
        if draws not in keyed.DRAWS:
            raise InputError(f"draws: must be one of {', '.join(keyed.DRAWS)}; got {draws!r}")
        if draws == "keyed" and self.parallel_draws:
            raise InputError("parallel_draws: keyed draws are computed for all clients of a step at once; "
                             "parallel_draws=True is for draws='legacy' only")
        self.draws = draws
        if draws != "keyed":
            return
        sizes = [len(p) for p in self.partition]
        self._width = max(max(sizes), self.batch_size)
        pad = torch.zeros(self.num_clients, self._width, dtype=torch.long, device=self.device)
        for i, p in enumerate(self.partition):
            pad[i, :len(p)] = p
        self._part_pad = pad
        self._sizes_np = np.asarray(sizes, dtype=np.int64)
        self._sizes_dev = torch.as_tensor(self._sizes_np, device=self.device)
        #: numpy uint32 arithmetic on CPUs (fast), torch int64 tensors elsewhere: the same bits
        self._keyed_numpy = self.device.type == "cpu"

    def _train_eval_subset(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Indices and weights of the training-metric subset (see ``train_eval_per_client``)."""
        m, n = self.train_eval_per_client, float(self.sizes.sum())
        idx, w = [], []
        for i, part in enumerate(self.partition):
            k = len(part) if m is None else min(m, len(part))
            if k < len(part):
                rng = np.random.default_rng(stream_seed(self.seed, i, 0xE7A1))
                pick = torch.as_tensor(np.sort(rng.choice(len(part), k, replace=False)),
                                       device=self.device)
                part = part[pick]
            idx.append(part)
            w.append(torch.full((k,), float(self.sizes[i]) / (n * k), dtype=torch.float64))
        return torch.cat(idx), torch.cat(w).to(self.device)
    # -- flat <-> dict ----------------------------------------------------------------------
    def unflatten(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Parameter dict of a flat vector [p]."""
        return {n: t.view(s) for n, t, s in zip(self.names, x.split(self.numels), self.shapes,
                                                 strict=True)}

    def initial_params(self, seed: int = 0) -> torch.Tensor:
        return self._x0.clone()

    # -- minibatches --------------------------------------------------------------------------
    def sample_indices(self, client: int, round: int, step: int) -> torch.Tensor:
        """Indices [m] of client's minibatch at (round, step): m = min(batch_size, n_i) distinct
        samples of the client, from a generator keyed by (seed, client, round, step)."""
        part = self.partition[client]
        if self.draws == "keyed":
            idx = self._keyed_draws([client], round, step, rows=0)[0]
            return idx[0, :min(self.batch_size, len(part))]
        g = torch.Generator().manual_seed(stream_seed(self.seed, client, round, step))
        m = min(self.batch_size, len(part))
        return part[torch.randperm(len(part), generator=g)[:m].to(self.device)]

    def batch_indices(self, client: int, round: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(indices [B], weights [B]) of client's minibatch at (round, step): the ``m`` samples of
        :meth:`sample_indices`, padded with zero-weight copies to B so that clients stack."""
        if self.draws == "keyed":
            idx, w = self._keyed_draws([client], round, step, rows=0)[:2]
            return idx[0], w[0]
        idx = self.sample_indices(client, round, step)
        m = len(idx)
        w = torch.ones(self.batch_size, dtype=self.dtype, device=self.device)
        if m < self.batch_size:
            idx = torch.cat([idx, idx[:1].expand(self.batch_size - m)])
            w[m:] = 0
        return idx, w

    def dropout_masks(self, client: int, round: int, step: int, pad_to: int | None = None
                      ) -> tuple[torch.Tensor, ...]:
        """The scaled masks of every KeyedDropout call of the model on client's minibatch at
        (round, step) (m = min(batch_size, n_i) samples), from a generator keyed by
        (seed, client, round, step), drawn on the CPU so every device gets the same masks.
        ``pad_to`` appends zero rows up to that batch size (for the padded vmap batch)."""
        m = min(self.batch_size, len(self.partition[client]))
        if self.draws == "keyed":
            masks = self._keyed_draws([client], round, step, rows=m)[2]
            pad = 0 if pad_to is None else max(pad_to - m, 0)
            return tuple(torch.cat([mk[0], mk.new_zeros((pad, *mk.shape[2:]))]) if pad else mk[0]
                         for mk in masks)
        shapes = self._dropout_shapes(m)
        if not shapes:
            return ()
        g = torch.Generator().manual_seed(stream_seed(self.seed, client, round, step, 0xD0))
        masks = []
        for shape, p in shapes:
            mk = (torch.rand(shape, generator=g, dtype=self.dtype) >= p).to(self.dtype) / (1.0 - p)
            if pad_to is not None and pad_to > m:
                mk = torch.cat([mk, mk.new_zeros((pad_to - m, *shape[1:]))])
            masks.append(mk.to(self.device))
        return tuple(masks)

    def _dropout_shapes(self, m: int) -> list:
        """(shape, p) of the model's KeyedDropout calls on a batch of m samples (cached)."""
        if m not in self._drop_shapes:
            with self._copy_lock:
                self._drop_shapes[m] = models.dropout_shapes(
                    copy.deepcopy(self.model), (m, *self.train.x.shape[1:]), self.dtype, self.device)
        return self._drop_shapes[m]

    def _keyed_draws(self, clients, round: int, step: int, rows: int | None = None,
                     compiled: bool | str = False, grouped_layout: bool = False) -> tuple:
        """Keyed draws (:mod:`fedlib.keyed`) of ``clients`` (a list of ints or an int64 tensor)
        at (round, step), all at once: (indices [S, B] into the training split, weights [S, B],
        dropout masks, each [S, rows, ...] with zero rows past each client's m; ``rows``
        defaults to B). ``compiled``: :func:`fedlib.keyed.step_draws`' (the device path's; the
        CPU's numpy path has nothing to compile). ``grouped_layout``: the masks of
        convolutional layers ([S, rows, C, H, W]) come laid out as :mod:`fedlib.grouped`'s
        activations, (rows, S x C, H, W), the same values.

        A mask is ``1 / (1 - p)`` where an element is kept and its row is live, else 0, written
        by one ``where`` in its layout (the same bits as converting the keep flags, scaling and
        multiplying by the rows' liveness, in one pass instead of three and a copy)."""
        B = self.batch_size
        rows = B if rows is None else int(rows)
        shapes = self._dropout_shapes(B) if rows else []
        if self._keyed_numpy:
            c = (clients.numpy() if isinstance(clients, torch.Tensor) else np.asarray(clients)
                 ).astype(np.int64).reshape(-1)
            pos, m = keyed.minibatch_positions(self.seed, c, self._sizes_np[c], round, step, B)
            c_t, pos, m = torch.from_numpy(c), torch.from_numpy(pos), torch.from_numpy(m)
            c_t, pos, m = c_t.to(self.device), pos.to(self.device), m.to(self.device)
            keeps = None
        else:                        # one fused call for the step (keyed.step_draws), no host read
            c_t = torch.as_tensor(clients, dtype=torch.long, device=self.device).reshape(-1)
            layers = [(rows * int(np.prod(tuple(shape[1:]), dtype=np.int64)), p) for shape, p in shapes]
            pos, m, keeps = keyed.step_draws(self.seed, c_t, self._sizes_dev[c_t], round, step, B,
                                             self._width, layers, compiled=compiled)
        idx = self._part_pad[c_t[:, None], pos]
        live = torch.arange(B, device=self.device)[None, :] < m[:, None]
        w = live.to(self.dtype)
        masks = []
        # rows past a client's m are zero; on the numpy path only when some client has m < rows
        short = not self._keyed_numpy or bool((m < rows).any())
        row_live = torch.arange(rows, device=self.device)[None, :] < m[:, None] if short and shapes else None
        zero = torch.zeros((), dtype=self.dtype, device=self.device)
        for layer, (shape, p) in enumerate(shapes):
            rest = tuple(shape[1:])
            if keeps is None:
                n = rows * int(np.prod(rest, dtype=np.int64))
                keep = torch.from_numpy(keyed.dropout_keep(self.seed, c, round, step, layer, n, p))
                keep = keep.to(self.device)
            else:
                keep = keeps[layer]
            scale = torch.ones((), dtype=self.dtype, device=self.device) / (1.0 - p)   # 1 / (1 - p)
            if row_live is not None:                # scale on live rows, 0 on padding [S, rows, 1...]
                scale = torch.where(row_live, scale, zero).reshape(len(c_t), rows, *([1] * len(rest)))
            keep = keep.reshape(len(c_t), rows, *rest)
            if grouped_layout and len(rest) == 3:
                out = torch.empty((rows, len(c_t), *rest), dtype=self.dtype, device=self.device)
                by_row = scale if row_live is None else scale.movedim(0, 1)     # [rows, S, 1, 1, 1]
                torch.where(keep.movedim(0, 1), by_row, zero, out=out)
                masks.append(out.reshape(rows, len(c_t) * rest[0], *rest[1:]))
            else:
                masks.append(torch.where(keep, scale, zero))
        return idx, w, tuple(masks)

    def _batch_loss(self, flat, xb, yb, wb, masks=()):
        with models.dropout_masks(masks):
            out = functional_call(self._model(), (self.unflatten(flat), self.buffers), (xb,))
        return (self.per_sample_loss(out, yb) * wb).sum() / wb.sum()

    @contextlib.contextmanager
    def thread_model(self):
        """Within the block, :meth:`grad_one` of this thread uses the thread's own copy of the
        model (``functional_call`` swaps a module's parameters while it runs, so threads must
        not share one). The main thread uses ``self.model``."""
        if threading.current_thread() is not threading.main_thread():
            if getattr(self._threads, "model", None) is None:
                with self._copy_lock:
                    self._threads.model = copy.deepcopy(self.model)
            self._threads.model.train(self.model.training)
        yield

    def _model(self) -> nn.Module:
        """This thread's model: its copy in a worker thread, ``self.model`` otherwise."""
        m = getattr(self._threads, "model", None)
        return self.model if m is None else m

    def grad_one(self, x: torch.Tensor, client: int, round: int = 0, step: int = 0) -> torch.Tensor:
        """Minibatch gradient [p] of one client at one point, by plain autograd on the flat
        parameter vector over the client's own (unpadded) batch: the CPU engine's path. The
        loss, samples and dropout masks are those of :meth:`grads`."""
        if self.draws == "keyed":                     # one keyed draw: samples and masks together
            m = min(self.batch_size, len(self.partition[client]))
            idx, _, masks = self._keyed_draws([client], round, step, rows=m)
            idx, masks = idx[0, :m], tuple(mk[0] for mk in masks)
        else:
            idx = self.sample_indices(client, round, step)
            masks = self.dropout_masks(client, round, step)
        leaf = x.detach().requires_grad_(True)
        xb = self.train.x[idx]
        with torch.enable_grad(), models.dropout_masks(masks):
            out = functional_call(self._model(), (self.unflatten(leaf), self.buffers), (xb,))
            loss = self.per_sample_loss(out, self.train.y[idx]).mean()
            (g,) = torch.autograd.grad(loss, leaf)
        return g

    @property
    def compiles_draws(self) -> bool:
        """Whether :meth:`grads`' ``compiled_draws`` changes how its draws are computed: keyed
        draws of the vmap strategy on a device other than the CPU (whose numpy draws have no
        tensor operations to compile)."""
        return self.draws == "keyed" and self.strategy == "vmap" and not self._keyed_numpy

    @property
    def lays_out_clients(self) -> bool:
        """Whether :meth:`grads`' ``clients_innermost`` changes how its minibatch gradients are
        computed: the vmap strategy, whose step stacks the clients' minibatches into one tensor
        (full-batch gradients are computed client by client, without it)."""
        return self.strategy == "vmap"

    @property
    def groups_layers(self) -> bool:
        """Whether :meth:`grads`' ``grouped_layout`` applies: the vmap strategy and a model
        :func:`fedlib.grouped.supports` (a ``SimpleCNN`` without buffers)."""
        return self.strategy == "vmap" and grouped.supports(self.model, dict(self.buffers))

    def _gradient_fn(self, grouped_layout: bool):
        """The step's gradient function: the vmapped one, or (``grouped_layout``) the same
        gradients in the grouped layout (:func:`fedlib.grouped.grouped_vgrad`, built once)."""
        if not grouped_layout:
            return self._vgrad
        if not self.groups_layers:
            raise InputError(f"grouped_layout: needs the vmap strategy and a SimpleCNN without buffers "
                             f"(strategy {self.strategy!r}, model {type(self.model).__name__})")
        if "_grouped" not in self.__dict__:
            self._grouped = grouped.grouped_vgrad(self)
        return self._grouped

    def _stacked(self, idx: torch.Tensor, clients_innermost: bool,
                 grouped_layout: bool = False) -> torch.Tensor:
        """The clients' minibatches ``train.x[idx]`` [S, B, ...]; with ``clients_innermost`` the
        same values laid out in memory with the client index innermost (strides (1, ...));
        otherwise with ``grouped_layout`` laid out batch-major, (B, S, ...) in memory, which
        :mod:`fedlib.grouped` views as its first activation (B, S x channels, H, W) without a copy.

        Under ``vmap`` a convolution of per-client weights runs as one grouped convolution whose
        channels are the clients' (``torch.func``'s batching rule moves the client dimension
        into the channels); for a first layer of one input channel (MNIST's CNNs) that is the
        depthwise shape, which torch computes on CUDA in its own depthwise kernels unless the
        input is channels-last, when it calls cuDNN. With the clients innermost the grouped
        convolution's input is channels-last (``tests/test_engine.py`` checks the strides that
        reach ``aten.convolution``). Another kernel computes the same sums, so a run's last bits
        change (the entry records the engine's choice); the values are equal."""
        if clients_innermost:
            return self.train.x[idx].movedim(0, -1).contiguous().movedim(-1, 0)
        if grouped_layout:
            return self.train.x[idx.t().contiguous()].transpose(0, 1)
        return self.train.x[idx]

    def grads(self, X, clients, round=0, step=0, stochastic=True, *, compiled_draws: bool | str = False,
              clients_innermost: bool = False, grouped_layout: bool = False):
        """Minibatch gradients [S, p] (see :class:`~fedlib.objectives.Problem`); ``compiled_draws``
        (where :attr:`compiles_draws`): the step's keyed draws by a ``torch.compile``'d
        :func:`fedlib.keyed.step_draws` (its ``compiled``: the same bits, fewer kernels);
        ``clients_innermost`` (where :attr:`lays_out_clients`): the stacked minibatches laid out
        with the client index innermost (:meth:`_stacked`: another arithmetic on CUDA);
        ``grouped_layout`` (where :attr:`groups_layers`): the gradients computed in the grouped
        layout (:mod:`fedlib.grouped`: bit-equal on CPUs, checked on each GPU model)."""
        vgrad = self._gradient_fn(grouped_layout)           # refuses a problem it does not apply to
        if not stochastic:
            return torch.stack([self._client_full_grad(x, int(c)) for x, c in zip(X, clients, strict=True)])
        self.model.train()
        if self.draws == "keyed" and self.strategy == "vmap":      # on the device, no host read
            idx, w, stacked = self._keyed_draws(clients, round, step, compiled=compiled_draws,
                                                grouped_layout=grouped_layout)
            xb = self._stacked(idx, clients_innermost, grouped_layout)
            return vgrad(X, xb, self.train.y[idx], w, stacked)
        clients = [int(c) for c in clients]
        if self.strategy == "loop":
            return torch.stack([self.grad_one(X[s], c, round, step) for s, c in enumerate(clients)])
        draws = self._step_draws(clients, round, step)
        idx = torch.stack([d[0] for d in draws])
        w = torch.stack([d[1] for d in draws])
        masks = [d[2] for d in draws]
        xb, yb = self._stacked(idx, clients_innermost, grouped_layout), self.train.y[idx]
        stacked = tuple(torch.stack(m) for m in zip(*masks, strict=True)) if masks[0] else ()
        return vgrad(X, xb, yb, w, stacked)

    def graphed_grads(self, X: torch.Tensor, clients: torch.Tensor, round: int, step: int, *,
                      compiled_draws: bool | str = False, clients_innermost: bool = False,
                      grouped_layout: bool = False) -> torch.Tensor:
        """:meth:`grads` (stochastic), replayed from a CUDA graph captured at the first call for
        each number of rows S (``torch.cuda.graphs``): on a CUDA device with keyed draws and the
        vmap strategy, where nothing in a step reads the host (``round`` and ``step`` enter as
        device scalars). Elsewhere it is :meth:`grads` itself (tested equal on the CPU); on a
        GPU, ``benchmarks/gpu_check.py`` compares the replay with :meth:`grads` bit for bit.
        ``compiled_draws``, ``clients_innermost`` and ``grouped_layout`` as :meth:`grads`' (a graph
        per S and choices: the compiled kernels are captured)."""
        opts = {"compiled_draws": compiled_draws, "clients_innermost": clients_innermost,
                "grouped_layout": grouped_layout}
        if self.device.type != "cuda" or self.draws != "keyed" or self.strategy != "vmap":
            return self.grads(X, clients, round, step, **opts)
        graphs = self.__dict__.setdefault("_graphs", {})
        S = X.shape[0]
        key = (S, compiled_draws, clients_innermost, grouped_layout)
        if key not in graphs:
            ins = (X.clone(), torch.as_tensor(clients, device=self.device).clone(),
                   torch.zeros((), dtype=torch.long, device=self.device),
                   torch.zeros((), dtype=torch.long, device=self.device))
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):                           # warm-up: caches, cuDNN's choices, compilation
                    self.grads(*ins, **opts)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = self.grads(*ins, **opts)
            graphs[key] = (graph, ins, out)
        graph, ins, out = graphs[key]
        ins[0].copy_(X)
        ins[1].copy_(torch.as_tensor(clients, device=self.device))
        ins[2].fill_(int(round))
        ins[3].fill_(int(step))
        graph.replay()
        return out.clone()

    def _client_draws(self, client: int, round: int, step: int) -> tuple:
        """(indices [B], weights [B], padded dropout masks) of client's minibatch at (round, step)."""
        return (*self.batch_indices(client, round, step),
                self.dropout_masks(client, round, step, pad_to=self.batch_size))

    def _step_draws(self, clients: list[int], round: int, step: int) -> list[tuple]:
        """:meth:`_client_draws` of every client of a vmap step; with :attr:`parallel_draws`, in
        the pool, and the same clients' next step starts drawing before this one returns (a guess
        keyed by (clients, round, step): a call that asks for anything else draws afresh)."""
        if not self.parallel_draws:
            return [self._client_draws(c, round, step) for c in clients]
        pool, key = worker_pool(cpu_threads()), (tuple(clients), round, step)
        ahead, self._prefetched = self._prefetched, None
        if ahead is not None and ahead[0] == key:
            futures = ahead[1]
        else:
            futures = [pool.submit(self._client_draws, c, round, step) for c in clients]
        draws = [f.result() for f in futures]
        self._prefetched = ((key[0], round, step + 1),
                            [pool.submit(self._client_draws, c, round, step + 1) for c in clients])
        return draws

    def client_grad(self, x, client, round=0, step=0, stochastic=True):
        """Plain autograd on an ``nn.Module`` copy: the reference for tests."""
        if not stochastic:
            return self._client_full_grad(x, client)
        idx, w = self.batch_indices(client, round, step)
        self.model.train()
        params = {n: t.clone().requires_grad_(True) for n, t in self.unflatten(x).items()}
        with models.dropout_masks(self.dropout_masks(client, round, step, pad_to=len(idx))):
            out = functional_call(self.model, (params, self.buffers), (self.train.x[idx],))
        loss = (self.per_sample_loss(out, self.train.y[idx]) * w).sum() / w.sum()
        gs = torch.autograd.grad(loss, [params[n] for n in self.names])
        return torch.cat([g.reshape(-1) for g in gs])

    def _client_full_grad(self, x, client):
        """Full local gradient in evaluation mode (no dropout: a deterministic gradient)."""
        idx = self.partition[client]
        w = torch.ones(len(idx), dtype=self.dtype, device=self.device)
        model = self._model()                 # this thread's copy in the CPU engine's workers
        was = model.training
        model.eval()
        try:
            return grad(self._batch_loss)(x, self.train.x[idx], self.train.y[idx], w)
        finally:
            model.train(was)

    # -- evaluation -----------------------------------------------------------------------------
    @torch.no_grad()
    def _evaluate(self, x: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor,
                  weights: torch.Tensor | None = None) -> tuple[float, float]:
        """(weighted mean loss, weighted accuracy) of ``x`` on samples (xs, ys); weights sum
        to 1 (default uniform). Each batch of ``eval_batch`` samples is evaluated with one intra-op
        thread (on a CPU in worker threads, each with its own model copy, as clients train) and the
        batches are summed in order, so a history's bits do not depend on the computing process's
        thread count, nor on how many workers share the batches."""
        self.model.eval()
        params = self.unflatten(x)

        @torch.no_grad()
        def batch(s: int) -> tuple[float, float]:
            with self.thread_model():
                xb, yb = xs[s:s + self.eval_batch], ys[s:s + self.eval_batch]
                out = functional_call(self._model(), (params, self.buffers), (xb,))
                loss, hit = self.per_sample_loss(out, yb).double(), (out.argmax(1) == yb).double()
                if weights is None:
                    return float(loss.sum()), float(hit.sum())
                w = weights[s:s + self.eval_batch]
                return float(w @ loss), float(w @ hit)
        starts = range(0, len(ys), self.eval_batch)
        try:
            if self.device.type == "cpu":
                parts = map_single_threaded(batch, starts)
            else:
                parts = [batch(s) for s in starts]
        finally:
            self.model.train()
        total, correct = 0.0, 0.0
        for loss_sum, hit_sum in parts:                   # in order: the same sums as one loop
            total, correct = total + loss_sum, correct + hit_sum
        return (total / len(ys), correct / len(ys)) if weights is None else (total, correct)

    def loss(self, x):
        """Data-weighted training loss (on the evaluation subset, see ``train_eval_per_client``)."""
        return self._train_metrics(x)[0]

    def _train_metrics(self, x):
        idx = self._train_eval_idx
        return self._evaluate(x, self.train.x[idx], self.train.y[idx], self._train_eval_w)

    def metrics(self, x):
        train_loss, train_acc = self._train_metrics(x)
        tx, ty = (self.test.x, self.test.y) if self._test_idx is None else (
            self.test.x[self._test_idx], self.test.y[self._test_idx])
        test_loss, test_acc = self._evaluate(x, tx, ty)
        return {"loss": train_loss, "train_acc": train_acc, "test_loss": test_loss,
                "test_acc": test_acc}

    def __repr__(self) -> str:
        names = getattr(self, "names_spec", {})
        model = names.get("model", type(self.model).__name__)
        return (f"Neural(dataset={names.get('dataset', '?')!r}, model={model!r}, "
                f"partition={names.get('partition', '?')!r}, N={self.num_clients}, p={self.dim:,}, "
                f"batch_size={self.batch_size}, device={str(self.device)!r})")

    @functools.cached_property
    def data_digests(self) -> dict[str, str]:
        """The content digest of the data it computes on (:func:`fedlib.data.content_digest` of
        its training and test splits, equal to the loaded :attr:`fedlib.data.Dataset.digest`), by
        the dataset's name; computed once, when a run first records it. A synthetic stand-in's
        (``synthetic=True``) is recorded under the dataset's name too: the content it computed on
        (``verify`` says the stand-in changed, not the files)."""
        name = getattr(self, "names_spec", {}).get("dataset", "data")
        return {name: content_digest((self.train.x, self.train.y), (self.test.x, self.test.y))}

    def spec(self):
        return {**super().spec(), "model": type(self.model).__name__, "batch_size": self.batch_size,
                "seed": self.seed, "train_eval_per_client": self.train_eval_per_client,
                **({"draws": self.draws} if self.draws != "legacy" else {}),
                **({"test_eval_size": self.test_eval_size} if self.test_eval_size is not None else {}),
                **getattr(self, "names_spec", {})}



from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
