import sys

from fxlens.worker.process.startup import main

sys.exit(main())
