"""Reading the text files a user writes (experiments, presets, gate files, queries, openclaw.json, results,
runs): one place that turns every way such a file can be unreadable into a DataError naming it.

    read_text(path, "queries file")     the text: UTF-8, a leading BOM dropped (Windows editors write one)
    parse_bounded(tomllib.loads, text, path, "experiment file")    a parse that cannot recurse without end

What a user is told, by case: a missing file, a folder where a file belongs, a file the process may not
read, a file larger than any real one of its kind (MAX_BYTES), UTF-16 or UTF-32 text (named, with what to
do: save it as UTF-8), bytes that are not UTF-8 (the byte and its line), nesting deeper than any real
configuration (MAX_DEPTH, with the line or key path where it goes past), and a lone UTF-16 surrogate that
a JSON escape (\\ud800) can smuggle into a string and that no UTF-8 file can hold.
"""
from __future__ import annotations

import codecs
import errno
import json
import os
import re
from pathlib import Path
from typing import Any, Callable, TypeVar

from harness.errors import DataError, HarnessError

T = TypeVar("T")

# No configuration the harness reads nests deeper than about 10 levels (openclaw.json's
# agents.list[].memory.search.query.hybrid.mmr.lambda is 8); 64 leaves room and stays far below the
# recursion limit of the parsers (a few hundred to a thousand frames).
MAX_DEPTH = 64
MAX_BYTES = 64 * 1024 * 1024  # a configuration or queries file larger than this is not one

_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32 (little-endian)"), (codecs.BOM_UTF32_BE, "UTF-32 (big-endian)"),
         (codecs.BOM_UTF16_LE, "UTF-16 (little-endian)"), (codecs.BOM_UTF16_BE, "UTF-16 (big-endian)"))
SAVE_AS_UTF8 = "save it as UTF-8 (with or without a BOM)"


