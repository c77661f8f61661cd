"""The readers of Codex's event stream while it runs (the connect watch, the progress
display) hold one chunk of it at a time, however much Codex wrote since their last look,
and still see every event in order.  (Peak memory itself is benchmark row 7.)"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from pytest_advreview.runner import reachability as r


def _stream(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def test_a_big_stream_is_read_a_chunk_at_a_time_every_event_in_order(tmp_path: Path) -> None:
    stream = tmp_path / "events.jsonl"
    events = [{"type": "item.started", "n": n, "pad": "x" * 200} for n in range(15_000)]
    _stream(stream, [json.dumps(e).encode() for e in events])  # about 3.3 MB

    seen: list[object] = []
    offsets = [0]
    for batch, after in r.event_batches(stream, 0):
        seen.extend(e["n"] for e in batch)
        offsets.append(after)

    assert seen == list(range(15_000))
    assert offsets[-1] == stream.stat().st_size
    assert max(b - a for a, b in itertools.pairwise(offsets)) <= r.READ_CHUNK
    assert len(offsets) > stream.stat().st_size // r.READ_CHUNK


def test_a_line_longer_than_a_chunk_is_still_parsed_up_to_the_limit(tmp_path: Path) -> None:
    stream = tmp_path / "events.jsonl"
    long = json.dumps({"type": "item.completed", "out": "y" * (3 * r.READ_CHUNK)}).encode()
    huge = b'{"type": "item.completed", "out": "' + b"z" * r.READ_LIMIT + b'"}'
    _stream(stream, [long, huge, b'{"type": "turn.completed"}'])

    kinds = [e["type"] for batch, _ in r.event_batches(stream, 0) for e in batch]

    assert kinds == ["item.completed", "turn.completed"]  # the huge one is skipped


def test_the_connect_watch_catches_up_with_the_whole_stream_in_one_look(tmp_path: Path) -> None:
    stream = tmp_path / "events.jsonl"
    failed = {"type": "error", "message": "Reconnecting... 1/5 (error sending request)"}
    filler = {"type": "item.started", "item": {"type": "reasoning"}, "pad": "p" * 300}
    lines = [json.dumps(filler).encode()] * 4_000 + [json.dumps(failed).encode()] * 3
    _stream(stream, lines)  # the failures come after more than 1 MB of answers
    watch = r.ConnectWatch(stream, lambda: False, budget=30.0)

    watch._follow(0.0)

    assert watch.tries == 3
    assert watch._offset == stream.stat().st_size
