"""Run a composite action's steps locally, the way the GitHub runner would.

:class:`LocalRunner` reads ``action.yml``, evaluates each step's ``if:`` and the
``${{ … }}`` expressions of its ``env:``/``with:`` with a small evaluator (contexts
``inputs``, ``steps``, ``github``, ``runner``, ``env``; ``==``, ``!=``, ``&&``, ``||``, ``!``
and the status functions), runs every ``run:`` script with ``bash -eo pipefail`` and the
variables the runner sets (``GITHUB_OUTPUT`` per step, ``GITHUB_ENV``,
``GITHUB_STEP_SUMMARY``, ``GITHUB_ACTION_PATH``, ``GITHUB_WORKSPACE``, ``GITHUB_EVENT_PATH``
…), and stands in for ``actions/cache/restore`` and ``actions/cache/save`` by copying the
cached folders to and from a local store (exact key first, then the newest entry whose key
starts with a restore key; an existing key is never overwritten, as on GitHub).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import yaml

__all__ = ["ActionResult", "GitHubAPI", "LocalRunner", "clean_env", "evaluate", "substitute"]

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\)|,)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_*][A-Za-z0-9_-]*)*))"
)


class _Parser:
    """Recursive descent over the expression grammar the action uses."""

    def __init__(self, text: str, contexts: Mapping[str, Any], status: Mapping[str, bool]):
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                raise ValueError(f"cannot parse expression at {text[pos:]!r}")
            kind = match.lastgroup
            assert kind is not None
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.pos = 0
        self.contexts = contexts
        self.status = status
        self.uses_status = False

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (value is not None and token[1] != value):
            raise ValueError(f"expected {value!r}, got {token!r}")
        self.pos += 1
        return token

    def parse(self) -> Any:
        value = self.or_()
        if self.peek() is not None:
            raise ValueError(f"unexpected {self.peek()!r}")
        return value

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == ("op", "||"):
            self.take()
            right = self.and_()
            value = value if _truthy(value) else right
        return value

    def and_(self) -> Any:
        value = self.not_()
        while self.peek() == ("op", "&&"):
            self.take()
            right = self.not_()
            value = right if _truthy(value) else value
        return value

    def not_(self) -> Any:
        if self.peek() == ("op", "!"):
            self.take()
            return not _truthy(self.not_())
        return self.cmp()

    def cmp(self) -> Any:
        left = self.primary()
        token = self.peek()
        if token in (("op", "=="), ("op", "!=")):
            self.take()
            right = self.primary()
            equal = _loose(left) == _loose(right)
            return equal if token == ("op", "==") else not equal
        return left

    def primary(self) -> Any:
        kind, value = self.take()
        if kind == "str":
            return value[1:-1].replace("''", "'")
        if kind == "num":
            return float(value)
        if value == "(":
            inner = self.or_()
            self.take(")")
            return inner
        if kind != "name":
            raise ValueError(f"unexpected {value!r}")
        if self.peek() == ("op", "("):
            self.take("(")
            self.take(")")
            self.uses_status = True
            return self.status[value]
        if value in ("true", "false"):
            return value == "true"
        if value == "null":
            return None
        current: Any = self.contexts
        for part in value.split("."):
            current = current.get(part) if isinstance(current, Mapping) else None
        return current


def _truthy(value: Any) -> bool:
    return value not in (None, False, "", 0, 0.0)


def _loose(value: Any) -> Any:
    # GitHub compares strings case-insensitively.
    return value.lower() if isinstance(value, str) else value


def evaluate(
    text: str, contexts: Mapping[str, Any], status: Mapping[str, bool] | None = None
) -> tuple[Any, bool]:
    """The value of expression ``text`` and whether it called a status function."""
    parser = _Parser(text, contexts, status or {"always": True, "success": True, "failure": False})
    return parser.parse(), parser.uses_status


_EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def substitute(text: str, contexts: Mapping[str, Any]) -> str:
    """``text`` with every ``${{ expr }}`` replaced by its value (null → empty)."""

    def one(match: re.Match[str]) -> str:
        value, _ = evaluate(match.group(1), contexts)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)

    return _EXPR.sub(one, text)


def _read_outputs(path: Path) -> dict[str, str]:
    outputs: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delimiter = line.split("<<", 1)
            body: list[str] = []
            i += 1
            while lines[i] != delimiter:
                body.append(lines[i])
                i += 1
            outputs[key] = "\n".join(body)
        elif "=" in line:
            key, value = line.split("=", 1)
            outputs[key] = value
        i += 1
    return outputs


@dataclass
class ActionResult:
    """What one run of the action did."""

    #: True when every step that ran succeeded.
    ok: bool
    #: The action's outputs (``outputs:`` of action.yml, evaluated).
    outputs: dict[str, str]
    #: Step id (or name) → its outputs.
    steps: dict[str, dict[str, str]]
    #: Names of the steps that ran, with their exit codes.
    ran: list[tuple[str, int]]
    #: Everything the steps printed (stdout and stderr).
    log: str
    #: The step summary all steps appended to.
    summary: str


@dataclass
class LocalRunner:
    """Runs ``action.yml`` of ``action_path`` in ``workspace`` like the runner would."""

    action_path: Path
    workspace: Path
    runner_temp: Path
    cache_store: Path
    env: dict[str, str]
    event_name: str
    event: dict[str, Any]
    run_id: int = 1
    run_attempt: int = 1
    github: dict[str, Any] = field(default_factory=dict)

    def run(self, inputs: Mapping[str, str]) -> ActionResult:
        """Run every step once; return the outputs, logs and summary."""
        action = yaml.safe_load((self.action_path / "action.yml").read_text(encoding="utf-8"))
        self.runner_temp.mkdir(parents=True, exist_ok=True)
        files = self.runner_temp.parent / f"{self.runner_temp.name}-files-{self.run_id}"
        files.mkdir(parents=True, exist_ok=True)
        event_path = files / "event.json"
        event_path.write_text(json.dumps(self.event), encoding="utf-8")
        summary = files / "step_summary.md"
        github_env = files / "github_env"
        summary.touch()
        github_env.touch()
        resolved_inputs = {
            name: str(spec.get("default", "")) for name, spec in action["inputs"].items()
        }
        unknown = set(inputs) - set(resolved_inputs)
        assert not unknown, f"the action has no inputs {sorted(unknown)}"
        resolved_inputs.update(inputs)
        base_env = {
            **self.env,
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": str(self.action_path),
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_EVENT_NAME": self.event_name,
            "GITHUB_RUN_ID": str(self.run_id),
            "GITHUB_RUN_ATTEMPT": str(self.run_attempt),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_ENV": str(github_env),
            "RUNNER_TEMP": str(self.runner_temp),
        }
        for key, value in self.github.items():
            if isinstance(value, str):
                base_env["GITHUB_" + key.upper()] = value
        github = {
            "event": self.event,
            "event_name": self.event_name,
            "run_id": str(self.run_id),
            "run_attempt": str(self.run_attempt),
            "workspace": str(self.workspace),
            "token": "local-token",
            **self.github,
        }
        steps: dict[str, dict[str, str]] = {}
        ran: list[tuple[str, int]] = []
        log: list[str] = []
        failed = False
        for index, step in enumerate(action["runs"]["steps"]):
            name = step.get("id") or step.get("name") or f"step{index}"
            contexts = {
                "inputs": resolved_inputs,
                "steps": {k: {"outputs": v} for k, v in steps.items()},
                "github": github,
                "runner": {"temp": str(self.runner_temp), "os": "Linux"},
                "env": base_env,
            }
            status = {"always": True, "success": not failed, "failure": failed}
            condition = str(step.get("if", "success()"))
            value, uses_status = evaluate(
                condition.removeprefix("${{").removesuffix("}}"), contexts, status
            )
            if not (_truthy(value) and (uses_status or not failed)):
                continue
            step_env = {
                key: substitute(str(val), contexts) for key, val in (step.get("env") or {}).items()
            }
            if "run" in step:
                code, outputs, text = self._run_script(
                    step["run"], contexts, base_env, github_env, step_env, files / f"out-{index}"
                )
            else:
                code, outputs, text = self._uses(step, contexts)
            steps[name] = outputs
            ran.append((name, code))
            log.append(f"--- {name} (exit {code})\n{text}")
            if code != 0:
                failed = True
        contexts = {
            "inputs": resolved_inputs,
            "steps": {k: {"outputs": v} for k, v in steps.items()},
            "github": github,
            "runner": {"temp": str(self.runner_temp)},
        }
        outputs = {
            name: substitute(str(spec["value"]), contexts)
            for name, spec in action["outputs"].items()
        }
        return ActionResult(
            ok=not failed,
            outputs=outputs,
            steps=steps,
            ran=ran,
            log="\n".join(log),
            summary=summary.read_text(encoding="utf-8"),
        )

    def _run_script(
        self,
        script: str,
        contexts: Mapping[str, Any],
        base_env: Mapping[str, str],
        github_env: Path,
        step_env: Mapping[str, str],
        output_file: Path,
    ) -> tuple[int, dict[str, str], str]:
        text = substitute(script, contexts)
        script_file = output_file.with_suffix(".sh")
        script_file.write_text(text, encoding="utf-8")
        output_file.touch()
        env = {**base_env, **_read_outputs(github_env), **step_env}
        env["GITHUB_OUTPUT"] = str(output_file)
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        return proc.returncode, _read_outputs(output_file), proc.stdout + proc.stderr

    def _uses(
        self, step: Mapping[str, Any], contexts: Mapping[str, Any]
    ) -> tuple[int, dict[str, str], str]:
        uses = str(step["uses"])
        with_ = {k: substitute(str(v), contexts) for k, v in (step.get("with") or {}).items()}
        paths = [Path(line.strip()) for line in with_.get("path", "").splitlines() if line.strip()]
        if uses.startswith("actions/cache/restore@"):
            return self._restore(with_["key"], with_.get("restore-keys", ""), paths)
        if uses.startswith("actions/cache/save@"):
            return self._save(with_["key"], paths)
        raise AssertionError(f"LocalRunner cannot stand in for {uses}")

    def _entries(self) -> list[Path]:
        if not self.cache_store.is_dir():
            return []
        return sorted(self.cache_store.iterdir(), key=lambda p: p.stat().st_mtime_ns)

    def _restore(
        self, key: str, restore_keys: str, paths: list[Path]
    ) -> tuple[int, dict[str, str], str]:
        entries = {entry.name: entry for entry in self._entries()}
        chosen = entries.get(_safe(key))
        if chosen is None:
            for prefix in [line.strip() for line in restore_keys.splitlines() if line.strip()]:
                matching = [e for e in self._entries() if e.name.startswith(_safe(prefix))]
                if matching:
                    chosen = matching[-1]
                    break
        if chosen is None:
            return 0, {"cache-hit": "false"}, f"Cache not found for input keys: {key}"
        for i, path in enumerate(paths):
            stored = chosen / str(i)
            if stored.exists():
                shutil.rmtree(path, ignore_errors=True)
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(stored, path, symlinks=True)
        return 0, {"cache-hit": str(chosen.name == _safe(key)).lower()}, f"restored {chosen.name}"

    def _save(self, key: str, paths: list[Path]) -> tuple[int, dict[str, str], str]:
        target = self.cache_store / _safe(key)
        if target.exists():
            return 0, {}, f"Cache entry {key} exists; not saved"
        existing = [(i, p) for i, p in enumerate(paths) if p.exists()]
        if not existing:
            return 0, {}, "Path Validation Error: no path exists; no cache is saved"
        target.mkdir(parents=True)
        for i, path in existing:
            shutil.copytree(path, target / str(i), symlinks=True)
        return 0, {}, f"saved {key}"


def _safe(key: str) -> str:
    return key.replace("/", "%2F")


def clean_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test process's environment without anything GitHub Actions would set."""
    env = dict(os.environ if base is None else base)
    for name in list(env):
        if name.startswith(("GITHUB_", "RUNNER_", "PYTEST_", "ADVREVIEW_ACTION_")):
            del env[name]
    return env


