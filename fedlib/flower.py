"""Deploy with Flower: a fedlib algorithm, unchanged, with each round's local training done by
Flower clients (``pip install "fedlib[flower]"``: flwr with its simulation engine).

The bridge moves the one thing a federation moves -- local training on the clients' data -- and
nothing else, so there is no second copy of any update rule:

* the **server** (:func:`server_app`) runs :func:`fedlib.run` itself: the algorithm's own
  server side (FedAvg, FedSUM, FedSUM-CR, SCAFFOLD, FedAU, MIFA, FedVARP, FOCUS, ...), the
  participation :class:`~fedlib.participation.Schedule` that says who is asked in each round and
  whose upload counts, the learning-rate schedule, the history and the message counts. Its
  engine is a :class:`FlowerEngine`: where the algorithm asks for local SGD of some clients, the
  engine sends each of them its starting model and takes their local models back; where it
  asks for gradients at given models (an algorithm of yours that does so on the server), the same.
* each **client** (:func:`client_app`) runs fedlib's local solver on its own data, with the
  same minibatch and dropout keys (seed, client, round, step) as in simulation, so a run through
  Flower equals ``fedlib.run`` on the same schedule (bitwise on one CPU with one torch thread
  per client: the test asserts it).

An algorithm whose clients keep state between rounds (FedSUM's h_i, FedSUM-CR's z_i and a_i,
SCAFFOLD's c_i, FOCUS's last gradient: those that list ``client_state``) runs as its clients and
server do
(:meth:`fedlib.algorithms.Algorithm.client_step`): at the start of a run every node gets x^(0)
and sets up its own state in Flower's per-node ``Context.state``; in a round the server sends the
asked clients exactly the algorithm's downlink (FedSUM: x and y; SCAFFOLD: x and c), each runs the
algorithm's own ``client_step`` on its state and sends back exactly its uplink (FedSUM: delta_i;
SCAFFOLD: Delta y_i and, unless ``uplink_vectors=1``, Delta c_i), so the tensors on the wire are
what the history's ``uplink`` / ``downlink`` count. A node keeps the state a round produced as
*pending* until the server's next message says whether that upload counted (the round the server
last received from it); one that did not count is dropped, as the schedule's failed upload leaves
the client's state untouched. The clients of algorithms that keep nothing on them (FedAvg,
FedAU, MIFA, FedVARP, ...) get the starting model and send back their local model only
(``LocalResult.grad_sum`` travels only for an engine made with ``grad_sums=True``, for an
algorithm of yours that reads it). The server evaluates the model with the problem it is given
(its test set and, for the training loss, the clients' training samples), as a simulation does.
A client that fails or does not answer within the timeout is the schedule's failed upload in
that round (:class:`FlowerEngine`); the result's ``info["unreachable"]`` lists them by round.

A client is told apart by ``partition-id`` in its node config (Flower's simulation engine sets
it to 0..num_supernodes-1; on a device, ``flower-supernode --node-config "partition-id=3"``):
that is the fedlib client index whose data it trains on.
"""

from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import importlib
import inspect
import json
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import algorithms, arithmetic
from ._validate import InputError, check_int, warn
from .algorithms.base import Algorithm, RoundInput
from .config import ExperimentConfig
from .engine import LocalResult, UnreachableClients, _per_client, get_engine
from .extensions import worker_modules
from .fingerprint import config_fingerprint
from .problems import Problem
from .store import Store, run_meta

__all__ = ["FlowerEngine", "client_app", "identify_nodes", "problem_identity", "server_app", "simulate"]

#: message types: local SGD, gradients at given models, who a node is, a run's start and a
#: client step of an algorithm whose clients keep state
TRAIN, GRADS, WHO = "train.fedlib_local", "query.fedlib_grads", "query.fedlib_client"
START, STEP = "query.fedlib_start", "train.fedlib_step"


def _flwr():
    """Flower's modules, or an ImportError that says how to install them."""
    try:
        from flwr import app, clientapp, serverapp
    except ImportError as e:          # pragma: no cover - the extra is installed by make test
        raise ImportError("fedlib.flower needs Flower: pip install 'fedlib[flower]' "
                          "(flwr[simulation])") from e
    return app, clientapp, serverapp


def _arrays(**tensors: torch.Tensor):
    app, _, _ = _flwr()
    return app.ArrayRecord(torch_state_dict={k: v.detach().cpu().contiguous() for k, v in tensors.items()})


# ----------------------------------------------------------------------------------- client side

#: problems built by client apps in this process
_BUILT: dict = {}


