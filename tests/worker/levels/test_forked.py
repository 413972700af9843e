"""A forked call (worker/levels/forked.py) in a process that has other threads: the forked process has only
the thread that forked, and whatever keeps it from answering costs a bounded wait, never the trace."""

from __future__ import annotations

import os
import threading

import pytest
import torch
from fxlens.worker.levels.forked import ForkedCall, Lost


@pytest.fixture
def parallel_torch():
    """torch on two OpenMP threads, whose team exists once a kernel ran in parallel (as on any 2-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


def test_a_forked_process_runs_parallel_kernels_after_its_parent_ran_them(parallel_torch):
    norm, x = torch.nn.LayerNorm(16), torch.randn(64, 16)
    expected = norm(x).abs().sum().item()  # the parent's OpenMP team now exists; the forked process lacks it
    forked = ForkedCall(lambda: norm(x).abs().sum().item(), min_wait=10.0)
    assert forked.result() == pytest.approx(expected)


def test_a_forked_process_that_never_answers_is_stopped_and_said_lost():
    held = threading.Lock()
    held.acquire()  # held in the forked process too, where no thread will ever release it
    try:
        forked = ForkedCall(held.acquire, min_wait=0.5)
        pid = forked.pid
        with pytest.raises(Lost, match=r"did not answer within \d+ s and was stopped"):
            forked.result()
    finally:
        held.release()
    assert forked.pid == 0
    with pytest.raises(ChildProcessError):  # stopped and reaped
        os.waitpid(pid, os.WNOHANG)