#: Request-body schemas of the endpoints the action writes to, from GitHub's published
#: REST description (``tests/data/github-rest/README.md``).
REST_REQUESTS = Path(__file__).parent / "data" / "github-rest" / "requests.json"


def _rest_schemas() -> list[tuple[str, re.Pattern[str], str, dict[str, Any]]]:
    """``(method, path pattern, operation id, schema)`` per operation of REST_REQUESTS."""
    data = json.loads(REST_REQUESTS.read_text(encoding="utf-8"))
    table = []
    for operation, spec in data["operations"].items():
        pattern = re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(spec["path"]))
        table.append((spec["method"], re.compile(pattern + r"\Z"), operation, spec["schema"]))
    return table


class GitHubAPI:
    """A loopback stand-in for the few GitHub REST endpoints the action calls.

    Collaborator permissions (``permissions``: user → permission), the issue comments of
    pull requests (``comments``: number → list of ``{"id", "body", "user"}``), and a pull
    request's files (``files``), review comments (``review_comments``) and reviews
    (``reviews``); what is posted is written by ``login``.  Every request is logged in
    ``calls`` as ``(method, path, json body or None, Authorization header)``; every request
    body is validated against GitHub's published schema of its operation (a write to an
    endpoint without one is refused too): a request GitHub would reject is answered 422
    and kept in ``invalid``.
    """

    def __init__(self, repo: str, login: str = "github-actions[bot]") -> None:
        self.repo = repo
        self.login = login
        self.permissions: dict[str, str] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.files: dict[int, list[dict[str, Any]]] = {}
        self.review_comments: dict[int, list[dict[str, Any]]] = {}
        self.reviews: dict[int, list[dict[str, Any]]] = {}
        #: Pull requests by number (``{"number", "head": {"sha"}}``) and the gate's workflow
        #: runs (``{"id", "workflow", "head_sha", "event", "status"}``); re-run ids land in
        #: ``reruns``.
        self.pulls: dict[int, dict[str, Any]] = {}
        self.runs: list[dict[str, Any]] = []
        self.reruns: list[int] = []
        self.calls: list[tuple[str, str, Any, str | None]] = []
        self.invalid: list[str] = []
        self._schemas = _rest_schemas()
        self._next_id = 100
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, status: int, payload: Any) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                data = json.loads(self.rfile.read(length)) if length else None
                api.calls.append((method, self.path, data, self.headers.get("Authorization")))
                status, payload = api.route(method, self.path, data)
                self._answer(status, payload)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PATCH(self) -> None:
                self._handle("PATCH")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _check(self, method: str, path: str, data: Any) -> str | None:
        """Why GitHub would reject this write, or ``None``."""
        if method == "GET":
            return None
        for verb, pattern, operation, schema in self._schemas:
            if verb == method and pattern.match(path):
                try:
                    jsonschema.validate(data, schema)
                except jsonschema.ValidationError as exc:
                    return f"{operation}: {exc.message}"
                return None
        return f"{method} {path}: no published request schema in {REST_REQUESTS.name}"

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _user(self) -> dict[str, str]:
        return {"login": self.login}

    def route(self, method: str, path: str, data: Any) -> tuple[int, Any]:
        """The answer to one request."""
        base = f"/repos/{self.repo}"
        path, _, query = path.partition("?")
        problem = self._check(method, path, data)
        if problem is not None:
            self.invalid.append(problem)
            return 422, {"message": "Validation Failed", "errors": [problem]}
        params = dict(p.split("=", 1) for p in query.split("&") if p)
        page, per_page = int(params.get("page", "1")), int(params.get("per_page", "30"))

        def paged(entries: list[dict[str, Any]]) -> tuple[int, Any]:
            return 200, entries[(page - 1) * per_page : page * per_page]

        if m := re.fullmatch(rf"{base}/pulls/(\d+)/(files|comments|reviews)", path):
            number, what = int(m.group(1)), m.group(2)
            if method == "GET":
                store = {"files": self.files, "comments": self.review_comments}
                return paged(store.get(what, self.reviews).setdefault(number, []))
            if what == "reviews":
                return 200, self._create_review(number, data)
        if method == "POST" and (
            m := re.fullmatch(rf"{base}/pulls/(\d+)/comments/(\d+)/replies", path)
        ):
            thread = self.review_comments.setdefault(int(m.group(1)), [])
            if not any(c["id"] == int(m.group(2)) for c in thread):
                return 404, {"message": "Not Found"}
            reply = {
                "id": self._id(),
                "body": data["body"],
                "user": self._user(),
                "in_reply_to_id": int(m.group(2)),
            }
            thread.append(reply)
            return 201, reply
        found = self._actions(method, path, params)
        if found is not None:
            return found
        if method == "GET" and (
            m := re.fullmatch(rf"{base}/collaborators/([^/]+)/permission", path)
        ):
            return 200, {"permission": self.permissions.get(m.group(1), "none")}
        if m := re.fullmatch(rf"{base}/issues/(\d+)/comments", path):
            comments = self.comments.setdefault(int(m.group(1)), [])
            if method == "GET":
                return paged(comments)
            comments.append({"id": self._id(), "body": data["body"], "user": self._user()})
            return 201, comments[-1]
        if method == "PATCH" and (m := re.fullmatch(rf"{base}/issues/comments/(\d+)", path)):
            for comments in self.comments.values():
                for comment in comments:
                    if comment["id"] == int(m.group(1)):
                        comment["body"] = data["body"]
                        return 200, comment
        return 404, {"message": "Not Found"}

    def _actions(self, method: str, path: str, params: dict[str, str]) -> tuple[int, Any] | None:
        """A pull request, the runs of a workflow, and a re-run (``None``: another route)."""
        base = f"/repos/{self.repo}"
        if method == "GET" and (m := re.fullmatch(rf"{base}/pulls/(\d+)", path)):
            pull = self.pulls.get(int(m.group(1)))
            return (200, pull) if pull is not None else (404, {"message": "Not Found"})
        if method == "GET" and (m := re.fullmatch(rf"{base}/actions/workflows/([^/]+)/runs", path)):
            runs = [
                run
                for run in self.runs
                if run["workflow"] == m.group(1)
                and params.get("head_sha", run["head_sha"]) == run["head_sha"]
            ]
            return 200, {"total_count": len(runs), "workflow_runs": runs}
        if method == "POST" and (m := re.fullmatch(rf"{base}/actions/runs/(\d+)/rerun", path)):
            if not any(run["id"] == int(m.group(1)) for run in self.runs):
                return 404, {"message": "Not Found"}
            self.reruns.append(int(m.group(1)))
            return 201, {}
        return None

    def _create_review(self, number: int, data: dict[str, Any]) -> dict[str, Any]:
        review = {
            "id": self._id(),
            "body": data.get("body", ""),
            "user": self._user(),
            "commit_id": data.get("commit_id"),
            "state": "COMMENTED",
        }
        self.reviews.setdefault(number, []).append(review)
        for comment in data.get("comments", []):
            self.review_comments.setdefault(number, []).append(
                {
                    **comment,
                    "id": self._id(),
                    "user": self._user(),
                    "in_reply_to_id": None,
                    "pull_request_review_id": review["id"],
                    "commit_id": data.get("commit_id"),
                }
            )
        return review

    def __enter__(self) -> GitHubAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