def client_app(make_problem: Callable[[Any], Problem] | ExperimentConfig, key: str | None = None):
    """A Flower ``ClientApp`` that trains its fedlib client.

    Args:
        make_problem: the problem the client trains on: an :class:`ExperimentConfig` (its
            ``build_problem()``, as in simulation), or a callable taking the Flower ``Context``
            and returning a :class:`~fedlib.problems.Problem` -- on a device, one whose client
            ``partition-id`` holds the device's own data (your data loader goes there). It is
            built once per process. A node built from a config tells the server which problem it
            holds (:func:`problem_identity`), and the server refuses another before round 0; a
            callable's problem cannot be checked, and a run the server stores says how many nodes'
            problems were (``nodes_problem`` in its ``meta.json``).
        key: what the process's cache of built problems calls it (default: the config's key, or
            the callable's qualified name).

    Returns:
        ``flwr.clientapp.ClientApp`` answering the :class:`FlowerEngine`'s messages.
    """
    app, clientapp, _ = _flwr()
    problem_id = ""                          # a callable's problem: the server cannot check it
    if isinstance(make_problem, ExperimentConfig):
        config = make_problem
        config.validate()
        key = key or config.key()
        problem_id = problem_identity(config)
        make_problem = lambda context: config.build_problem()       # noqa: E731
    elif not callable(make_problem):
        raise InputError(f"make_problem: expected an ExperimentConfig or a callable (Context -> Problem), "
                         f"got {type(make_problem).__name__}")
    else:
        try:
            inspect.signature(make_problem).bind(None)
        except TypeError:
            raise InputError(f"make_problem: must take one argument, Flower's Context (context -> "
                             f"Problem); {getattr(make_problem, '__qualname__', make_problem)!r} takes "
                             f"{inspect.signature(make_problem)}") from None
        except ValueError:                   # a builtin without a signature: called as it is
            pass
    slot = key or f"{getattr(make_problem, '__module__', '')}.{getattr(make_problem, '__qualname__', '')}"
    node = _ClientNode(app, make_problem, slot, problem_id)
    client = clientapp.ClientApp()
    client.query("fedlib_client")(node.who)
    client.train("fedlib_local")(node.train)
    client.query("fedlib_grads")(node.grads)
    client.query("fedlib_start")(node.start)
    client.train("fedlib_step")(node.step)
    return client


class _ClientNode:
    """What a :func:`client_app` answers with: one handler per message of the
    :class:`FlowerEngine` (``who``, ``train``, ``grads``, ``start``, ``step``), each taking Flower's
    ``(message, context)``, on the problem ``make_problem`` builds once per process (under ``slot``;
    ``problem_id``: :func:`problem_identity` of the config it was built from, "" for a callable)."""

    def __init__(self, app, make_problem: Callable[[Any], Problem], slot: str, problem_id: str = ""):
        self.app, self.make_problem, self.slot, self.problem_id = app, make_problem, slot, problem_id
        self.engine = get_engine("vectorized")

    def problem_and_client(self, context) -> tuple[Problem, int]:
        """The problem (built once per process) and the client this node is (its partition-id)."""
        if self.slot not in _BUILT:            # once per process (Flower may load the app per message)
            _BUILT[self.slot] = self.make_problem(context)
        problem = _BUILT[self.slot]
        if "partition-id" not in context.node_config:
            raise InputError("node_config.partition-id: this node has no partition-id, so it cannot tell "
                             "which fedlib client it is (flower-supernode --node-config 'partition-id=<i>')")
        return problem, int(context.node_config["partition-id"])

    def reply(self, msg, arrays=None, **config):
        """The reply to ``msg``: ``config`` as its config record, ``arrays`` as its arrays."""
        app = self.app
        content = app.RecordDict({"config": app.ConfigRecord(config)})
        if arrays is not None:
            content["arrays"] = arrays
        return app.Message(content, reply_to=msg)

    def task_of(self, msg, context) -> tuple[Problem, dict, dict, int]:
        """The problem, the task, its tensors (on the problem's device) and this node's client."""
        problem, me = self.problem_and_client(context)
        task = msg.content["config"]
        if int(task["client"]) != me:
            raise InputError(f"client: this node is client {me} (its partition-id), the server sent the "
                             f"task of client {int(task['client'])}")
        tensors = {k: v.to(problem.device, problem.dtype)[None]
                   for k, v in msg.content["arrays"].to_torch_state_dict().items()}
        return problem, task, tensors, me

    def who(self, msg, context):
        """Which client this node is, how many clients the problem has, and which problem it is
        (:func:`problem_identity`; "" where a callable built it)."""
        problem, me = self.problem_and_client(context)
        return self.reply(msg, client=me, num_clients=int(problem.num_clients), problem=self.problem_id)

    def train(self, msg, context):
        """The engine's local SGD of this client from the task's model (and correction)."""
        problem, task, t, c = self.task_of(msg, context)
        dev = problem.device
        res = self.engine.local_sgd(problem, t["x0"], torch.tensor([c], device=dev),
                                    torch.tensor([int(task["steps"])], device=dev), float(task["lr"]),
                                    int(task["round"]), t.get("correction"), bool(task["grads_at_start"]),
                                    float(task["momentum"]), float(task["prox_mu"]),
                                    bool(task["full_batch"]))
        sent = {"x": res.X[0], **({"grad_sum": res.grad_sum[0]} if bool(task["grad_sum"]) else {})}
        return self.reply(msg, _arrays(**sent), client=c)

    def grads(self, msg, context):
        """This client's gradient at the task's model, round and step."""
        problem, task, t, c = self.task_of(msg, context)
        g = problem.grads(t["x"], torch.tensor([c], device=problem.device), int(task["round"]),
                          int(task["step"]), stochastic=bool(task["stochastic"]))
        return self.reply(msg, _arrays(g=g[0]), client=c)

    def start(self, msg, context):
        """A run starts: this client's state from x^(0), kept in the node's context."""
        problem, task, t, c = self.task_of(msg, context)
        algo = _client_algorithm(problem, self.engine, task)
        state = {k: v for k, v in algo.client_init(t["x0"][0]).items()}
        context.state[_STATE] = _arrays(**state)
        context.state[_PENDING] = _arrays(**state)
        context.state[_META] = self.app.ConfigRecord({"run": str(task["run"]), "pending_round": -2})
        return self.reply(msg, client=c)

    def step(self, msg, context):
        """The algorithm's client_step on this client's state; the new state stays pending until
        the server's next message says whether this upload counted."""
        problem, task, t, c = self.task_of(msg, context)
        meta = context.state[_META] if _META in context.state else None
        if meta is None or str(meta["run"]) != str(task["run"]):
            raise InputError(f"client {c}: no state for run {task['run']} (the run's start did not reach "
                             "this node)")
        if int(meta["pending_round"]) == int(task["committed"]):         # the last upload counted
            context.state[_STATE] = context.state[_PENDING]
        dev = problem.device
        state = {k: v.to(dev)[None] for k, v in context.state[_STATE].to_torch_state_dict().items()}
        algo = _client_algorithm(problem, self.engine, task)
        down = {k.removeprefix("down."): v[0] for k, v in t.items() if k.startswith("down.")}
        down.update({k.removeprefix("down."): task[k] for k in task if k.startswith("down.")})
        steps = torch.zeros(problem.num_clients, dtype=torch.long, device=dev)
        steps[c] = int(task["steps"])
        r = RoundInput(int(task["round"]), steps.new_zeros(problem.num_clients),
                       torch.ones(problem.num_clients, dtype=torch.bool, device=dev), steps,
                       float(task["lr_local"]), float(task["lr_global"]))
        up, new = algo.client_step(down, state, torch.tensor([c], device=dev), r)
        sent = list(task["uplink"]) if "uplink" in task else list(up)
        context.state[_PENDING] = _arrays(**{k: v[0] for k, v in new.items()})
        context.state[_META] = self.app.ConfigRecord({"run": str(task["run"]),
                                                      "pending_round": int(task["round"])})
        return self.reply(msg, _arrays(**{k: up[k][0] for k in sent}), client=c)


