import pytest_asyncio
from hostile_support import TrackedWorker


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def worker():
    """One real warm worker per test file, with its process tree tracked: when the file is done, nothing it
    started is left running."""
    tracked = TrackedWorker()
    await tracked.start()
    yield tracked
    await tracked.client.stop()
    assert tracked.leftovers() == []
