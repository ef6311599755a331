"""Local training of all active clients at once, and a plain per-client reference loop.

Both engines run, for clients ``clients`` [S] starting from ``X0`` [S, p]::

    for k in range(max(steps)):
        G = grad f_{client}(X_k; xi_{client, round, k})        # problem.grads, [S, p]
        X_{k+1} = X_k - lr * mask_k * (G + correction)         # mask_k = (k < steps_s)

with an optional per-client ``correction`` [S, p] (SCAFFOLD's c - c_i, FedSUM's y_i, ...), a
per-client step count (a client with fewer steps stops moving: its later rows are masked), and
``grads_at_start=True`` for algorithms that take all K minibatch gradients at the starting point
(FedSUM-B). ``lr`` is a scalar or a per-client tensor [S]. Two local solvers beyond plain SGD
(FedNova / FedACS): heavy-ball ``momentum`` rho (buffer b <- rho b + d, x <- x - lr b, as
``torch.optim.SGD``) and a FedProx term ``prox_mu`` (d = g + correction + mu (x - x_start)).
``full_batch=True`` asks the problem for full local gradients instead of minibatches.

* :class:`VectorizedEngine` asks the problem for all S gradients at once: ``torch.func.vmap``
  over stacked flat parameters for neural problems, batched matrix products for quadratics.
* :class:`ReferenceEngine` loops over clients in Python: for neural problems an ``nn.Module``
  with ``torch.optim.SGD``; for closed-form problems the client's gradient written plainly. It is
  slow on purpose and exists so tests can check the vectorized engine against it.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import torch

from . import keyed
from ._threads import cpu_threads, map_single_threaded
from ._validate import InputError
from .models import dropout_masks
from .problems import Problem

__all__ = ["GRAPHS_ENV", "LocalResult", "ReferenceEngine", "UnreachableClients", "VectorizedEngine",
           "cpu_threads", "get_engine"]


@dataclass
class LocalResult:
    """Outcome of local training.

    Attributes:
        X: final local models [S, p].
        grad_sum: sum over each client's own steps of the gradients it computed [S, p] (None
            from a Flower engine whose clients send their local model only).
    """

    X: torch.Tensor
    grad_sum: torch.Tensor | None


class UnreachableClients(RuntimeError):
    """Raised by an engine whose clients are remote (:class:`fedlib.flower.FlowerEngine`) when
    some did not answer in time: :func:`fedlib.run` then runs the round again with their uploads
    counted as failed (the schedule's ``uplink_ok`` False for them in that round).

    Attributes:
        round: the round.
        clients: the fedlib indices of the clients that did not answer.
    """

    def __init__(self, round: int, clients):
        self.round, self.clients = int(round), sorted(int(c) for c in clients)
        super().__init__(f"round {self.round}: no answer from client(s) {self.clients}")


def _per_client(value, S: int, ref: torch.Tensor) -> torch.Tensor:
    t = torch.as_tensor(value, dtype=ref.dtype, device=ref.device)
    return t.expand(S) if t.ndim == 0 else t


class VectorizedEngine:
    """All active clients step together (see module docstring).

    Where the problem asks for it (:meth:`~fedlib.problems.Problem.threaded_clients`: a neural
    problem on a CPU with ``strategy="loop"``) the clients
    instead run one by one, each its whole K steps with one intra-op thread, spread over
    :func:`cpu_threads` worker threads (each with its own copy of the model). The clients of a
    round are independent and their minibatches and dropout masks are keyed, so the result
    is the same whatever the number of threads or the order clients finish in.
    """

    name = "vectorized"

    def __init__(self, graphs: bool = False, compiled_draws: bool | str = False,
                 clients_innermost: bool = False, grouped_layout: bool = False):
        for name, flag in (("graphs", graphs), ("clients_innermost", clients_innermost),
                           ("grouped_layout", grouped_layout)):
            if not isinstance(flag, bool):
                raise InputError(f"{name}: must be True or False, got {flag!r}")
        if not isinstance(compiled_draws, (bool, str)) or compiled_draws not in keyed.COMPILED:
            raise InputError(f"compiled_draws: must be one of {', '.join(map(repr, keyed.COMPILED))}, "
                             f"got {compiled_draws!r}")
        #: take minibatch gradients through the problem's ``graphed_grads`` (a CUDA graph per
        #: step shape where the problem can capture one, its plain ``grads`` elsewhere): the
        #: same bits as plain steps (``benchmarks/gpu_check.py`` checks it on each GPU model)
        self.graphs = graphs
        #: compute each step's keyed draws with ``torch.compile`` where the problem can
        #: (``problem.compiles_draws``: keyed draws of the vmap strategy off the CPU): True compiles
        #: :func:`fedlib.keyed.step_draws` whole, "threefry" its generator only. The same bits as
        #: plain draws (``tests/test_keyed.py``; ``benchmarks/gpu_check.py`` on each GPU model);
        #: like ``graphs``, how the same numbers are computed: no config key changes
        self.compiled_draws = compiled_draws
        #: lay each step's stacked minibatches out with the client index innermost, where the
        #: problem stacks them (``problem.lays_out_clients``: the vmap strategy): on CUDA the first
        #: convolution of a one-channel CNN then runs in cuDNN instead of torch's depthwise
        #: kernels (:meth:`fedlib.tasks.Neural._stacked`). Unlike ``graphs`` and
        #: ``compiled_draws`` another arithmetic: the same values, other last bits; recorded,
        #: like them, in an entry's ``meta.json`` (``engine``)
        self.clients_innermost = clients_innermost
        #: compute a step's minibatch gradients in the grouped layout, where the problem can
        #: (``problem.groups_layers``: the vmap strategy and a ``SimpleCNN``): the convolutional
        #: blocks on (batch, clients x channels, H, W) tensors, without the copies and strided
        #: kernels vmap's layout costs (:mod:`fedlib.grouped`). Bit-equal to the vmap path on
        #: CPUs; counted with the options that change the arithmetic until a GPU model's check
        #: shows it bit-equal there too, so an entry records it and a replay takes it
        self.grouped_layout = grouped_layout

    def __repr__(self) -> str:
        more = f", compiled_draws={self.compiled_draws!r}" if self.compiled_draws else ""
        more += ", clients_innermost=True" if self.clients_innermost else ""
        more += ", grouped_layout=True" if self.grouped_layout else ""
        return f"VectorizedEngine(graphs={self.graphs}{more})"

    #: the options that change a run's arithmetic (other kernels, other last bits), as opposed to
    #: ``graphs`` and ``compiled_draws``, which give the plain path's bits: a checkpoint records them
    #: (``runner.checkpoint_arithmetic``) and a replay takes them (``verification.replay_engine``)
    ARITHMETIC = ("clients_innermost", "grouped_layout")

    @property
    def arithmetic(self) -> tuple[str, ...]:
        """The options of :data:`ARITHMETIC` this engine has on."""
        return tuple(name for name in self.ARITHMETIC if getattr(self, name))

    def arithmetic_of(self, problem: Problem) -> tuple[str, ...]:
        """The options of :attr:`arithmetic` that ``problem`` takes (:meth:`_options`): a problem
        that ignores one (e.g. ``grouped_layout`` for a model other than a ``SimpleCNN``) computes
        with the arithmetic it has without it, so its checkpoint does not record it
        (``runner.checkpoint_arithmetic``)."""
        taken = self._options(problem)
        return tuple(name for name in self.arithmetic if name in taken)

    def _options(self, problem: Problem) -> dict:
        """The keywords of ``problem.grads`` this engine's options set, for the problems that take
        them (``compiles_draws``, ``lays_out_clients``, ``groups_layers``)."""
        opts = {}
        if self.compiled_draws and getattr(problem, "compiles_draws", False):
            opts["compiled_draws"] = self.compiled_draws
        if self.clients_innermost and getattr(problem, "lays_out_clients", False):
            opts["clients_innermost"] = True
        if self.grouped_layout and getattr(problem, "groups_layers", False):
            opts["grouped_layout"] = True
        return opts

    def local_sgd(self, problem: Problem, X0: torch.Tensor, clients: torch.Tensor,
                  steps: torch.Tensor, lr, round: int, correction: torch.Tensor | None = None,
                  grads_at_start: bool = False, momentum: float = 0.0, prox_mu: float = 0.0,
                  full_batch: bool = False) -> LocalResult:
        args = (round, correction, grads_at_start, momentum, prox_mu, full_batch)
        if problem.threaded_clients(X0.device):
            return self._threaded(problem, X0, clients, steps, lr, *args)
        return self._lockstep(problem, X0, clients, steps, lr, *args, graphs=self.graphs,
                              options=self._options(problem))

    @staticmethod
    def _lockstep(problem, X0, clients, steps, lr, round, correction, grads_at_start, momentum, prox_mu,
                  full_batch, graphs: bool = False, options: dict | None = None) -> LocalResult:
        """The rows of X0 step together: k-th step of every live client at once. The step counts
        are read to the host once per round (not once per step), so a step on a GPU waits for
        nothing on the host."""
        S = X0.shape[0]
        steps_h = [int(v) for v in torch.as_tensor(steps).tolist()]
        lr_s = _per_client(lr, S, X0)[:, None]
        X = X0.clone()
        gsum = torch.zeros_like(X0)
        buf = torch.zeros_like(X0)
        options = options or {}      # only problems that take a keyword get it (VectorizedEngine._options)
        grads = functools.partial(problem.grads, **options) if options else problem.grads
        if graphs and not full_batch and hasattr(problem, "graphed_grads"):
            def grads(X, clients, round, step, stochastic):     # noqa: ARG001 - stochastic only
                return problem.graphed_grads(X, clients, round, step, **options)
        for k in range(max(steps_h) if S else 0):
            live = [i for i, n in enumerate(steps_h) if k < n]  # clients with fewer steps stop
            rows = slice(None) if len(live) == S else torch.tensor(live, device=X0.device)
            G = grads((X0 if grads_at_start else X)[rows], clients[rows], round, k,
                      stochastic=not full_batch)
            gsum[rows] += G
            if grads_at_start:
                continue
            d = G if correction is None else G + correction[rows]
            if prox_mu:
                d = d + prox_mu * (X[rows] - X0[rows])
            if momentum:
                buf[rows] = momentum * buf[rows] + d
                d = buf[rows]
            X[rows] -= lr_s[rows] * d
        if grads_at_start:
            X = X0 - lr_s * gsum
        return LocalResult(X, gsum)

    @staticmethod
    def _threaded(problem, X0, clients, steps, lr, round, correction, *solver) -> LocalResult:
        """Each client runs :meth:`_lockstep` on its own row, in a worker thread."""
        S = X0.shape[0]
        lr_s = _per_client(lr, S, X0)
        steps = torch.as_tensor(steps, device=X0.device)

        def job(s: int) -> LocalResult:
            one = slice(s, s + 1)
            with problem.thread_model():
                return VectorizedEngine._lockstep(problem, X0[one], clients[one], steps[one], lr_s[one],
                                                  round, None if correction is None else correction[one],
                                                  *solver)
        problem.model.train()
        outs = map_single_threaded(job, range(S))
        if not outs:
            return LocalResult(X0.clone(), torch.zeros_like(X0))
        return LocalResult(torch.cat([o.X for o in outs]), torch.cat([o.grad_sum for o in outs]))


class ReferenceEngine:
    """Plain per-client loop (see module docstring)."""

    name = "reference"

    def local_sgd(self, problem: Problem, X0: torch.Tensor, clients: torch.Tensor,
                  steps: torch.Tensor, lr, round: int, correction: torch.Tensor | None = None,
                  grads_at_start: bool = False, momentum: float = 0.0, prox_mu: float = 0.0,
                  full_batch: bool = False) -> LocalResult:
        S = X0.shape[0]
        lr_s = _per_client(lr, S, X0)
        Xs, gs = [], []
        for s in range(S):
            c, K = int(clients[s]), int(steps[s])
            corr = None if correction is None else correction[s]
            if problem.has_module and not grads_at_start and not full_batch:
                x, gsum = self._module_sgd(problem, X0[s], c, K, float(lr_s[s]), round, corr,
                                           momentum, prox_mu)
            else:
                x, gsum = X0[s].clone(), torch.zeros_like(X0[s])
                buf = torch.zeros_like(x)
                for k in range(K):
                    g = problem.client_grad(X0[s] if grads_at_start else x, c, round, k,
                                            stochastic=not full_batch)
                    gsum = gsum + g
                    if not grads_at_start:
                        d = g if corr is None else g + corr
                        d = d + prox_mu * (x - X0[s])
                        buf = momentum * buf + d
                        x = x - lr_s[s] * buf
                if grads_at_start:
                    x = X0[s] - lr_s[s] * gsum
            Xs.append(x)
            gs.append(gsum)
        return LocalResult(torch.stack(Xs), torch.stack(gs))

    @staticmethod
    def _module_sgd(problem: Problem, x0, client, K, lr, round, corr, momentum, prox_mu):
        model = problem.model
        backup = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
        torch.nn.utils.vector_to_parameters(x0.detach().clone(), model.parameters())
        anchor = [p.detach().clone() for p in model.parameters()]
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
        offsets = torch.tensor([0, *problem.numels]).cumsum(0).tolist()
        gsum = torch.zeros_like(x0)
        model.train()
        for k in range(K):
            idx = problem.sample_indices(client, round, k)
            opt.zero_grad()
            with dropout_masks(problem.dropout_masks(client, round, k)):
                out = model(problem.train.x[idx])
            loss = problem.per_sample_loss(out, problem.train.y[idx]).mean()
            loss.backward()
            gsum += torch.cat([p.grad.reshape(-1) for p in model.parameters()])
            for j, p in enumerate(model.parameters()):
                if corr is not None:
                    p.grad += corr[offsets[j]:offsets[j + 1]].view_as(p)
                if prox_mu:
                    p.grad += prox_mu * (p.detach() - anchor[j])
            opt.step()
        x = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
        torch.nn.utils.vector_to_parameters(backup, model.parameters())
        return x, gsum


_ENGINES = {"vectorized": VectorizedEngine, "reference": ReferenceEngine}


#: environment variable, the fallback default of ``graphs`` where no caller names it: ``1`` makes
#: :func:`get_engine`'s vectorized engine replay CUDA graphs (only CUDA problems with keyed draws
#: capture any). Callers choose explicitly: ``VectorizedEngine(graphs=True)``,
#: ``get_engine("vectorized", graphs=True)``, ``fedlib.run_config(..., engine=...)``,
#: ``run_campaign(..., graphs=True)`` / ``python -m fedlib campaign --graphs``; an explicit
#: ``graphs=False`` wins over the variable
GRAPHS_ENV = "FEDLIB_CUDA_GRAPHS"


def get_engine(name: str, graphs: bool | None = None, compiled_draws: bool | str = False):
    """Engine by name: ``vectorized`` (default) or ``reference``.

    Args:
        name: the engine's name.
        graphs: for ``vectorized``, replay each local step's gradients from a CUDA graph
            (:class:`VectorizedEngine`); None (default) reads :data:`GRAPHS_ENV` (``1``: on).
            The reference engine has no graphs: True is refused for it.
        compiled_draws: for ``vectorized``, keyed draws by a ``torch.compile``'d
            :func:`fedlib.keyed.step_draws` (:class:`VectorizedEngine`); refused for the reference engine.
    """
    if name not in _ENGINES:
        raise InputError(f"engine: unknown engine {name!r}; known engines: {', '.join(_ENGINES)}")
    if graphs is not None and not isinstance(graphs, bool):
        raise InputError(f"graphs: must be True, False or None, got {graphs!r}")
    if name == "vectorized":
        return VectorizedEngine(graphs=os.environ.get(GRAPHS_ENV, "") == "1" if graphs is None else graphs,
                                compiled_draws=compiled_draws)
    if graphs:
        raise InputError(f"graphs: only the vectorized engine replays CUDA graphs, not {name!r}")
    if compiled_draws is not False:
        raise InputError(f"compiled_draws: only the vectorized engine compiles draws, not {name!r}")
    return _ENGINES[name]()


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
