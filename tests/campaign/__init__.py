"""The bad-input campaign: generated malformed and hostile inputs through the real CLI (cases.py), run
in fork servers (runner.py), judged and reported (campaign.py).  `python -m tests.campaign --help`."""
