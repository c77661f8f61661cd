"""A worker process that runs queued thumbnail jobs, one at a time."""

from __future__ import annotations

import logging
import time

import psycopg

from jobs.tasks import run_task

log = logging.getLogger(__name__)


def claim_next(conn: psycopg.Connection) -> tuple[int, str, dict] | None:
    with conn.transaction():
        row = conn.execute(
            """
            SELECT id, task, payload FROM jobs
            WHERE status = 'queued'
            ORDER BY id
            LIMIT 1
            FOR UPDATE SKIP LOCKED
            """
        ).fetchone()
        if row is None:
            return None
        conn.execute("UPDATE jobs SET status = 'running', started_at = now() WHERE id = %s", (row[0],))
    return row


def finish(conn: psycopg.Connection, job_id: int, ok: bool) -> None:
    status = "done" if ok else "failed"
    with conn.transaction():
        conn.execute("UPDATE jobs SET status = %s, finished_at = now() WHERE id = %s", (status, job_id))


def main(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            job = claim_next(conn)
            if job is None:
                time.sleep(1)
                continue
            job_id, task, payload = job
            try:
                run_task(task, payload)
            except Exception:
                log.exception("job %s (%s) failed", job_id, task)
                finish(conn, job_id, ok=False)
            else:
                finish(conn, job_id, ok=True)
