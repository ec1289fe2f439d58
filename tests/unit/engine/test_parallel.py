"""Two processes taking units of work in turn (engine/parallel.py)."""
from __future__ import annotations

import os
import time

import pytest

from replayci.engine import parallel

pytestmark = pytest.mark.skipif(not parallel.fork_safe(), reason="needs fork and two CPUs")


def test_every_unit_is_done_once_and_both_processes_take_some():
    def work(taken):
        for n in taken:
            time.sleep(0.002)  # long enough for the child to start taking units too
            yield n, os.getpid()

    done = parallel.by_units(60, work)
    assert sorted(done) == list(range(60))
    assert set(done.values()) >= {os.getpid()} and len(set(done.values())) == 2


def test_a_slow_process_takes_fewer_units():
    parent = os.getpid()

    def work(taken):
        for n in taken:
            time.sleep(0.02 if os.getpid() == parent else 0.002)
            yield n, os.getpid()

    done = parallel.by_units(40, work)
    mine = sum(1 for pid in done.values() if pid == parent)
    assert sorted(done) == list(range(40)) and mine < 20


def test_units_a_dead_child_took_are_done_here():
    parent = os.getpid()

    def work(taken):
        for i, n in enumerate(taken):
            if os.getpid() != parent and i == 2:
                os._exit(3)  # the child dies holding its third unit, after sending two
            time.sleep(0.003)
            yield n, os.getpid()

    done = parallel.by_units(30, work)
    assert sorted(done) == list(range(30))
    assert len([pid for pid in done.values() if pid != parent]) == 2


def test_no_more_units_than_the_pipe_holds():
    with pytest.raises(ValueError):
        parallel.by_units(parallel.MAX_UNITS + 1, lambda taken: iter(()))


def test_units_cover_each_position_once_largest_first():
    costs = [[5] * 200, [1000], [], [3, 4]]
    units = parallel.plan_units(costs)
    covered = [(k, i) for unit in units for k, positions in unit for i in positions]
    assert sorted(covered) == [(k, i) for k, row in enumerate(costs) for i in range(len(row))]
    sizes = [sum(costs[k][i] for k, positions in unit for i in positions) for unit in units]
    assert sizes == sorted(sizes, reverse=True) and (1, range(0, 1)) in units[0]
    total = sum(map(sum, costs))
    assert all(size < 2 * total / parallel.UNITS for size in sizes[1:])


def test_many_small_packs_share_units():
    units = parallel.plan_units([[1]] * 5000)  # more packs than the pipe holds unit numbers
    assert len(units) <= parallel.MAX_UNITS
    assert sorted(k for unit in units for k, _ in unit) == list(range(5000))


def test_results_cross_the_pipe_whole():
    import dataclasses
    import pickle

    from replayci.checks.failure import Failure
    from replayci.engine.results import CaseResult

    failure = Failure("wrong_tool", "m", "$.a", "equals", None, {"x": [1]}, "2", "c.yaml:3")
    result = CaseResult("p", "c", "case", "fail", "wrong_tool", None, "0a1b2c3d", (failure,),
                        True, 1.5, "c.yaml:9", "edge_case", ("t",), False, "wrong_tool", True,
                        {"success": True}, 2, 12.0, 0.1, 7, 0.5, {"k": "v"}, (0, 1, 2), ("f", 3, 4))
    back = pickle.loads(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    assert [getattr(back, f.name) for f in dataclasses.fields(CaseResult)] == \
        [getattr(result, f.name) for f in dataclasses.fields(CaseResult)]
    assert back.failures[0] == failure


def test_large_values_arrive_whole_while_this_process_works():
    parent = os.getpid()

    def work(taken):
        for n in taken:
            if os.getpid() == parent:
                time.sleep(0.01)  # the child sends several MiB meanwhile, more than a pipe holds
            yield n, (os.getpid(), bytes([n % 251]) * 400_000)

    done = parallel.by_units(24, work)
    assert sorted(done) == list(range(24))
    assert all(value == bytes([n % 251]) * 400_000 for n, (_, value) in done.items())
    assert len({pid for pid, _ in done.values()}) == 2
