"""`python -m harness.studies.scale`: the scale experiment's command line (as `harness scale`)."""
import sys

from harness.studies.scale.run import main

sys.exit(main())
