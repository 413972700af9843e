import sys

from fxlens.cli import main

sys.exit(main())
