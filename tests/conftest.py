import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

# `fxlens check` caches its reports; a test run keeps its own cache, never the user's
os.environ["FXLENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="fxlens-test-cache-")
# the inductor level's private folder (worker/levels/inductor_cache.py), never the user's: kept between runs,
# so inductor's CPU probes (a few g++ runs) are compiled once per machine, not once per test run
os.environ.setdefault("FXLENS_INDUCTOR_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"fxlens-test-inductor-{os.getuid()}"))
