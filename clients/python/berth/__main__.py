"""`python -m berth …`: runs berth (the bundled executable, else as berth.find_berth() finds it)."""

import sys

from berth import main

sys.exit(main())
