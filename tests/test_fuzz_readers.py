"""Every reader fuzzed at its boundary (tests/fuzz_readers.py): a few generated inputs of each format in
`make test` (FUZZ_EXAMPLES each, 5 by default, fixed draws), more in `make reliability` (FUZZ_EXAMPLES there, and
its report in reports/reliability/fuzz.md).  A breach of the contract (exit 3, a hang, a silent acceptance, a valid
input refused or read otherwise than its neighbour, a secret in a message, a changed file) fails the target."""
from __future__ import annotations

import os

import pytest

from tests import fuzz_readers

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "5"))


@pytest.mark.parametrize("target", sorted(fuzz_readers.TARGETS))
def test_a_reader_keeps_its_contract_over_generated_inputs(target, tmp_path):
    fuzz_readers.run_target(target, EXAMPLES, tmp_path)
    tally = fuzz_readers.TALLY
    assert sum(t.examples for t in tally.values()) > 0
    assert all(t.internal == t.hangs == t.silent == t.false_refusals == t.secrets == t.changed == 0
               for t in tally.values())


def test_the_contract_catches_what_it_is_there_to_catch(tmp_path):
    """check() itself: an internal error, a silent acceptance, a refusal that does not name the field, a planted
    key in a message and a changed file are each a failure (so a green fuzz run means something)."""
    from harness.errors import DataError

    path = tmp_path / "f.txt"
    path.write_text("x", encoding="utf-8")

    def boom():
        raise ValueError("internal")

    def refuse(message):
        def read():
            raise DataError(path, None, None, message)
        return read

    def change():
        path.write_text("y", encoding="utf-8")

    with pytest.raises(ValueError):
        fuzz_readers.check("self-test", boom)
    with pytest.raises(AssertionError, match="was accepted"):
        fuzz_readers.check("self-test", lambda: 1, expect="invalid", field="a.b")
    with pytest.raises(AssertionError, match="does not name"):
        fuzz_readers.check("self-test", refuse("wrong"), expect="invalid", field="a.b")
    with pytest.raises(AssertionError, match="planted key"):
        fuzz_readers.check("self-test", refuse(f"bad key {fuzz_readers.SECRET}"))
    with pytest.raises(AssertionError, match="changed an input file"):
        fuzz_readers.check("self-test", change, files=(path,))
    with pytest.raises(AssertionError, match="valid input refused"):
        fuzz_readers.check("self-test", refuse("no"), expect="valid")
    with pytest.raises(AssertionError, match="its valid neighbour"):
        fuzz_readers.check("self-test", lambda: 2, expect="valid", neighbour=1)
    fuzz_readers.TALLY.pop("self-test")
