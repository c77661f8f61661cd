"""The progress display reads the end of a long stream only, and finds its latest activity."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_advreview import progress


def _event(kind: str, item_type: str, **extra: object) -> bytes:
    item = {"id": "x", "type": item_type, **extra}
    return json.dumps({"type": kind, "item": item}).encode() + b"\n"


def test_a_stream_of_megabytes_is_read_from_its_last_part_and_the_newest_activity_wins(
    tmp_path: Path,
) -> None:
    stream = tmp_path / "stream.jsonl"
    noise = _event("item.completed", "command_execution", command="cat old", exit_code=0)
    noise = noise.replace(b'"x"', b'"' + b"n" * 900 + b'"')
    with stream.open("wb") as fh:
        fh.write(_event("item.started", "reasoning"))
        for _ in range(3000):  # about 3 MB of a tool's output
            fh.write(noise)
        fh.write(_event("item.started", "command_execution", command="pytest -q"))
        fh.write(_event("item.completed", "unknown_kind"))  # says nothing: skipped
    entry = progress._Entry(started=0.0, stream=stream)
    entry.follow()
    assert entry.activity == "running: pytest -q"
    assert entry.offset == stream.stat().st_size  # caught up, not 64 KB at a time

    with stream.open("ab") as fh:
        fh.write(_event("item.started", "agent_message"))
        fh.write(b'{"type": "turn.st')  # a line still being written
    entry.follow()
    assert entry.activity == "writing the review"
    assert stream.read_bytes()[entry.offset :] == b'{"type": "turn.st'
