"""`python -m benchmarks.zoo`: the whole zoo (run.py)."""
import sys

from .run import main

sys.exit(main())
