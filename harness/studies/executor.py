"""Where the studies' independent pieces of work run: in this process (the default) or on a Ray cluster.

    >>> from harness.studies.executor import make_executor
    >>> with make_executor("local") as ex:            # or "ray", or "ray://HOST:10001"
    ...     ex.map(len, ["ab", "c"])
    [2, 1]

An executor has a `name`, a number of `workers` (CPUs it can use at once) and two ways to run
`fn(item, *shared)` over items:

- `map(fn, items, *shared)` -> the results in the order of `items`;
- `as_completed(fn, items, *shared)` -> (position, result) pairs as results arrive, so a caller can
  store each one at once (the embedding cache commits every batch as it comes back).

How functions and data travel with Ray: `fn` is pickled (cloudpickle) and exported to the cluster once
per executor; each item is the argument of its own task (Ray moves a large one through the object store
by itself); each `shared` value is put in the object store once (`ray.put`) and every task receives the
reference, which Ray resolves on the worker, so a large input common to all tasks (the cached legs of a
sweep) crosses the network once per node, not once per task.  Results come back through the object
store.  At most `window` tasks are in flight (default twice the workers): results never pile up faster
than the driver stores them, and after a failure little work is left running.

A task's exception is raised in the driver as itself (the harness's own errors stay one-line errors);
the tasks already running are left to finish and their results are still delivered first, so nothing
that was computed is thrown away.

Ray is an optional dependency (`pip install 'harness[ray]'`): importing this module does not import it.
"""
from __future__ import annotations

import inspect
import os
import time
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

from harness.errors import ConfigError

RAY_EXTRA_HINT = "install the optional extra: pip install 'harness[ray]'"


class Executor(Protocol):
    name: str
    workers: int

    def map(self, fn: Callable[..., Any], items: Iterable[Any], *shared: Any, isolate: bool = False) -> list:
        """fn(item, *shared) for every item; results in the order of the items."""
        ...

    def as_completed(self, fn: Callable[..., Any], items: Iterable[Any], *shared: Any,
                     isolate: bool = False) -> Iterator[tuple[int, Any]]:
        """(position of the item, fn(item, *shared)) as each result arrives."""
        ...

    def close(self) -> None:
        ...


class _ContextManager:
    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def map(self, fn: Callable[..., Any], items: Iterable[Any], *shared: Any, isolate: bool = False) -> list:
        results: dict[int, Any] = {}
        for position, result in self.as_completed(fn, items, *shared, isolate=isolate):
            results[position] = result
        return [results[i] for i in range(len(results))]


class LocalExecutor(_ContextManager):
    """Today's behaviour: every call in this process, one after the other, in order.

    `isolate` has no effect here (a study run locally shares one process, as it always has)."""

    name = "local"
    workers = 1

    def as_completed(self, fn: Callable[..., Any], items: Iterable[Any], *shared: Any,
                     isolate: bool = False) -> Iterator[tuple[int, Any]]:
        for position, item in enumerate(items):
            yield position, fn(item, *shared)

    def close(self) -> None:
        pass


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(f"the Ray executor needs Ray: {RAY_EXTRA_HINT}") from None
    return ray


