import sys

from fxlens.worker.startup import main

sys.exit(main())
