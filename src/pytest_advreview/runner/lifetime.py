"""No reviewer outlives pytest: the supervisor every reviewer and lead process runs under.

pytest's own cleanup (the group kill of :mod:`._process`) runs only while pytest runs.
A cancelled CI job's SIGTERM, pytest-timeout's ``thread`` method (``os._exit``) or a
SIGKILL end pytest without it, and Codex went on working in the checkout; what Codex
starts in a session of its own (a profile's background job in the login shell it
snapshots the environment with, a tool's ``setsid``) is not in its process group and
outlived even a run that ended normally.  Three parts close that:

* **Signals** (:func:`interrupt_on_signals`): in a run with ``--adversarial-review``,
  SIGTERM and SIGHUP raise :class:`Terminated` (a ``KeyboardInterrupt``) on the main
  thread, so they take Ctrl-C's path: the launch in flight kills its reviewer, the jobs
  pool cancels the others, the run ends interrupted.
* **The supervisor** (:func:`main`, this module imported alone): every launch starts
  ``python -I -S -c "…import lifetime; lifetime.main(…)" … -- ARGV`` instead of
  ``ARGV``.  It starts ``ARGV`` (stdin, stdout, stderr, working folder and environment
  its own, so the CLI contract is unchanged: its exit status, or the signal that ended
  it, comes back as the supervisor's), and on Linux makes itself a child subreaper
  (``PR_SET_CHILD_SUBREAPER``): every orphaned descendant, one that called ``setsid``
  included, becomes its child.
  When ``ARGV`` exits, or a signal stops the launch, it ends every descendant left
  (SIGTERM, then SIGKILL after :data:`GRACE_S`, again until ``/proc`` shows none).  It
  also holds the read end of a pipe whose write end only pytest holds: end of file means
  pytest is gone, however it ended, and the supervisor ends everything and removes the
  launch's temporary folders.  In an xdist worker the process that dies is the
  controller, not the worker (xdist lets a worker whose controller is gone run on for
  5 s or more): the worker watches its controller (:func:`watch_controller`, a pidfd)
  and every supervisor it starts polls that too, so a SIGKILL of the controller ends
  every worker's reviewers within the same bound as without xdist.
* **Launching** (:class:`Supervised`): the argv, the pipes and the report of a failed
  start (an executable that is missing raises the same ``OSError`` as before).

Why a separate Python process rather than a parent-death signal: ``PR_SET_PDEATHSIG``
fires when the *thread* that started the child ends (reviews run in the jobs pool's
threads), needs a ``preexec_fn`` (work after ``fork`` in a threaded process), and reaches
only the direct child, not what it started in another session.  The pipe's end of file is
the one signal of pytest's end that no exit path skips.

Limits: without ``/proc`` and subreapers (macOS) the supervisor still notices pytest's end
and kills the process group of ``ARGV``; a descendant that left that group (``setsid``)
is not reached there.  A supervisor that is SIGKILLed itself ends nothing (pytest's group
kill still does while pytest runs).  Without pidfds (macOS, Linux before 5.3) a worker's
supervisors see only the worker's end: xdist's own SIGINT to a worker whose controller
is gone, 5 s later.  The supervisor imports this module alone, from its
folder, without ``site``: it imports only the standard library.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import sys
import time

# The supervisor starts once per launch: it imports the fewest modules it can (not even
# typing; ``python -I -S``: no site either), about 30 ms of CPU on a 2-core machine.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path
    from types import FrameType

__all__ = [
    "GRACE_S",
    "Supervised",
    "Terminated",
    "descendants",
    "interrupt_on_signals",
    "main",
    "remove_tree",
    "watch_controller",
]

#: Seconds between SIGTERM and SIGKILL for what a launch leaves; shorter than the group
#: kill's grace (``_process.KILL_GRACE_S``), so the supervisor is done first.
GRACE_S = 2.0
#: This module's folder: the supervisor imports it from there as ``lifetime``.
_HERE = os.path.dirname(os.path.abspath(__file__))
#: How the supervisor's Python starts: nothing of the environment or the working folder
#: changes it (``-I``), only the standard library is imported (no ``site``: faster), and
#: this module is imported rather than run as a script (its compiled form is cached).
_BOOT = (
    "-I",
    "-S",
    "-c",
    f"import sys; sys.path.append({_HERE!r}); import lifetime; lifetime.main(sys.argv[1:])",
)
#: The signals that stop a run the way Ctrl-C does.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
#: ``prctl`` option: orphaned descendants are re-parented to the caller (Linux 3.4+).
_PR_SET_CHILD_SUBREAPER = 36
#: A pidfd of this xdist worker's controller (:func:`watch_controller`): readable once
#: the controller has ended; every supervisor this process starts polls it.
_controller_fd: int | None = None
#: Variables Python itself sets at start (PEP 538 locale coercion): the supervisor puts
#: them back as the launch gave them before it starts ``ARGV``.
_PYTHON_SETS = ("LC_CTYPE",)


class Terminated(KeyboardInterrupt):
    """pytest got SIGTERM or SIGHUP: stop as on Ctrl-C (reviews in flight are killed)."""


def interrupt_on_signals(*, workers: bool = False) -> Callable[[], None]:
    """Make SIGTERM and SIGHUP raise :class:`Terminated`; return what undoes it.

    Only on the main thread (the only one Python runs signal handlers on), and only for a
    signal whose disposition is the default: an ignored SIGHUP (``nohup``) stays ignored,
    and another program's handler is left alone.

    :param workers: this is an xdist controller: these signals, and SIGINT, are passed on
        to its workers (:func:`python_children`) first.  A cancelled job, ``timeout`` or
        ``docker stop`` may signal one process, and xdist gives a busy worker 5 s before
        it interrupts it: time for a reviewer to write into the checkout.
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def terminated(signum: int, _frame: FrameType | None) -> None:
        if workers:
            for pid in python_children():
                _send(pid, signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        name = signal.Signals(signum).name
        raise Terminated(f"pytest received {name}: the reviews in flight were stopped")

    defaults: dict[int, object] = {signum: signal.SIG_DFL for signum in STOP_SIGNALS}
    if workers:
        defaults[signal.SIGINT] = signal.default_int_handler
    installed = {}
    for signum, default in defaults.items():
        if signal.getsignal(signum) is default:
            signal.signal(signum, terminated)
            installed[signum] = default

    def restore() -> None:
        for signum, default in installed.items():
            if signal.getsignal(signum) is terminated:
                signal.signal(signum, default)

    return restore


def watch_controller() -> Callable[[], None]:
    """In an xdist worker: every launch from now on also ends when the controller ends.

    xdist starts its workers as the controller's children (its ``popen`` gateway), so
    the controller is this process's parent.  The pidfd is opened, then the parent is
    asked again: one that ended in between (this process re-parented) is not watched
    under a pid another process may reuse.  Returns what closes the pidfd.
    """
    global _controller_fd
    opener = getattr(os, "pidfd_open", None)
    if opener is None or _controller_fd is not None:
        return lambda: None
    parent = os.getppid()
    try:
        fd = opener(parent)
    except OSError:  # a kernel without pidfds (before 5.3), or a sandbox that denies them
        return lambda: None
    if os.getppid() != parent:
        os.close(fd)
        return lambda: None
    _controller_fd = fd

    def close() -> None:
        global _controller_fd
        if _controller_fd == fd:
            _controller_fd = None
            os.close(fd)

    return close


def python_children() -> list[int]:
    """This process's children that run this Python (an xdist controller's workers)."""
    me = os.path.realpath(sys.executable)
    found = []
    for pid in _children(os.getpid()):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if exe == me:
            found.append(pid)
    return found


# -- launching -------------------------------------------------------------------------


class Supervised:
    """``argv`` as it is launched under the supervisor, with the pipes it needs.

    Use as a context manager around the launch: ``Popen(s.argv, pass_fds=s.pass_fds,
    env=s.env …)``, then :meth:`started` (raises the ``OSError`` of a failed start), and
    leave the context only when the launched process has ended: leaving it is what the
    supervisor would see if pytest died.

    :param remove: folders the supervisor removes should pytest end during the launch.
    """

    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str], *, remove: Sequence[Path] = ()
    ) -> None:
        self._watch_r, self._watch_w = os.pipe()
        self._report_r, self._report_w = os.pipe()
        controller = _controller_fd
        watched = [] if controller is None else ["--controller", str(controller)]
        restore = []
        for name in _PYTHON_SETS:
            restore += ["--env", f"{name}={env[name]}"] if name in env else ["--unset", name]
        self.argv = [
            sys.executable,
            *_BOOT,
            "--watch",
            str(self._watch_r),
            "--report",
            str(self._report_w),
            *watched,
            *restore,
            *[arg for folder in remove for arg in ("--remove", os.fspath(folder))],
            "--",
            *argv,
        ]
        self.env = dict(env)
        self.pass_fds = (self._watch_r, self._report_w) + (
            () if controller is None else (controller,)
        )

    def __enter__(self) -> Supervised:
        return self

    def __exit__(self, *_exc: object) -> None:
        for fd in (self._watch_r, self._watch_w, self._report_r, self._report_w):
            if fd >= 0:
                os.close(fd)

    def started(self) -> None:
        """Wait for the supervisor's word that ``argv`` started.

        :raises OSError: ``argv`` could not be started (missing, not executable), as
            ``Popen`` would have raised it.
        """
        # Ours are closed: end of file comes when the supervisor reported or ended.
        for fd in (self._watch_r, self._report_w):
            os.close(fd)
        self._watch_r = self._report_w = -1
        chunks = []
        while chunk := os.read(self._report_r, 4096):
            chunks.append(chunk)
        report = b"".join(chunks)
        if report.startswith(b"E"):
            code, strerror, filename = report[1:].decode(errors="replace").split("\0", 2)
            raise OSError(int(code), strerror, filename)
        # b"ok": started.  Nothing: the supervisor itself failed before it could start
        # anything; its exit status and stderr (the launch's stderr file) say why.


