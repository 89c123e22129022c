"""Profiles enforce their memory cap (in a child process, so the test runner keeps its own limits)."""
import subprocess
import sys
import textwrap

import pytest

from harness.profiles import GIB, get_profile, profile_from_config


def run_child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)


def test_vps_cap_is_enforced_by_the_kernel():
    child = run_child("""
        import numpy as np
        from harness.profiles import apply_profile, get_profile
        applied = apply_profile(get_profile("vps"))
        small = np.ones(100 * 2**20 // 8)          # 100 MiB fits
        try:
            big = np.ones(5 * 2**30 // 8)          # 5 GiB does not
        except MemoryError:
            print("refused", applied["enforced_address_space_limit"])
    """)
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["refused", str(int(3.8 * GIB))]


def test_a_run_that_breaks_its_cap_stops_with_a_clear_message():
    child = run_child("""
        from harness.config import load_experiment
        from harness.studies.experiment import run_experiment
        from harness.errors import ProfileLimitExceeded
        config = load_experiment("experiments/round3.toml", profile={"name": "vps", "memory_cap_gib": 0.05})
        try:
            run_experiment(config, progress=False)
        except ProfileLimitExceeded as exc:
            print("STOPPED:", exc)
    """)
    # the cap as the experiment set it, in the file that set it; nothing was written (issue 30)
    assert ("STOPPED: experiments/round3.toml: the run exceeded the 0.05 GiB of [profile] memory_cap_gib = 0.05 "
            "(on the 'vps' profile)") in child.stdout, child.stdout + child.stderr
    assert "results were written" not in child.stdout and "stopped before writing results" in child.stdout


def test_profile_overrides_and_unknown_names():
    assert profile_from_config({"name": "vps"}).threads == 2
    assert profile_from_config({"name": "vps", "memory_cap_gib": 2}).memory_cap_bytes == 2 * GIB
    assert profile_from_config(None).memory_cap_bytes is None
    with pytest.raises(ValueError, match="unknown profile"):
        get_profile("mainframe")
    with pytest.raises(ValueError, match="unknown key"):
        profile_from_config({"name": "vps", "ram": 4})
