"""openclaw-home's judged@k beyond the configured setting (whose own top k is in the judging pool, so its
judged@k is 1 by construction): the sweep's other settings, summarised."""
from __future__ import annotations

import pandas as pd

from harness.cli.openclaw_home_report import judged_outside_pool


def test_the_configured_setting_is_left_out_and_unjudged_tops_are_counted():
    settings = pd.DataFrame({"judged@6": [1.0, 0.5, 1.0, float("nan"), 0.75]}, index=[10, 11, 12, 13, 14])
    out = judged_outside_pool(settings, "judged@6", configured=10)
    assert out == {"settings": 3, "min": 0.5, "median": 0.75, "max": 1.0, "below_one": 2}
    assert judged_outside_pool(settings.loc[[10]], "judged@6", configured=10) is None
