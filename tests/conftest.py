import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

# `fxlens check` caches its reports; a test run keeps its own cache, never the user's
os.environ["FXLENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="fxlens-test-cache-")