# -- the supervisor --------------------------------------------------------------------


def _child_map() -> dict[int, list[int]]:
    """Parent pid -> its children's pids, from ``/proc`` (empty where there is none)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat_fields = fh.read().rsplit(b")", 1)[-1].split()
        except OSError:
            continue
        children.setdefault(int(stat_fields[1]), []).append(int(entry))
    return children


def _children(pid: int) -> list[int]:
    return _child_map().get(pid, [])


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, from ``/proc`` (empty where there is none)."""
    children = _child_map()
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def remove_tree(folder: str | Path) -> None:
    """Remove ``folder`` with everything in it, read-only folders included; never raises."""
    import contextlib
    import shutil
    import stat

    def retry(function: Callable[..., object], path: str, _exc: object) -> None:
        # A read-only folder blocks deleting its entries: make it (never what a link
        # planted there points at) writable and try again.
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), stat.S_IRWXU)
            if not os.path.islink(path) and os.path.isdir(path):
                os.chmod(path, stat.S_IRWXU)
            function(path)

    with contextlib.suppress(OSError):
        if sys.version_info >= (3, 12):
            shutil.rmtree(folder, onexc=retry)
        else:
            shutil.rmtree(folder, onerror=retry)


class _Supervisor:
    """One launch's supervisor: starts the child, waits, ends everything left."""

    def __init__(self, watch: int, controller: int = -1) -> None:
        self.watch = watch
        #: A pidfd of the xdist controller (``-1``: none): readable once it has ended.
        self.controller = controller
        self.me = os.getpid()
        #: The launched process, also the id of its process group.
        self.child: int | None = None
        #: Its ``Popen.returncode``-style status once it ended.
        self.status: int | None = None
        self.stopped_by: int | None = None
        self._wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        os.set_blocking(self._wake_r, False)
        signal.set_wakeup_fd(wake_w)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._signalled)

    def _signalled(self, signum: int, _frame: FrameType | None) -> None:
        if signum != signal.SIGCHLD and self.stopped_by is None:
            self.stopped_by = signum

    def start(self, argv: Sequence[str]) -> None:
        """Start ``argv`` as ``Popen`` would: looked up on ``PATH``, the signals Python
        ignores (SIGPIPE, SIGXFSZ) back to their default, no signal blocked.

        In a process group of its own: the group kill of ``_process`` reaches only the
        supervisor, which then ends the child's group and every descendant in order.
        """
        self.child = os.posix_spawnp(
            argv[0],
            list(argv),
            os.environ,
            setpgroup=0,
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
            setsigmask=(),
        )

    def wait(self) -> str:
        """Until the child exits (``"exited"``), a signal stops it, or pytest is gone."""
        poller = select.poll()
        poller.register(self.watch, select.POLLIN | select.POLLHUP)
        if self.controller >= 0:
            poller.register(self.controller, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while True:
            self._reap()
            if self.status is not None:
                return "exited"
            if self.stopped_by is not None:
                return "stopped"
            for fd, _event in poller.poll():
                if fd in (self.watch, self.controller):
                    return "orphaned"  # the write end closed, or the controller ended
                _drain(self._wake_r)

    def _reap(self) -> None:
        """Collect every child that ended (the launched one and adopted orphans)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child:
                self.status = os.waitstatus_to_exitcode(status)

    def _signal_all(self, signum: int) -> None:
        """``signum`` to the child's group at once, then to every descendant outside it
        (each process gets it once: a reviewer may count its SIGTERMs)."""
        if self.child is not None:
            _send(self.child, signum, group=True)
        for pid in descendants(self.me):
            try:
                inside = os.getpgid(pid) == self.child
            except OSError:
                continue  # gone already
            if not inside:
                _send(pid, signum)

    def end_everything(self) -> None:
        """SIGTERM every descendant, SIGKILL what is left after :data:`GRACE_S`."""
        self._reap()
        if self.status is not None and not descendants(self.me):
            return  # the usual end: the CLI exited and left nothing running
        self._signal_all(signal.SIGTERM)
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline:
            self._reap()
            if self.status is not None and not descendants(self.me):
                return
            time.sleep(0.02)
        # Forks may race the kill: again until nothing is left (bounded: a process stuck
        # in the kernel is not worth hanging the run for).
        deadline = time.monotonic() + 10 * GRACE_S
        while time.monotonic() < deadline:
            self._signal_all(signal.SIGKILL)
            time.sleep(0.02)
            self._reap()
            if self.status is not None and not descendants(self.me):
                return


def _send(pid: int, signum: int, *, group: bool = False) -> None:
    """Signal ``pid`` (its group with ``group``); one that is gone already is no error."""
    try:  # noqa: SIM105 (contextlib is one more import per launch)
        (os.killpg if group else os.kill)(pid, signum)
    except OSError:
        pass


def _drain(fd: int) -> None:
    try:  # noqa: SIM105 (contextlib is one more import per launch)
        os.read(fd, 512)
    except OSError:  # nothing to read (non-blocking)
        pass


def _subreaper() -> None:
    """Adopt every orphaned descendant (Linux); elsewhere nothing to do."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: orphans go to init, the group kill stays
        pass


def _exit_as(status: int | None, fallback: int) -> None:
    """Exit with ``status`` (a ``Popen.returncode``): a signal's end is re-raised."""
    if status is None:
        sys.exit(fallback)
    if status >= 0:
        sys.exit(status)
    signum = -status
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file of the supervisor
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
    except (OSError, ValueError):
        pass
    sys.exit(128 + signum)


def main(args: Sequence[str]) -> None:
    """The supervisor; ``args``: ``--watch FD --report FD [--controller FD] [--env N=V]
    [--unset N] [--remove DIR] -- ARGV`` (:class:`Supervised` writes them)."""
    split = list(args).index("--")
    options, argv = list(args)[:split], list(args)[split + 1 :]
    watch = report = controller = -1
    remove: list[str] = []
    for flag, value in zip(options[::2], options[1::2], strict=True):
        if flag == "--watch":
            watch = int(value)
        elif flag == "--report":
            report = int(value)
        elif flag == "--controller":
            controller = int(value)
        elif flag == "--env":
            name, _, set_to = value.partition("=")
            os.environ[name] = set_to
        elif flag == "--unset":
            os.environ.pop(value, None)
        elif flag == "--remove":
            remove.append(value)
    # Passed to this process only: the child and what it starts never hold them (a
    # reviewer holding the report pipe would keep pytest waiting for its end).
    for fd in (watch, report, controller):
        if fd >= 0:
            os.set_inheritable(fd, False)
    _subreaper()
    supervisor = _Supervisor(watch, controller)
    try:
        supervisor.start(argv)
    except OSError as exc:
        code = exc.errno or errno.ENOENT
        message = f"E{code}\0{exc.strerror or exc}\0{exc.filename or argv[0]}"
        os.write(report, message.encode(errors="replace"))
        sys.exit(127)
    os.write(report, b"ok")
    os.close(report)
    why = supervisor.wait()
    supervisor.end_everything()
    if why == "orphaned":
        for folder in remove:
            remove_tree(folder)
    _exit_as(supervisor.status, 128 + (supervisor.stopped_by or signal.SIGTERM))
