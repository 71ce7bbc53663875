"""The cyclic garbage collector is paused for a bulk step and left as the step found it."""

from __future__ import annotations

import gc
import weakref

import pytest

from apps.core.collector import cyclic_collector_paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_inside_and_running_again_after(collector_on):
    with cyclic_collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_running_again_after_an_error(collector_on):
    with pytest.raises(RuntimeError), cyclic_collector_paused():
        raise RuntimeError("the step failed")
    assert gc.isenabled()


def test_a_nested_block_leaves_it_paused_until_the_outer_one_ends(collector_on):
    with cyclic_collector_paused():
        with cyclic_collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_paused_before_stays_paused(collector_on):
    gc.disable()
    with cyclic_collector_paused():
        pass
    assert not gc.isenabled()


def test_cycles_made_inside_are_left_to_the_next_pass(collector_on):
    class Node:
        other: Node

    with cyclic_collector_paused():
        first, second = Node(), Node()
        first.other, second.other = second, first
        alive = weakref.ref(first)
        del first, second
        gc.collect()
        # Paused: an explicit collection still runs, as the collector's own passes do not.
        assert alive() is None
        first, second = Node(), Node()
        first.other, second.other = second, first
        alive = weakref.ref(first)
        del first, second
        assert alive() is not None
    gc.collect()
    assert alive() is None
