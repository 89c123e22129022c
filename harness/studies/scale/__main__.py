"""`python -m harness.studies.scale`: the scale experiment's command line (as `harness scale`)."""
import sys

from harness.cli.scale import main

sys.exit(main())
