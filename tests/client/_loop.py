"""Run a coroutine on a fresh event loop in its own thread.

The session's browser fixture keeps Playwright's sync API (and its event loop) alive in the
main thread for the rest of the run, so ``asyncio.run`` there refuses to start; the async
client's tests must not depend on whether a browser test ran first on the same worker.
"""

import asyncio
from concurrent.futures import ThreadPoolExecutor


def run_in_own_loop(coroutine):
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
