"""Full garbage collections wait until the editor is idle (`tapelint.server.collection`)."""

from __future__ import annotations

import asyncio
import gc

from tapelint.server.collection import IdleCollection


def test_the_oldest_generation_is_collected_only_when_asked_while_serving():
    before = gc.get_threshold()
    collection = IdleCollection(lambda work: None)
    collection.start()
    try:
        young, middle, oldest = gc.get_threshold()
        assert (young, middle) == before[:2] and oldest > 1_000_000
    finally:
        collection.stop()
    assert gc.get_threshold() == before


def test_a_collection_runs_once_no_check_has_ended_for_the_delay():
    submitted: list[object] = []

    async def scenario() -> None:
        collection = IdleCollection(submitted.append, delay=0.05)
        for _ in range(4):  # checks in quick succession: each postpones the collection
            collection.checked()
            await asyncio.sleep(0.01)
        assert submitted == []
        await asyncio.sleep(0.1)
        assert submitted == [gc.collect]
        collection.checked()
        collection.stop()  # shutting down: nothing more
        await asyncio.sleep(0.1)
        assert submitted == [gc.collect]

    asyncio.run(scenario())
