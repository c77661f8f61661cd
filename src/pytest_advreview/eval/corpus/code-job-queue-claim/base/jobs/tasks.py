"""The tasks a job can name."""

from __future__ import annotations

from typing import Any

from jobs import thumbnails


def run_task(task: str, payload: dict[str, Any]) -> None:
    if task == "thumbnail":
        thumbnails.render(payload["image_key"], payload["sizes"])
    else:
        raise ValueError(f"unknown task {task!r}")
