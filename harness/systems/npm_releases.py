"""Is `openclaw@VERSION` a release?  Checked against the npm registry's own list before anything is installed.

`harness run --system openclaw@VERSION` installs Node 24 (~190 MB) and the release on first use; a typo'd
version would download Node first and only then learn from npm that the release does not exist.  So the
release is looked up first in the registry's version list (`npm view openclaw versions --json`), kept in the
conformance cache folder (openclaw-versions.json, with when it was fetched):

  - a version in the cached list is a release (npm never reuses a published version), nothing is asked;
  - otherwise, when the list is older than a day (FRESH_S), it is fetched again (the version may be a release
    newer than the cache) and the version checked;
  - not in the list: one line, exit 2, naming the nearest releases that exist;
  - the registry unreachable (no npm, offline, a timeout): one line saying so, with the nearest releases of
    the cached list when there is one; nothing is downloaded (the release could not be installed anyway).
A release already installed is never looked up (installed means it exists).
"""
from __future__ import annotations

import difflib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Callable, Sequence

from harness.errors import HarnessError
from harness.inputs.openclaw_releases import version_tuple

CACHE_FILE = "openclaw-versions.json"
FRESH_S = 86400.0  # a list fetched less than a day ago is not fetched again for a version it lacks
PACKAGE = "openclaw"


class UnknownRelease(HarnessError):
    """The version is not in the npm registry's list of the package's releases."""


class RegistryUnreachable(HarnessError):
    """The version list could not be fetched (no npm, offline, a timeout) and the cache does not hold it."""


def _key(version: str) -> tuple[int, ...]:
    return version_tuple(version, prerelease=True)  # 2026.9.6 < 2026.9.7-beta.1 < 2026.10.1


def nearest(version: str, releases: Sequence[str], n: int = 3) -> list[str]:
    """The releases nearest to `version`: the ones spelled most alike, and the ones just before and after it
    in release order; in release order, at most n + 2."""
    alike = difflib.get_close_matches(version, list(releases), n=n, cutoff=0.85)
    ordered = sorted(set(releases), key=_key)
    below = [r for r in ordered if _key(r) < _key(version)][-1:]
    above = [r for r in ordered if _key(r) > _key(version)][:1]
    return sorted(set(alike) | set(below) | set(above), key=_key)


def fetch_versions(timeout: float | None = None) -> list[str]:
    """The registry's version list of `openclaw`, by npm itself (RegistryUnreachable when it cannot)."""
    timeout = timeout if timeout is not None else float(os.environ.get("HARNESS_NPM_TIMEOUT", "60"))
    try:
        proc = subprocess.run(["npm", "view", PACKAGE, "versions", "--json"], capture_output=True, text=True,
                              timeout=timeout)
    except FileNotFoundError:
        raise RegistryUnreachable("npm is not on PATH") from None
    except subprocess.TimeoutExpired:
        raise RegistryUnreachable(f"`npm view {PACKAGE} versions` timed out after {timeout:g} s (offline?)") from None
    except OSError as exc:
        raise RegistryUnreachable(f"npm could not start ({exc.strerror})") from None
    if proc.returncode != 0:
        said = next((ln.strip() for ln in proc.stderr.splitlines() if ln.strip()), f"exit {proc.returncode}")
        raise RegistryUnreachable(f"`npm view {PACKAGE} versions` failed: {said}")
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        raise RegistryUnreachable(f"`npm view {PACKAGE} versions --json` did not answer JSON") from None
    versions = [doc] if isinstance(doc, str) else doc
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        raise RegistryUnreachable(f"`npm view {PACKAGE} versions --json` did not answer a list of versions")
    return versions


def _read_cache(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("versions"), list) or \
            not all(isinstance(v, str) for v in doc["versions"]):
        return None
    return doc


def _write_cache(path: Path, versions: list[str]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"package": PACKAGE, "fetched": time.time(), "versions": versions}) + "\n",
                       encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a cache that cannot be written is asked again next time


def check_release(version: str, cache_dir: Path, *, fetch: Callable[[], list[str]] = fetch_versions) -> str:
    """`version` when the registry lists it; how it was known ("cached list" or "registry"), else one of the
    errors above."""
    path = Path(cache_dir) / CACHE_FILE
    cached = _read_cache(path)
    if cached is not None and version in cached["versions"]:
        return "cached list"
    fetched = cached.get("fetched") if cached is not None else None
    fetched = fetched if isinstance(fetched, (int, float)) and not isinstance(fetched, bool) else None
    if cached is not None and fetched is not None and 0 <= time.time() - fetched < FRESH_S:
        raise UnknownRelease(_unknown(version, cached["versions"], "is not a release on the npm registry", ""))
    try:
        versions = fetch()
    except RegistryUnreachable as exc:
        if cached is not None:
            day = time.strftime("%Y-%m-%d", time.gmtime(fetched)) if fetched is not None else "earlier"
            raise UnknownRelease(_unknown(version, cached["versions"], f"is not in the npm registry's release list "
                                          f"as cached {day}", f"; the registry cannot be asked for newer ones now "
                                          f"({exc})")) from None
        raise RegistryUnreachable(f"openclaw {version}: cannot check the release against the npm registry's list "
                                  f"({exc}); offline, it can be neither checked nor installed, so nothing was "
                                  "downloaded: run it again online") from None
    _write_cache(path, versions)
    if version in versions:
        return "registry"
    raise UnknownRelease(_unknown(version, versions, "is not a release on the npm registry", ""))


def _unknown(version: str, versions: Sequence[str], what: str, after: str) -> str:
    near = nearest(version, versions)
    newest = max(versions, key=_key) if versions else None
    return (f"openclaw {version} {what} ({len(versions)} releases listed"
            f"{', the newest ' + newest if newest else ''}{after}); the nearest: {', '.join(near) or 'none'}. "
            "Nothing was installed")