def os_problem(exc: OSError, what: str = "file") -> str:
    """What an OSError on a user's path means, and what to do about it."""
    code = exc.errno
    if code == errno.ENOENT:
        return f"no such {what}"
    if code == errno.EISDIR:
        return f"is a folder; give the {what} itself"
    if code == errno.ENOTDIR:
        return "a part of this path is a file, not a folder"
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied: this user may not read or write it (check its permissions and its folders')"
    if code == errno.ENAMETOOLONG:
        return "the name is too long for the file system (at most 255 bytes per name); choose a shorter one"
    if code == errno.EROFS:
        return "the file system is read-only"
    if code == errno.ENOSPC:
        return "no space left on the device: free some space and run again"
    if code == errno.ELOOP:
        return "a symbolic link loop"
    return exc.strerror or type(exc).__name__


def read_bytes(path: Path | str, what: str = "file", *, missing: str | None = None,
               limit: int | None = MAX_BYTES) -> bytes:
    path = Path(path)
    try:
        if limit is not None and path.is_file():
            size = path.stat().st_size
            if size > limit:
                raise DataError(path, None, None, f"is {size / 2**20:.1f} MB; no {what} is larger than "
                                                  f"{limit / 2**20:.0f} MB (is it the right file?)")
        return path.read_bytes()
    except FileNotFoundError:
        raise DataError(path, None, None, missing or f"no such {what}") from None
    except OSError as exc:
        raise DataError(path, None, None, os_problem(exc, what)) from None


def encoding_problem(raw: bytes) -> str | None:
    """The name of a UTF-16/32 encoding the bytes are in (by BOM, or by the NUL bytes of UTF-16 text), or None."""
    for bom, name in _BOMS:
        if raw.startswith(bom):
            return name
    head = raw[:200]
    if len(head) >= 8:
        odd, even = head[1::2], head[0::2]
        if odd.count(0) > 0.4 * len(odd) and even.count(0) < 0.1 * len(even):
            return "UTF-16 (little-endian, without a BOM)"
        if even.count(0) > 0.4 * len(even) and odd.count(0) < 0.1 * len(odd):
            return "UTF-16 (big-endian, without a BOM)"
    return None


def decode_text(raw: bytes, path: Path | str) -> str:
    """UTF-8 text, a leading BOM dropped; UTF-16/32 and invalid UTF-8 refused by name."""
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    other = encoding_problem(raw)
    if other is not None:
        raise DataError(path, None, None, f"is {other} text; {SAVE_AS_UTF8}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(path, line, None, f"not UTF-8 at byte {exc.start} ({exc.reason}); {SAVE_AS_UTF8}") from None


def read_text(path: Path | str, what: str = "file", *, missing: str | None = None,
              limit: int | None = MAX_BYTES) -> str:
    """A text file a user wrote, as str; every way it can be unreadable is a DataError naming it."""
    return decode_text(read_bytes(path, what, missing=missing, limit=limit), path)


_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)  # a double-quoted string as _scan_depth skips it


def deepest_line(text: str, limit: int = MAX_DEPTH) -> int | None:
    """The line where bracket nesting ([ and {, outside quoted strings and comments) first goes past
    `limit`, or None.  An approximation of every syntax read here, good enough to point at the place.
    Plain JSON of any size is cleared at C speed (its strings taken out, the depth of what is left counted);
    the character scan runs only on text it cannot clear (comments, single quotes, or nesting past the limit)."""
    if text.count("[") + text.count("{") <= limit:
        return None
    bare = _QUOTED.sub("", text)
    if '"' not in bare and "'" not in bare and "#" not in bare and "/" not in bare:
        import numpy as np

        codes = np.frombuffer(bare.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        steps = (codes == ord("[")).astype(np.int32) + (codes == ord("{")) - (codes == ord("]")) - (codes == ord("}"))
        if not steps.size or int(np.cumsum(steps).max()) <= limit:
            return None
    return _scan_depth(text, limit)


def _scan_depth(text: str, limit: int) -> int | None:
    depth, line, quote, i, n = 0, 1, "", 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            if quote in ("#", "//"):
                quote = ""
        elif quote in ("#", "//"):
            pass
        elif quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "#" or (c == "/" and text.startswith("//", i)):
            quote = "#"
        elif c in "[{":
            depth += 1
            if depth > limit:
                return line
        elif c in "]}":
            depth -= 1
        i += 1
    return None


def check_value(value: Any, path: Path | str, what: str, *, limit: int = MAX_DEPTH) -> None:
    """Refuse a parsed value nested deeper than `limit` (naming the key path where it goes past) or
    holding a lone surrogate in a string (naming where)."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        node, depth, where = stack.pop()
        if isinstance(node, (dict, list)):
            if depth >= limit:
                raise DataError(path, None, where.lstrip(".") or None,
                                f"nested more than {limit} levels deep; no {what} nests that deep")
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                if isinstance(key, str):
                    _check_string(key, path, where)
                stack.append((child, depth + 1, f"{where}.{key}" if isinstance(node, dict) else f"{where}[{key}]"))
        elif isinstance(node, str):
            _check_string(node, path, where)


def _check_string(text: str, path: Path | str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DataError(path, None, where.lstrip(".") or None,
                        f"holds a lone surrogate (\\u{ord(text[exc.start]):04x}), which is no character; "
                        "remove the escape or write the character itself") from None


def parse_bounded(parse: Callable[[str], T], text: str, path: Path | str, what: str, *,
                  line_offset: int = 0) -> T:
    """parse(text), with nesting deeper than any parser's recursion refused by name (and the line where
    it goes past MAX_DEPTH), then the value checked by check_value."""
    line = deepest_line(text)
    if line is not None:
        raise DataError(path, line + line_offset, None,
                        f"nested more than {MAX_DEPTH} levels deep; no {what} nests that deep")
    try:
        value = parse(text)
    except RecursionError:
        raise DataError(path, None, None, f"nested too deeply to read; no {what} nests more than "
                                          f"{MAX_DEPTH} levels") from None
    check_value(value, path, what)
    return value


class JSONSyntaxError(DataError):
    """Text that is not JSON (a caller reading JSON5 may try that next)."""


class DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def loads_json(text: str, path: Path | str, what: str, *, line: int | None = None) -> Any:
    """Strict JSON (NaN and Infinity as Python reads them): a syntax error, a key given twice in one
    object, nesting past MAX_DEPTH or a lone surrogate is a DataError naming the file and line."""
    def parse(t: str) -> Any:
        return json.loads(t, object_pairs_hook=_no_duplicates)

    try:
        return parse_bounded(parse, text, path, what, line_offset=(line - 1) if line else 0)
    except DuplicateKey as exc:
        raise DataError(path, line, exc.key, "given twice in one object; keep one") from None
    except json.JSONDecodeError as exc:
        at = (line if line is not None else exc.lineno)
        raise JSONSyntaxError(path, at, None, f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise DataError(path, line, None, f"invalid JSON: {exc}") from None


def output_problem(path: Path | str, *, folder: bool, option: str) -> str | None:
    """Why `path` cannot be written (as a folder when `folder`, else as a file), checked before any work
    starts: None when it can, else the sentence to print (naming the option)."""
    path = Path(path)
    kind = "folder" if folder else "file"
    for name in path.parts:
        if len(os.fsencode(name)) > 255:
            return f"{option} {str(path)[:80]}...: a name in it is longer than 255 bytes, which no file system takes; " \
                   "shorten it"
    if path.exists() or path.is_symlink():
        if folder and not path.is_dir():
            return f"{option} {path}: exists and is not a folder; give a folder (new or one of earlier results)"
        if not folder and path.is_dir():
            return f"{option} {path}: is a folder; give a file name"
        if not folder and not os.access(path, os.W_OK):
            return f"{option} {path}: cannot be written (permission denied or a read-only file system)"
    parent = path if folder and path.is_dir() else path.parent
    probe = parent
    while not probe.exists():  # the first existing folder on the way: it must be a writable folder
        if probe.is_symlink():
            return f"{option} {path}: {probe} is a broken symbolic link"
        probe = probe.parent
    if not probe.is_dir():
        return f"{option} {path}: {probe} is a file, not a folder; choose another {kind}"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{option} {path}: {probe} cannot be written (permission denied or a read-only file system)"
    real = os.path.realpath(probe)
    if real == "/proc" or real.startswith(("/proc/", "/sys/", "/dev/")) or real in ("/sys", "/dev"):
        return f"{option} {path}: {real} is a system folder, not one to write results to; choose another {kind}"
    return None


def looks_like_a_secret(text: str) -> bool:
    """A string that may be an API key or a token (long, no spaces or path separators, letters and digits
    mixed): error messages show its length instead of the string."""
    if len(text) < 16 or any(c.isspace() for c in text) or "/" in text or "\\" in text:
        return False
    letters = sum(c.isalpha() for c in text)
    digits = sum(c.isdigit() for c in text)
    return letters >= 4 and digits >= 4


def _holds_a_secret(value: Any, budget: int = 2000) -> bool:
    """Whether a key or value at any depth looks like a credential (the first `budget` strings looked at; past
    them, it is assumed to, so a huge value is never echoed)."""
    stack = [value]
    while stack:
        node = stack.pop()
        budget -= 1
        if budget < 0:
            return True
        if isinstance(node, str):
            if looks_like_a_secret(node):
                return True
        elif isinstance(node, dict):
            stack += [*node.keys(), *node.values()]
        elif isinstance(node, (list, tuple)):
            stack += list(node[:budget])
    return False


def shown(value: Any) -> str:
    """repr() of a value for an error message, never a string that looks like a credential."""
    if isinstance(value, str) and looks_like_a_secret(value):
        return f"a string of {len(value)} characters, not shown"
    if isinstance(value, (list, tuple, dict)) and _holds_a_secret(value):
        return f"a {type(value).__name__} holding a string that is not shown"
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def write_text_atomic(path: Path | str, text: str) -> Path:
    """`text` into `path` through a temporary file and a rename (a crash never leaves half a file); a full
    disk is a HarnessError naming the folder and the space the file needs."""
    path = Path(path)
    data = text.encode("utf-8")
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink()
        except OSError:
            pass
        if exc.errno == errno.ENOSPC:
            free = _free_bytes(path.parent)
            raise HarnessError(f"{path.parent}: no space left on the device for {path.name}, which needs "
                               f"{_size(len(data))}" + (f" ({_size(free)} free)" if free is not None else "")
                               + "; free that much there (or write elsewhere with --out) and run again; "
                               "the embeddings computed so far are kept in the cache") from None
        raise
    return path


def _free_bytes(folder: Path) -> int | None:
    try:
        import shutil

        return shutil.disk_usage(folder).free
    except OSError:
        return None


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