#: where a node keeps its client's state in Flower's Context.state
_STATE, _PENDING, _META = "fedlib.state", "fedlib.pending", "fedlib.meta"

#: algorithm objects of client apps in this process, by (problem, name, options, K)
_ALGOS: dict = {}


def _client_algorithm(problem: Problem, engine, task):
    """The algorithm a message names, built on this node's problem (its client_step is the
    simulation's own code), with the run's nominal K."""
    from .algorithms import get
    key = (id(problem), str(task["algorithm"]), str(task["options"]), float(task["nominal_steps"]))
    if key not in _ALGOS:
        algo = get(str(task["algorithm"]))(problem, engine, **json.loads(str(task["options"])))
        algo.K = float(task["nominal_steps"])
        _ALGOS[key] = algo
    return _ALGOS[key]


# ----------------------------------------------------------------------------------- server side


class FlowerEngine:
    """A fedlib engine whose clients are Flower nodes: :meth:`local_sgd` and :meth:`grads` send
    each client its rows and wait for its answer.

    A client that answers with an error, or not within ``timeout``, is the schedule's failed
    upload: the engine raises :class:`~fedlib.engine.UnreachableClients`, :func:`fedlib.run`
    runs the round again with that client's ``uplink_ok`` False, and the engine answers the
    repeated requests from the replies it already has (it asks no node twice for the same
    work) and leaves the unreachable client's rows where they started.

    Args:
        grid: the ``Grid`` of the ServerApp's main function.
        nodes: fedlib client index -> Flower node id (:func:`identify_nodes`).
        timeout: seconds to wait for the replies of one exchange (None: no limit).
        grad_sums: clients that train also send the sum of their gradients
            (``LocalResult.grad_sum``: one more vector than the papers count, for an algorithm of
            yours that reads it); by default they send their local model only and ``grad_sum``
            is None.
    """

    #: tells fedlib.run that clients may not answer (it then keeps the state to run a round again)
    remote_clients = True

    def __init__(self, grid, nodes: dict[int, int], timeout: float | None = None, grad_sums: bool = False):
        self.grid, self.nodes, self.timeout, self.grad_sums = grid, dict(nodes), timeout, bool(grad_sums)
        self.exchanges = 0
        self._replies: dict = {}                 # (type, round, client, digest) -> reply arrays
        self._late: dict[int, set[int]] = {}     # round -> clients that did not answer
        self._run = ""                           # the run whose clients keep state
        self._counted: dict[int, int] = {}      # client -> the last round whose upload counted

    @staticmethod
    def _digest(config: dict, tensors: dict) -> str:
        h = hashlib.sha256(repr(sorted(config.items())).encode())
        for k in sorted(tensors):
            h.update(k.encode())
            h.update(tensors[k].detach().cpu().contiguous().numpy().tobytes())
        return h.hexdigest()

    def _exchange(self, message_type: str, rows: list[tuple[int, dict, dict]], round: int) -> dict[int, dict]:
        """Send (client, config, tensors) to each client's node; client -> its reply's arrays (None
        for a client already known not to answer in this round)."""
        app, _, _ = _flwr()
        got, msgs, want = {}, [], {}
        if any(k[1] != int(round) for k in self._replies):     # replies are reused within a round only
            self._replies = {k: v for k, v in self._replies.items() if k[1] == int(round)}
        late = self._late.setdefault(int(round), set())
        for c, config, tensors in rows:
            key = (message_type, int(round), int(c), self._digest(config, tensors))
            if int(c) in late:
                got[int(c)] = None
            elif key in self._replies:
                got[int(c)] = self._replies[key]
            else:
                task = app.ConfigRecord({"client": int(c), "round": int(round), **config})
                content = app.RecordDict({"config": task, "arrays": _arrays(**tensors)})
                node = self.nodes[int(c)]
                msgs.append(app.Message(content, dst_node_id=node, message_type=message_type))
                want[node] = (int(c), key)
        failed = []
        if msgs:
            self.exchanges += 1
            for rep in self.grid.send_and_receive(msgs, timeout=self.timeout):
                c, key = want.pop(rep.metadata.src_node_id, (None, None))
                if c is None:
                    continue
                if rep.has_error():
                    warn(f"round {round}: client {c} (Flower node {rep.metadata.src_node_id}) "
                         f"failed: {rep.error.reason}; its upload counts as failed")
                    failed.append(c)
                    continue
                self._replies[key] = got[c] = rep.content["arrays"].to_torch_state_dict()
            silent = sorted(c for c, _ in want.values())    # no reply within the timeout
            if silent:
                within = (f"within timeout={self.timeout:g} s" if self.timeout is not None else
                          "(their node left the federation or the reply was lost)")
                warn(f"round {round}: client(s) {silent} did not answer {within}; their uploads count as "
                     "failed (a node answers each message from a process it starts and a problem it "
                     "builds: a timeout must cover both; a node that rejoins is not asked again)")
            failed += silent
        if failed:
            late.update(failed)
            raise UnreachableClients(round, failed)
        return got

    @staticmethod
    def _task(algo: Algorithm) -> dict:
        return {"algorithm": algo.name, "options": json.dumps(algo.settings.changed(), sort_keys=True),
                "nominal_steps": float(algo.K)}

    def start_clients(self, algo: Algorithm, x0: torch.Tensor) -> None:
        """A run of an algorithm whose clients keep state starts: every node sets up its client's
        state from x^(0) (:meth:`~fedlib.algorithms.Algorithm.client_init`). A node that does not
        answer is a RuntimeError: the run cannot start without it."""
        app, _, _ = _flwr()
        self._run, self._counted = secrets.token_hex(8), {}
        self._replies, self._late = {}, {}
        msgs = []
        for c, n in sorted(self.nodes.items()):
            task = app.ConfigRecord({"client": c, "round": -1, "run": self._run, **self._task(algo)})
            content = app.RecordDict({"config": task, "arrays": _arrays(x0=x0)})
            msgs.append(app.Message(content, dst_node_id=n, message_type=START))
        self.exchanges += 1
        replies = list(self.grid.send_and_receive(msgs, timeout=self.timeout))
        answered = {rep.metadata.src_node_id for rep in replies if not rep.has_error()}
        errors = list(dict.fromkeys(str(rep.error.reason).strip().splitlines()[-1]        # the cause
                                    for rep in replies if rep.has_error() and rep.error.reason
                                    and str(rep.error.reason).strip()))
        missing = [c for c, n in sorted(self.nodes.items()) if n not in answered]
        if missing:
            why = (f"; their error{'s' if len(errors) > 1 else ''}: {' | '.join(errors)}" if errors
                   else " (no reply within the timeout)")
            raise RuntimeError(f"client(s) {missing}: did not set up their state for the run ({algo.name} "
                               f"keeps state on its clients){why}; the run cannot start without them")

    def client_steps(self, algo: Algorithm, down: dict, clients: torch.Tensor, r: RoundInput) -> dict:
        """The algorithm's client step on each client's node: the downlink's tensors and numbers
        go to each client in ``clients``, its uplink comes back ([S, p] per name, rows in the order
        of ``clients``; those the client does not send rebuilt by the server)."""
        tensors = {f"down.{k}": v for k, v in down.items() if isinstance(v, torch.Tensor)}
        numbers = {f"down.{k}": v for k, v in down.items() if not isinstance(v, torch.Tensor)}
        sent = algo.uplink_sent()
        rows = []
        for c in clients.tolist():
            config = {"run": self._run, "committed": self._counted.get(c, -1), "steps": int(r.local_steps[c]),
                      "lr_local": float(r.lr_local), "lr_global": float(r.lr_global), **self._task(algo),
                      **numbers, **({} if sent is None else {"uplink": list(sent)})}
            rows.append((c, config, tensors))
        got = self._exchange(STEP, rows, r.t)
        x = down["x"]
        names = list(got[clients.tolist()[0]]) if len(clients) else []
        up = {k: torch.stack([got[c][k] for c in clients.tolist()]).to(x.device) for k in names}
        for c in clients.tolist():
            self._counted[c] = int(r.t)
        return algo.rebuild_uplink(x, down, up, clients, r)

    def local_sgd(self, problem: Problem, X0: torch.Tensor, clients: torch.Tensor, steps: torch.Tensor,
                  lr, round: int, correction: torch.Tensor | None = None, grads_at_start: bool = False,
                  momentum: float = 0.0, prox_mu: float = 0.0, full_batch: bool = False) -> LocalResult:
        """As the vectorized engine's ``local_sgd``, each row trained by its client's node (the rows
        of a client that did not answer in this round stay where they started)."""
        S = X0.shape[0]
        if S == 0:
            return LocalResult(X0.clone(), torch.zeros_like(X0) if self.grad_sums else None)
        lr_s = _per_client(lr, S, X0)
        steps = torch.as_tensor(steps)
        rows = []
        for s in range(S):
            config = {"steps": int(steps[s]), "lr": float(lr_s[s]), "grads_at_start": bool(grads_at_start),
                      "momentum": float(momentum), "prox_mu": float(prox_mu), "full_batch": bool(full_batch),
                      "grad_sum": self.grad_sums}
            tensors = {"x0": X0[s]} if correction is None else {"x0": X0[s], "correction": correction[s]}
            rows.append((int(clients[s]), config, tensors))
        got = self._exchange(TRAIN, rows, round)
        X = X0.clone()
        G = torch.zeros_like(X0) if self.grad_sums else None
        for s, c in enumerate(clients.tolist()):
            if got[c] is not None:
                X[s] = got[c]["x"].to(X0)
                if G is not None:
                    G[s] = got[c]["grad_sum"].to(X0)
        return LocalResult(X, G)

    def grads(self, X: torch.Tensor, clients: torch.Tensor, round: int = 0, step: int = 0,
              stochastic: bool = True) -> torch.Tensor:
        """Each client's gradient at its row of ``X`` (what ``Problem.grads`` computes in simulation;
        zeros for a client that did not answer in this round)."""
        out = torch.zeros_like(X)
        if X.shape[0] == 0:
            return out
        rows = [(int(c), {"step": int(step), "stochastic": bool(stochastic)}, {"x": X[s]})
                for s, c in enumerate(clients)]
        got = self._exchange(GRADS, rows, round)
        for s, c in enumerate(clients.tolist()):
            if got[c] is not None:
                out[s] = got[c]["g"].to(X)
        return out


