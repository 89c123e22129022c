"""`python -m harness.cli.openclaw_home_speed` (`make openclaw-home-speed`): the own-agent path's speed on a
generated installation, measured by harness.studies.openclaw_home_speed, written to reports/openclaw-home/speed.json."""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.reporting.documents import write_document
from harness.studies import openclaw_home_speed


def main() -> int:
    import argparse
    import platform

    from harness.judging.page import HOST  # noqa: F401  (the page answers on loopback only)

    parser = argparse.ArgumentParser(description=openclaw_home_speed.__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports/openclaw-home/speed.json"))
    args = parser.parse_args()
    sessions = int(os.environ.get("HARNESS_SPEED_SESSIONS", "10000"))
    vectors = int(os.environ.get("HARNESS_SPEED_VECTORS", "100000"))
    from shutil import which

    chromium = next(filter(None, map(which, ("chromium", "chromium-browser", "google-chrome"))), None)
    doc: dict[str, Any] = {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                           "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="openclaw-speed-") as tmp:
        t0 = time.perf_counter()
        home = openclaw_home_speed.generate_sessions(Path(tmp), sessions)
        doc["generation_seconds"] = time.perf_counter() - t0
        doc["mining"] = openclaw_home_speed.measure_mining(home)
    doc["page"] = openclaw_home_speed.measure_page(50, chromium=chromium)
    doc["vectors"] = openclaw_home_speed.measure_import(vectors)
    write_document(args.out, "openclaw-home-speed", doc)
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