class RayExecutor(_ContextManager):
    """Tasks on a Ray cluster, one CPU each.

    `address`: None connects where `ray.init()` does: the cluster in RAY_ADDRESS if set, else a new
    local one on this machine; "ray://HOST:PORT" is a Ray Client connection to a remote head (port
    10001 by default).  If this process is already connected to Ray, that connection is used as it is;
    the executor shuts Ray down on close() only if it was the one to connect.
    `isolate=True` runs each call in a fresh worker process (Ray's max_calls=1): a study cell applies a
    machine profile (thread variables, an address-space cap) that must not leak into the next cell.
    """

    def __init__(self, address: str | None = None, *, window: int | None = None,
                 init_options: dict[str, Any] | None = None):
        ray = import_ray()
        self._ray = ray
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            self._connect(address, {"logging_level": "WARNING", **(init_options or {})})
        self.address = address or os.environ.get("RAY_ADDRESS") or "local"
        self.name = address if address and address.startswith("ray://") else "ray"
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.window = window or 2 * self.workers
        self._remote: dict[tuple[Callable[..., Any], bool], Any] = {}

    def _connect(self, address: str | None, options: dict[str, Any], attempts: int = 3) -> None:
        # Ray Client starts a server process per connection on the head; on a loaded machine that start
        # now and then fails ("Initialization failure from server") and works on the next try.
        for attempt in range(1, attempts + 1):
            try:
                self._ray.init(address=address, **options)
                return
            except ConnectionError:
                if not (address or "").startswith("ray://") or attempt == attempts:
                    raise
                self._ray.shutdown()
                time.sleep(2.0 * attempt)

    def _remote_of(self, fn: Callable[..., Any], isolate: bool) -> Any:
        key = (fn, isolate)
        if key not in self._remote:
            # an exception in fn is reported, never retried; a lost worker (a node gone) is retried by Ray
            options: dict[str, Any] = {"num_cpus": 1}
            if isolate:
                options["max_calls"] = 1
            self._remote[key] = self._ray.remote(**options)(fn)
        return self._remote[key]

    def as_completed(self, fn: Callable[..., Any], items: Iterable[Any], *shared: Any,
                     isolate: bool = False) -> Iterator[tuple[int, Any]]:
        ray = self._ray
        if not inspect.isfunction(fn):  # Ray's tasks are functions: a callable object travels as data
            fn, shared = _call, (fn, *shared)
        remote = self._remote_of(fn, isolate)
        shared_refs = [ray.put(value) for value in shared]  # once, however many tasks read them
        pending = iter(enumerate(items))
        in_flight: dict[Any, int] = {}
        failure: BaseException | None = None

        def submit() -> None:
            while failure is None and len(in_flight) < self.window:
                nxt = next(pending, None)
                if nxt is None:
                    return
                in_flight[remote.remote(nxt[1], *shared_refs)] = nxt[0]

        try:
            submit()
            while in_flight:
                [ready], _ = ray.wait(list(in_flight), num_returns=1)
                position = in_flight.pop(ready)
                try:
                    result = ray.get(ready)
                except Exception as exc:  # keep delivering what the other tasks finish, then raise
                    failure = failure or _cause(ray, exc)
                    continue
                yield position, result
                submit()
        finally:
            for ref in in_flight:  # the caller stopped early (an error, Ctrl-C): drop the rest
                ray.cancel(ref, force=False)
        if failure is not None:
            raise failure

    def close(self) -> None:
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()


def _call(item: Any, fn: Callable[..., Any], *shared: Any) -> Any:
    return fn(item, *shared)


def _cause(ray: Any, exc: Exception) -> BaseException:
    """The exception the task raised, not Ray's wrapper (its message keeps the remote traceback)."""
    cause = getattr(exc, "cause", None)
    if isinstance(exc, ray.exceptions.RayTaskError) and isinstance(cause, BaseException):
        return cause
    return exc


def make_executor(spec: str | None = "local") -> LocalExecutor | RayExecutor:
    """From the command line's --executor: "local" (default), "ray" (RAY_ADDRESS or a new local
    cluster) or "ray://HOST:PORT" (Ray Client)."""
    if spec in (None, "", "local"):
        return LocalExecutor()
    if spec == "ray":
        return RayExecutor()
    if spec.startswith("ray://"):
        return RayExecutor(spec)
    raise ConfigError(f"--executor {spec!r}: expected local, ray or ray://HOST:PORT")


def partition(items: Sequence[Any], parts: int) -> list[list[Any]]:
    """Contiguous slices of `items`, at most `parts` of them, sizes differing by at most one."""
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(list(items[start:end]))
        start = end
    return [s for s in out if s]


def _apply_to_slice(items: list[Any], fn: Callable[..., Any], *shared: Any) -> list[Any]:
    return [fn(item, *shared) for item in items]


def map_partitioned(executor: Executor, fn: Callable[..., Any], items: Sequence[Any], *shared: Any,
                    parts: int | None = None) -> list[Any]:
    """fn(item, *shared) for every item, run as one task per slice of the items (default: one slice per
    worker), results in the order of the items.  For many cheap items (sweep settings) where a task per
    item would cost more in scheduling than in work."""
    slices = partition(items, parts or executor.workers)
    out: list[Any] = []
    for part in executor.map(_apply_to_slice, slices, fn, *shared):
        out.extend(part)
    return out