def problem_identity(config: ExperimentConfig) -> str:
    """What names a config's problem between server and nodes: a digest of its problem and
    problem arguments (every config of one federation shares them; an argument written at its
    default counts as left out, :meth:`ExperimentConfig.canonical`), so that a node whose
    :func:`client_app` was built from another config is refused before round 0."""
    plain = config.canonical().to_dict()
    text = json.dumps([plain["problem"], plain["problem_args"]], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def identify_nodes(grid, num_clients: int, wait: float = 120.0, problem: str | None = None) -> dict[int, int]:
    """Ask every node which fedlib client it is: client index -> node id. Waits up to ``wait``
    seconds for ``num_clients`` nodes to connect; a federation of another size, a client index
    out of range or twice, a node of another problem size, or (``problem``: the server's
    :func:`problem_identity`) a node whose client app was built from a config of another problem
    is a ValueError before round 0. A node whose problem a callable built is not checked."""
    return _identify(grid, num_clients, wait, problem)[0]


def _identify(grid, num_clients: int, wait: float, problem: str | None) -> tuple[dict[int, int], int]:
    """:func:`identify_nodes`: client index -> node id, and how many nodes' problems were checked
    against ``problem``."""
    if not hasattr(grid, "get_node_ids"):
        raise InputError(f"grid: must be Flower's Grid of a ServerApp (with get_node_ids), got "
                         f"{type(grid).__name__}")
    check_int("num_clients", num_clients, 1)
    _check_waits(wait=wait)
    app, _, _ = _flwr()
    deadline = time.monotonic() + wait
    while len(list(grid.get_node_ids())) < num_clients and time.monotonic() < deadline:
        time.sleep(0.1)
    nodes = sorted(grid.get_node_ids())
    if len(nodes) != num_clients:
        raise InputError(f"num_clients: the problem has {num_clients} clients, the Flower federation "
                         f"{len(nodes)} nodes (after waiting {wait:g} s); start one node per client")
    msgs = [app.Message(app.RecordDict(), dst_node_id=n, message_type=WHO) for n in nodes]
    claims: dict[int, list[int]] = {}               # client index -> the nodes that say they are it
    checked = 0
    for rep in grid.send_and_receive(msgs, timeout=wait):
        node = rep.metadata.src_node_id
        if rep.has_error():
            raise InputError(f"node {node}: could not say which client it is: {rep.error.reason}")
        info = rep.content["config"]
        c, n = int(info["client"]), int(info["num_clients"])
        if n != num_clients:
            raise InputError(f"num_clients: node {node} holds a problem of {n} clients, the server's has "
                             f"{num_clients}")
        theirs = str(info["problem"]) if "problem" in info else ""
        if problem and theirs and theirs != problem:
            raise InputError(f"problem: node {node} (client {c}) built its problem from a config of another "
                             f"problem (problem {theirs}, the server's {problem}: another problem, "
                             "problem_args or data seed); start the nodes' client_app with the server's "
                             "config")
        checked += bool(problem and theirs)
        claims.setdefault(c, []).append(node)
    _check_claims(claims, nodes, num_clients, wait)
    return {c: ns[0] for c, ns in claims.items()}, checked


def _check_claims(claims: dict[int, list[int]], nodes: list[int], num_clients: int, wait: float) -> None:
    """Every client index claimed by exactly one node, from all the replies: one InputError naming
    the nodes that claim an index twice or out of range, and the indices no node claims."""
    twice = [f"nodes {', '.join(map(str, sorted(ns)))} all say they are client {c}"
             for c, ns in sorted(claims.items()) if len(ns) > 1]
    outside = [f"node {ns[0]} says it is client {c}" for c, ns in sorted(claims.items())
               if not 0 <= c < num_clients]
    if twice or outside:
        left = sorted(set(range(num_clients)) - set(claims))
        raise InputError("partition-id: " + "; ".join(twice + outside)
                         + (f"; no node is client {', '.join(map(str, left))}" if left else "")
                         + f"; each of 0..{num_clients - 1} must be exactly one node")
    answered = {n for ns in claims.values() for n in ns}
    if len(answered) != num_clients:
        quiet = sorted(set(nodes) - answered)
        raise InputError(f"wait: nodes {quiet} did not say which fedlib client they are within {wait:g} s "
                         "(a node starts a process and builds its problem to answer: raise wait)")


def _check_waits(**seconds: float | None) -> None:
    """``timeout`` (None: no limit) and ``wait``: a number of seconds > 0; else one ValueError
    naming the argument (a timeout of 0 would count every client as unreachable)."""
    for name, value in seconds.items():
        if value is None and name == "timeout":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            allowed = " or None (no limit)" if name == "timeout" else ""
            raise InputError(f"{name}: must be a number of seconds > 0{allowed}, got {value!r}")


def _as_list(configs) -> list:
    """``configs`` as a list: one ExperimentConfig or a list / tuple of them; anything else one
    InputError naming what was given (a dict would be iterated as its keys)."""
    if isinstance(configs, ExperimentConfig):
        return [configs]
    if not isinstance(configs, (list, tuple)):
        raise InputError(f"configs: expected an ExperimentConfig or a list of them, got "
                         f"{type(configs).__name__}" + (" (ExperimentConfig.from_dict makes one of a dict)"
                                                        if isinstance(configs, dict) else ""))
    return list(configs)


def _same_problem(configs: list[ExperimentConfig]) -> ExperimentConfig:
    """The first config, after checking that every config trains the same problem (one
    federation holds one problem's clients)."""
    if not configs:
        raise InputError("configs: nothing to run")
    for i, c in enumerate(configs):
        if not isinstance(c, ExperimentConfig):
            raise InputError(f"configs[{i}]: expected an ExperimentConfig, got {type(c).__name__}")
        try:
            c.validate()
        except ValueError as e:
            msg = str(e)
            raise InputError(f"configs[{i}].{msg.removeprefix('config.')}" if msg.startswith("config.")
                             else f"configs[{i}]: {msg}") from None
        if (c.problem, c.problem_args) != (configs[0].problem, configs[0].problem_args):
            raise InputError(f"configs[{i}].problem_args: every config of one federation trains the same "
                             f"problem; configs[0] has {configs[0].problem} {dict(configs[0].problem_args)}, "
                             f"configs[{i}] {c.problem} {dict(c.problem_args)}")
        algo = algorithms.get(c.algorithm)
        if algo.client_state and algo.client_step is Algorithm.client_step:
            raise InputError(f"configs[{i}].algorithm: {algo.name} lists client_state {algo.client_state} "
                             "but implements no client_step, so its clients' state cannot live on the Flower "
                             "nodes; implement client_init / downlink_message / client_step / server_step")
        if c.warmup() is not None:
            raise InputError(f"configs[{i}].init_from: a run that continues a warm-up is not supported by "
                             "fedlib.flower; run the warm-up and the phase as one config")
    return configs[0]


def _check_schedule(schedule, configs: list[ExperimentConfig], first: ExperimentConfig):
    """A schedule given instead of the config's participation: one config, the problem's clients."""
    from .participation import Schedule
    if schedule is None:
        return None
    if not isinstance(schedule, Schedule):
        raise InputError(f"schedule: expected a fedlib.participation.Schedule or None, got "
                         f"{type(schedule).__name__}")
    if len(configs) != 1:
        raise InputError(f"schedule: one schedule replaces the participation of one config; got "
                         f"{len(configs)} configs (give each its participation instead)")
    n = first.build_problem().num_clients
    if schedule.num_clients != n:
        raise InputError(f"schedule.num_clients: the schedule has {schedule.num_clients} clients, the "
                         f"problem and so the federation {n}")
    if schedule.num_rounds != first.rounds:
        raise InputError(f"schedule.num_rounds: the schedule has {schedule.num_rounds} rounds, the config "
                         f"{first.rounds}; set the config's rounds={schedule.num_rounds} (a schedule "
                         "replaces its participation, not its horizon)")
    return schedule


def server_app(configs: ExperimentConfig | list[ExperimentConfig], results: dict | None = None,
               timeout: float | None = None, wait: float = 600.0, schedule=None,
               save: str | os.PathLike | None = None):
    """A Flower ``ServerApp`` that runs each config with :func:`fedlib.run`, one after the
    other on the same federation, its clients' local training on the nodes (:class:`FlowerEngine`).

    Args:
        configs: one experiment or several on the same problem (algorithm, its options, rates,
            participation, rounds, seed may differ). The server builds the problem for the
            starting model and the evaluations.
        results: a dict that receives ``"results"`` (one :class:`fedlib.runner.Result` per
            config, as :func:`fedlib.run` returns it), ``"connect_seconds"`` (nodes connected and
            identified) and ``"run_seconds"`` (per config), or ``"error"`` (the exception that
            stopped the runs) -- what :func:`simulate` returns or raises. None (a deployment, whose
            server process exits with its run): an exception that stops the runs is raised, so
            that Flower marks the run failed.
        timeout: seconds to wait for one exchange's replies (None: no limit).
        wait: seconds to wait for the nodes to connect before round 0.
        schedule: a :class:`~fedlib.participation.Schedule` to run instead of the config's
            participation (one config only; e.g. ``participation.load("my_schedule.npz")``, the
            availability you recorded or modelled): who is asked in each round, whose upload
            counts and their local steps. Its client and round counts must be the problem's and
            the config's.
        save: a results store (:class:`fedlib.store.Store`) that receives each config's run as
            it finishes, with its final model (in a deployment the server's process exits with its
            run, and with it ``results``): read back with ``fedlib.load(save)`` or
            ``Store(save).get(config)``, replayed by ``fedlib.verify`` (on the server's CPU; a run
            in which an upload was lost does not replay: the lost uploads are in its ``meta.json``,
            ``unreachable``, not in its config, and reading it warns that it is not its config's
            run). A relative path is taken from the folder of the process that calls this function
            (in a deployment, Flower's, not the one ``flwr run`` was started in: give an absolute
            path); a file, a stored entry or a folder that cannot be written is refused by the
            server before round 0. Not with ``schedule`` (a store keys a run by its config). None:
            nothing stored.

    Each finished run prints its summary line (``fedlib server_app: 1 of 2: Result(...)``), and a
    run in which no upload counted in any round (every client asked was unreachable: the model
    never moved; a ``timeout`` shorter than a node takes to answer) is warned of.
    """
    _, _, serverapp = _flwr()
    _check_waits(timeout=timeout, wait=wait)
    configs = _as_list(configs)
    first = _same_problem(configs)
    schedule = _check_schedule(schedule, configs, first)
    folder = _check_outputs(results, save, schedule)
    out = {} if results is None else results
    server = serverapp.ServerApp()

    @server.main()
    def main(grid, context) -> None:
        try:
            _serve(grid, configs, schedule, out, timeout, wait, folder)
        except Exception as e:
            if results is None:         # a deployment: Flower marks the run failed, its log has the error
                raise
            out["error"] = e            # handed to the caller (simulate raises it): Flower would only log it
            warn(f"fedlib server_app: the runs stopped: {type(e).__name__}: {e} (the exception is "
                 "in results['error'])")

    return server


def _check_outputs(results, save, schedule) -> Path | None:
    """:func:`server_app`'s ``results`` (a dict or None) and ``save`` (not with ``schedule``)
    checked; the store's folder, absolute, or None."""
    if results is not None and not isinstance(results, dict):
        raise InputError(f"results: expected a dict (it receives the results) or None, got "
                         f"{type(results).__name__}")
    folder = _save_folder(save)
    if folder is not None and schedule is not None:
        raise InputError("save: a run on schedule= is not its config's run, and a store keys each run by "
                         "its config (its participation would name another schedule); give the schedule "
                         "as the config's participation to store it (kind 'trace' with its activity "
                         "[rounds, N]), or leave save out and keep results")
    return folder


def _serve(grid, configs: list[ExperimentConfig], schedule, out: dict, timeout: float | None, wait: float,
           folder: Path | None) -> None:
    """:func:`server_app`'s main: the nodes identified, then each config run on them (its result,
    timings and files in ``out`` and ``folder``, its summary printed)."""
    from .runner import run

    start = time.perf_counter()
    store = Store(folder) if folder is not None else None      # before round 0: a file, an entry,
    if store is not None:                                       # a folder that cannot be written
        store.require_writable("server_app(save=...) stores each run there")
    problem = configs[0].build_problem()
    mapping, checked = _identify(grid, problem.num_clients, wait, problem_identity(configs[0]))
    engine = FlowerEngine(grid, mapping, timeout)
    nodes = (f"{checked} of {problem.num_clients} nodes' problems checked against the server's config"
             + ("" if checked == problem.num_clients else
                " (the others built by the nodes' own make_problem: not checked)"))
    remote = copy.copy(problem)          # the same problem, whose gradients come from the nodes
    remote.grads = engine.grads
    out["connect_seconds"] = time.perf_counter() - start
    out["results"], out["run_seconds"] = [], []
    for i, c in enumerate(configs):
        start = time.perf_counter()
        sched = schedule if schedule is not None else c.schedule(problem.num_clients, problem)
        date = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        res = run(c.algorithm, remote, sched, lr_local=c.lr_local, lr_global=c.lr_global,
                  lr_schedule=c.lr_schedule, eval_every=c.eval_every, seed=c.seed, progress=False,
                  engine=engine, **c.arguments("algorithm_args"))
        out["results"].append(res)
        out["run_seconds"].append(time.perf_counter() - start)
        where = ""
        if store is not None:
            meta = {**run_meta(res, None, config_fingerprint(c), "cpu", arithmetic.current("cpu"), "flower",
                               out["run_seconds"][-1], date), "unreachable": res.info.get("unreachable"),
                    "nodes_problem": nodes}
            where = f", stored in {store.write(c, res, meta, save_params=True).path}"
        print(f"fedlib server_app: {i + 1} of {len(configs)}: {res!r}{where}", flush=True)
        _warn_if_nothing_counted(res, i, timeout)


def _save_folder(save) -> Path | None:
    """``save`` as an absolute folder path (a relative one from the folder of the process that calls
    :func:`server_app`), its type checked before Flower starts; its state (a file, an entry, a
    folder that cannot be written) is checked by the server's main before round 0, as the nodes
    import the same module where the folder need not exist."""
    if save is None:
        return None
    if not isinstance(save, (str, os.PathLike)) or not os.fspath(save).strip():
        raise InputError(f"save: must be a folder path or None, got {save!r}")
    return Path(save).expanduser().absolute()


def _warn_if_nothing_counted(res, i: int, timeout: float | None) -> None:
    """A warning where no upload of config ``i``'s run counted in any of its rounds."""
    sched, lost = res.schedule, res.info.get("unreachable") or {}
    # who was asked and would have counted: a client whose scheduled upload fails is not counted
    # unreachable (runner), so it does not make an upload count either
    asked = [set(np.flatnonzero((sched.active[t] > 0) & sched.uplink_ok[t]).tolist())
             for t in range(sched.num_rounds)]
    if lost and all(a <= set(lost.get(str(t), [])) for t, a in enumerate(asked)):
        why = (f"timeout={timeout:g} s is probably shorter than a node takes to start a process, build "
               "its problem and train" if timeout is not None else
               "the nodes failed or left (the warnings of each round name them)")
        warn(f"fedlib server_app: config {i}: no upload counted in any of its {sched.num_rounds} rounds "
             f"(every client asked was unreachable: the model never moved); {why}")


def simulate(configs: ExperimentConfig | list[ExperimentConfig], client_threads: int = 1,
             timeout: float | None = None, backend_config: dict | None = None, info: dict | None = None,
             schedule=None):
    """Run configs through Flower's simulation engine, one virtual node per client
    (:func:`server_app` + :func:`client_app`), and return their :class:`fedlib.runner.Result`
    (a list for a list of configs).

    Args:
        configs: one experiment or several on the same problem, run one after the other on one
            federation (one start-up of Flower's engine).
        client_threads: torch intra-op threads of each client process (1: the same arithmetic as
            ``fedlib.run`` in one thread).
        timeout: seconds to wait for one exchange's replies.
        backend_config: Flower's backend configuration (default: one CPU per client actor, as
            many actors as this machine has cores).
        info: a dict that receives the timings of :func:`server_app` (``connect_seconds``,
            ``run_seconds``).
        schedule: a Schedule to run instead of the config's participation (:func:`server_app`).

    The modules that define the configs' own algorithm, problem, participation kind or dataset
    (:func:`fedlib.extensions.worker_modules`) are imported in each client process, as a sweep's
    workers import them.

    Raises:
        whatever stopped the runs on the server (a ValueError naming the field for a
        federation that does not match the schedule); an InputError before Flower starts where
        one of them is defined in ``__main__``, which client processes cannot import.
    """
    _check_waits(timeout=timeout)
    from flwr.simulation import run_simulation

    single = isinstance(configs, ExperimentConfig)
    configs = _as_list(configs)
    first = _same_problem(configs)
    if isinstance(client_threads, bool) or not isinstance(client_threads, int) or client_threads < 1:
        raise InputError(f"client_threads: must be an integer >= 1, got {client_threads!r}")
    modules = worker_modules(configs)        # a user's algorithm, problem, kind, dataset: imported there
    n = first.build_problem().num_clients
    results: dict = {}

    def make(context) -> Problem:
        torch.set_num_threads(client_threads)
        for m in modules:
            importlib.import_module(m)
        return first.build_problem()

    backend = backend_config or {"client_resources": {"num_cpus": 1, "num_gpus": 0.0}}
    client = client_app(make, key=f"{first.key()}-threads{client_threads}")
    run_simulation(server_app(configs, results, timeout, schedule=schedule), client, num_supernodes=n,
                   backend_config=backend)
    if info is not None:
        info.update({k: v for k, v in results.items() if k.endswith("seconds")})
    if "error" in results:
        raise results["error"]
    if "results" not in results:
        raise RuntimeError("the Flower simulation ended without results (see Flower's log above)")
    return results["results"][0] if single else results["results"]


from ._validate import guard_module  # noqa: E402  (the public boundary: arguments checked against their hints)

guard_module(globals())
