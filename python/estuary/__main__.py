"""`python -m estuary ...`: the same command line as `estuary`."""
import sys

from estuary.cli import main

sys.exit(main())
