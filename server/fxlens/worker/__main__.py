import sys

from fxlens.worker.process import main

sys.exit(main())
