"""Process isolation and memory readings of the scale experiment: each measurement runs in a forked
child, which reads its resident-set high-water mark from /proc after resetting it."""
from __future__ import annotations

import ctypes
import gc
import multiprocessing
import resource
import traceback
from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class ChildError:
    text: str


def _status_kib(field_name: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def release_free_heap() -> None:
    """Return freed heap pages to the kernel (glibc malloc_trim), so that memory the parent freed but
    kept resident cannot absorb the child's allocations and hide them from the high-water mark."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the peak may be under-reported, never over-reported
        pass


def reset_peak_rss() -> str:
    """Reset the resident-set high-water mark if the kernel allows it; returns the method used."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return "VmHWM after /proc/self/clear_refs reset"
    except OSError:
        return "ru_maxrss (no reset: includes the inherited resident set)"


def current_rss_kib() -> int:
    rss = _status_kib("VmRSS")
    return rss if rss is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def peak_rss_kib() -> int:
    hwm = _status_kib("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _child_main(send, fn, args) -> None:
    try:
        result = fn(*args)
    except BaseException:  # everything goes back to the parent as text
        result = ChildError(traceback.format_exc())
    send.send(result)
    send.close()


def run_in_child(fn: Callable[..., Any], *args: Any, timeout: float | None = None) -> Any:
    """fn(*args) in a forked child; its return value (pickled) or a ChildError."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, args=(send, fn, args), daemon=True)
    proc.start()
    send.close()
    try:
        if not recv.poll(timeout):
            proc.kill()  # only this child, which we started
            proc.join()
            return ChildError(f"timed out after {timeout} s")
        result = recv.recv()
    except EOFError:
        result = ChildError(f"child exited with code {proc.exitcode} without a result")
    proc.join()
    return result
