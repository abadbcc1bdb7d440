"""berth from Python: race-free ports, services and stacks for launchers.

A thin client of the ``berth`` command line (``--json`` of port/release; for up/run, berth's
events on a pipe of their own, ``--events-fd``, never the services' output); it never allocates a
port itself, so leases made here and by ``berth port`` or other jobs never collide.
Standard library only, Python >= 3.9. This one file is the whole client: copy it next to
your launcher as ``berth.py`` if you cannot ``pip install``.

    lease = berth.port(count=2)                      # leased while this process lives
    with berth.up("stack.yaml") as stack:            # waits until every service is ready
        print(stack.url("proxy"), stack.urls("engine"))
    with berth.run(["python3", "-m", "http.server", "{port}"], ready="http://127.0.0.1:{port}/") as svc:
        print(svc.port)

Errors are BerthError subclasses chosen by berth's exit code (64 usage, 65 invalid input,
69 no usable port, 70 service failed, 74 I/O, 75 readiness deadline), carrying the
diagnostics path and the last lines of the failing service's stderr.

The berth executable: the ``executable=`` argument, else $BERTH (a path or a command line
such as "node /opt/berth/dist/berth.cjs"), else the executable bundled in this package (the
platform wheels), else ``berth`` on PATH, else node_modules/.bin/berth in the working
directory or a parent (what ``npx berth`` runs in a clone). ``python -m berth …`` runs it.
"""

from __future__ import annotations

import collections
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Type, Union

__version__ = "0.1.0"

__all__ = [
    "BerthError",
    "UsageError",
    "InvalidInputError",
    "NoPortError",
    "ServiceFailedError",
    "BerthIOError",
    "ReadyTimeoutError",
    "StoppedError",
    "BerthNotFoundError",
    "Lease",
    "Stack",
    "Service",
    "find_berth",
    "bundled_berth",
    "main",
    "port",
    "release",
    "up",
    "run",
]

Executable = Union[str, Sequence[str], None]
Duration = Union[str, int, float, None]
StatusSink = Optional[Callable[[str], None]]
EventSink = Optional[Callable[[Dict[str, Any]], None]]

_TAIL_LINES = 20


# ---- errors --------------------------------------------------------------------------------


class BerthError(Exception):
    """berth failed; ``exit_code`` is its exit status (sysexits, see the README)."""

    exit_code: Optional[int]
    message: str
    diagnostics: Optional[str]
    """The diagnostics folder of the failure (diagnostics.json, stdout.log, stderr.log)."""
    stderr_tail: List[str]
    """The last lines the failing service wrote on stderr."""
    service: Optional[str]
    """``service/replica`` (a stack) or the service's name (run)."""
    run_dir: Optional[str]
    details: Dict[str, Any]

    def __init__(
        self,
        message: str,
        exit_code: Optional[int] = None,
        *,
        diagnostics: Optional[str] = None,
        stderr_tail: Optional[List[str]] = None,
        service: Optional[str] = None,
        run_dir: Optional[str] = None,
        details: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.diagnostics = diagnostics
        self.stderr_tail = list(stderr_tail or [])
        self.service = service
        self.run_dir = run_dir
        self.details = dict(details or {})

    def __str__(self) -> str:
        text = self.message
        if self.exit_code is not None:
            text = f"{text} (exit {self.exit_code})"
        return text


class UsageError(BerthError):
    """64: a bad option or value (also: this berth does not know an option, e.g. block=)."""


class InvalidInputError(BerthError):
    """65: an invalid layout, stack file or input (the message names file and line)."""


class NoPortError(BerthError):
    """69: no usable port (in the ephemeral range, occupied, leased, or stolen)."""


class ServiceFailedError(BerthError):
    """70: a service failed before it was ready, or a ready one died."""


class BerthIOError(BerthError):
    """74: berth cannot write its leases, logs or diagnostics."""


class ReadyTimeoutError(BerthError):
    """75: a readiness deadline passed."""


class StoppedError(BerthError):
    """berth ended with another status: a job's or service's own status, or a signal (128+N)."""


class BerthNotFoundError(BerthError):
    """No berth executable: the message names every place looked at and how to install berth."""


_BY_CODE: Dict[int, Type[BerthError]] = {
    64: UsageError,
    65: InvalidInputError,
    69: NoPortError,
    70: ServiceFailedError,
    74: BerthIOError,
    75: ReadyTimeoutError,
}


def _error(code: int, message: str, **kw: Any) -> BerthError:
    return _BY_CODE.get(code, StoppedError)(message, code, **kw)


# ---- finding and running berth -----------------------------------------------------------


_INSTALL = (
    "install berth: `pip install` the berth wheel for this machine (berth-…-manylinux_2_28_<arch>.whl, "
    "berth included), or copy the single executable (npm run build:bin → dist/bin/berth-linux-<arch>) "
    "onto PATH, or set BERTH=/path/to/berth (or BERTH='node /path/to/dist/berth.cjs'), or pass executable=PATH"
)


def bundled_berth() -> Optional[str]:
    """The berth executable inside this package (platform wheels: berth/_bin/berth), or None."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "berth")
    if not os.path.isfile(path):
        return None
    if not os.access(path, os.X_OK):
        try:  # an unpacker that dropped the mode bits (a copied site-packages)
            os.chmod(path, os.stat(path).st_mode | 0o111)
        except OSError:
            return None
    return path


def _program(argv: List[str], origin: str) -> List[str]:
    """argv when its program can be run; UsageError/BerthNotFoundError saying why not."""
    if not argv or not str(argv[0]).strip():
        raise UsageError(f"{origin} names no program (empty); give the berth executable's path, e.g. executable='/opt/berth/bin/berth'")
    prog = str(argv[0])
    if os.sep not in prog:
        found = shutil.which(prog)
        if found is None:
            raise BerthNotFoundError(f"{origin}: {prog!r} is not on PATH; {_INSTALL}")
        return argv
    if os.path.isdir(prog):
        raise UsageError(f"{origin}: {prog} is a directory, not the berth executable (give the file in it, e.g. {os.path.join(prog, 'berth')})")
    if not os.path.exists(prog):
        raise BerthNotFoundError(f"{origin}: {prog} does not exist; {_INSTALL}")
    if not os.access(prog, os.X_OK):
        raise UsageError(f"{origin}: {prog} is not executable (chmod +x {shlex.quote(prog)}), or its directory is not searchable")
    return argv


def _node_modules_berth(start: str) -> Optional[List[str]]:
    """What `npx berth` runs in start or a parent: a clone of berth (its dist/berth.cjs) or a
    project with berth installed (node_modules/.bin/berth); None without node on PATH."""
    node = shutil.which("node")
    here = os.path.abspath(start)
    while node:
        candidate = os.path.join(here, "node_modules", ".bin", "berth")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return [candidate]
        script = os.path.join(here, "dist", "berth.cjs")
        if os.path.isfile(script) and _is_berth_clone(here):
            return [node, script]
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return None


def _is_berth_clone(path: str) -> bool:
    try:
        with open(os.path.join(path, "package.json"), encoding="utf-8") as f:
            return json.load(f).get("name") == "berth"
    except (OSError, ValueError, AttributeError):
        return False


def find_berth(executable: Executable = None, *, skip: Optional[str] = None) -> List[str]:
    """The argv prefix that runs berth: executable=, $BERTH, the bundled executable, ``berth``
    on PATH, or node_modules/.bin/berth above the working directory. ``skip``: a file not to
    take from PATH (the ``berth`` entry point itself)."""
    if executable is not None:
        if isinstance(executable, os.PathLike):
            return _program([os.fspath(executable)], "executable=")
        if isinstance(executable, str):
            argv = [executable] if os.path.exists(executable) else shlex.split(executable)
            return _program(argv, f"executable={executable!r}")
        return _program([os.fspath(a) for a in executable], f"executable={list(executable)!r}")
    env = os.environ.get("BERTH")
    if env is not None and env.strip():
        return _program([env] if os.path.exists(env) else shlex.split(env), f"$BERTH={env!r}")
    looked = ["executable= (not given)", "$BERTH (not set)"]
    bundled = bundled_berth()
    if bundled:
        return [bundled]
    looked.append(f"{os.path.join(os.path.dirname(os.path.abspath(__file__)), '_bin', 'berth')} (this package carries no executable)")
    skip_real = os.path.realpath(skip) if skip else None
    for d in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(d or ".", "berth")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and os.path.realpath(candidate) != skip_real:
            return [candidate]
    looked.append(f"berth on PATH ({os.environ.get('PATH', '')})")
    local = _node_modules_berth(os.getcwd())
    if local:
        return local
    looked.append(f"a berth clone (dist/berth.cjs) or node_modules/.bin/berth in {os.getcwd()} or a parent, run by node ({shutil.which('node') or 'not on PATH'})")
    raise BerthNotFoundError("cannot find berth; looked at: " + "; ".join(looked) + ". To " + _INSTALL)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`berth …` (the wheel's entry point) and `python -m berth …`: exec the berth found."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        prog = find_berth(skip=sys.argv[0] if sys.argv and sys.argv[0] else None)
    except BerthError as e:
        sys.stderr.write(f"berth: {e.message}\n")
        return 127 if isinstance(e, BerthNotFoundError) else 64
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(prog[0], prog + args)
    except OSError as e:
        sys.stderr.write(f"berth: cannot run {prog[0]}: {e.strerror}\n")
        return 126
    return 0  # pragma: no cover - execvp does not return


def _flags(**options: Any) -> List[str]:
    """Keyword options as CLI flags: allow_ephemeral=True → --allow-ephemeral; None is left out."""
    out: List[str] = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                out += [flag, str(v)]
        else:
            out += [flag, _text(value)]
    return out


def _text(value: Any) -> str:
    if isinstance(value, dict) and "lo" in value and "hi" in value:
        return f"{value['lo']}-{value['hi']}"
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _duration(value: Duration, what: str = "duration") -> Optional[str]:
    """'10s' stays; a number is seconds, as Python's own timeouts are."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{what}={value!r}: give seconds as a number, or a duration such as '30s' or '5m'")
    if math.isnan(value) or math.isinf(value) or value < 0:
        raise UsageError(f"{what}={value!r}: give a finite number of seconds, 0 or more (e.g. {what}=30 or '5m')")
    return f"{int(round(float(value) * 1000))}ms"


def _error_doc(text: str) -> Optional[Dict[str, Any]]:
    """The {"error": …} document a short --json command (port, release) prints as its whole
    stdout when it fails; these run no service, so nothing else is on that stdout."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    err = doc.get("error") if isinstance(doc, dict) else None
    return err if isinstance(err, dict) else None


def _tail_file(path: Optional[str], n: int = _TAIL_LINES) -> List[str]:
    if not path:
        return []
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 16384))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    lines = [line for line in data.splitlines() if line.strip()]
    return lines[-n:]


# berth's line naming the diagnostics folder: "diagnostics: PATH (diagnostics.json, …)".
_DIAGNOSTICS = re.compile(r"^diagnostics: (.+?) \(diagnostics\.json", re.M)

_UNKNOWN_OPTION = re.compile(r"Unknown option '(--[a-z-]+)'|unknown option[: ]+'?(--[a-z-]+)", re.I)


def _check_call(argv: List[str], what: str, env: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Run a short berth command with --json and return its document, or raise by exit code."""
    _check_nul(argv, env)
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace", env=_env(env))
    except OSError as e:
        raise _spawn_error(argv, e) from None
    if done.returncode == 0:
        try:
            doc = json.loads(done.stdout)
        except ValueError:
            raise BerthError(f"{what}: berth printed no JSON: {done.stdout[:200]!r}") from None
        return doc if isinstance(doc, dict) else {"value": doc}
    err = _error_doc(done.stdout) or {}
    message = str(err.get("message") or done.stderr.strip() or f"{what} failed")
    unknown = _UNKNOWN_OPTION.search(message)
    if done.returncode == 64 and unknown:
        flag = unknown.group(1) or unknown.group(2)
        message = f"this berth does not support {flag} ({what}); upgrade berth or leave that option out. berth said: {message}"
    raise _error(done.returncode, message, details=err)


def _check_nul(argv: List[str], env: Optional[Mapping[str, str]]) -> None:
    """UsageError for a NUL byte, which no argument, name or variable can carry (execve)."""
    for i, a in enumerate(argv):
        if "\0" in a:
            raise UsageError(f"argument {i} ({a.split(chr(0))[0][:40]!r}…) holds a NUL byte, which no command-line argument can carry; remove it")
    for k, v in (env or {}).items():
        if "\0" in k or "\0" in v:
            raise UsageError(f"environment variable {k.split(chr(0))[0][:40]!r} holds a NUL byte, which no variable can carry; remove it")


def _spawn_error(argv: List[str], e: OSError) -> BerthError:
    if isinstance(e, FileNotFoundError):
        return BerthNotFoundError(f"cannot run berth ({argv[0]}): {e.strerror}; {_INSTALL}")
    return UsageError(f"cannot run berth ({argv[0]}): {e.strerror or e}")


def _env(extra: Optional[Mapping[str, str]]) -> Optional[Dict[str, str]]:
    if extra is None:
        return None
    env = dict(os.environ)
    env.update(extra)
    return env


# berth runs in a session of its own (start_new_session: no preexec_fn, which is unsafe with
# the pump threads): a Ctrl-C on the terminal reaches Python only, which then stops berth once,
# in order (berth takes a second signal as "kill everything now"). Python gone, however it
# died (kill -9 included), is berth's stdin at EOF: `--stop-on-stdin-eof` stops it then. Unlike
# PR_SET_PDEATHSIG this does not fire when the thread that started berth exits.
_STOP_ON_EOF = "--stop-on-stdin-eof"


class _Process:
    """A long-running berth (up, run): its stdout and stderr passed on by threads, untouched,
    and berth's own messages read from a pipe of their own (``--events-fd``): one JSON object
    a line that no service can write to, so nothing a service prints is ever taken for berth's."""

    def __init__(
        self,
        argv: Callable[[int], List[str]],
        *,
        on_stdout: Callable[[str], None],
        on_stderr: Callable[[str], None],
        on_event: Optional[Callable[[Dict[str, Any]], None]] = None,
        env: Optional[Mapping[str, str]],
        cwd: Optional[str],
    ) -> None:
        self.stderr_tail: Deque[str] = collections.deque(maxlen=200)
        self.events: List[Dict[str, Any]] = []
        self.final: Optional[Dict[str, Any]] = None
        """berth's closing event: {"event": "exit", "exitCode": N} or {"event": "error", "error": {…}}."""
        self._on_event = on_event
        self._changed = threading.Condition()
        _check_nul(argv(0), env)
        read_end, write_end = os.pipe()
        cmd = argv(write_end)
        try:
            self.popen = subprocess.Popen(
                cmd,
                # Held open, never written: its EOF tells berth that Python is gone.
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(write_end,),
                env=_env(env),
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as e:
            os.close(read_end)
            raise _spawn_error(cmd, e) from None
        finally:
            os.close(write_end)  # berth's copy is the only one: EOF once berth is gone
        events = os.fdopen(read_end, "rb")
        self._threads = [
            threading.Thread(target=self._pump, args=(self.popen.stdout, on_stdout, False), daemon=True),
            threading.Thread(target=self._pump, args=(self.popen.stderr, on_stderr, True), daemon=True),
            threading.Thread(target=self._read_events, args=(events,), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _pump(self, stream: IO[bytes], sink: Callable[[str], None], tail: bool) -> None:
        for raw in iter(stream.readline, b""):
            text = raw.decode("utf-8", "replace")
            if tail:
                self.stderr_tail.append(text.rstrip("\n"))
            try:
                sink(text)
            except Exception:  # a faulty sink must not stop the reading (berth would block)
                pass
        stream.close()

    def _read_events(self, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            try:
                event = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            with self._changed:
                self.events.append(event)
                if event.get("event") in ("exit", "error"):
                    self.final = event
                self._changed.notify_all()
            if self._on_event is not None:
                try:
                    self._on_event(event)
                except Exception:  # a faulty callback must not stop the reading
                    pass
        stream.close()
        with self._changed:
            self._changed.notify_all()

    def event(self, name: str) -> Optional[Dict[str, Any]]:
        """berth's first event of that name so far, or None."""
        return next((e for e in self.events if e.get("event") == name), None)

    @property
    def error(self) -> Dict[str, Any]:
        """berth's error document (as --json prints it) when it failed, else {}."""
        err = (self.final or {}).get("error")
        return err if isinstance(err, dict) else {}

    def wait_for(self, predicate: Callable[[], bool], timeout: Optional[float] = None) -> bool:
        """Wait until predicate() or berth has exited; KeyboardInterrupt passes through."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while not predicate() and self.popen.poll() is None:
                left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
                if left <= 0:
                    break
                self._changed.wait(left)
        return predicate()

    def wait_exit(self, timeout: Optional[float] = None) -> None:
        """popen.wait in short turns: an exception raised in this thread (KeyboardInterrupt,
        from a signal or PyThreadState_SetAsyncExc) is taken between them, never held back
        by one long blocking wait. TimeoutExpired after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = 0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic()))
            try:
                self.popen.wait(step)
                return
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    def finish(self) -> int:
        self.wait_exit()
        for t in self._threads:
            t.join()
        if self.popen.stdin is not None:
            self.popen.stdin.close()
        return self.popen.returncode

    def terminate(self) -> int:
        """SIGTERM to berth, which stops every service in order; a second Ctrl-C meanwhile kills them all."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.finish()
        except KeyboardInterrupt:
            if self.popen.poll() is None:
                self.popen.send_signal(signal.SIGTERM)
            self.finish()
            raise


def _printer(stream: Optional[IO[str]], default: IO[str]) -> Callable[[str], None]:
    """Writes text as it came (a line with its newline, a last line without), flushed."""
    target = default if stream is None else stream

    def write(text: str) -> None:
        try:
            target.write(text)
        except UnicodeEncodeError:
            # A stream that cannot hold every character (ASCII stdout, encoding="ascii"): the
            # line is kept, its other characters escaped (\\u00e9), never dropped.
            encoding = getattr(target, "encoding", None) or "ascii"
            target.write(text.encode(encoding, "backslashreplace").decode(encoding, "replace"))
        target.flush()

    return write


def _lines(sink: Callable[[str], None]) -> Callable[[str], None]:
    """A line sink (on_status) fed text with newlines: each line without its newline."""
    return lambda text: sink(text.rstrip("\n"))


# ---- berth port ----------------------------------------------------------------------------


class Lease:
    """Ports leased by ``berth port``: nothing else on the host takes them until release()."""

    ports: List[int]
    leases: List[Dict[str, Any]]
    source: Dict[str, Any]

    def __init__(self, doc: Dict[str, Any], argv: List[str]) -> None:
        self.ports = [int(p) for p in doc.get("ports", [])]
        self.leases = list(doc.get("leases", []))
        self.source = dict(doc.get("source", {}))
        self._berth = argv
        self.released = False

    @property
    def port(self) -> int:
        """The first port (the only one for count=1)."""
        return self.ports[0]

    def release(self) -> None:
        """End the leases (idempotent)."""
        if self.released or not self.ports:
            return
        _check_call(self._berth + ["release", "--json"] + _flags(port=self.ports), "berth release")
        self.released = True

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"Lease(ports={self.ports!r})"


def port(
    *,
    count: Optional[int] = None,
    band: Optional[str] = None,
    layout: Optional[str] = None,
    instance: Union[int, str, None] = None,
    port: Optional[int] = None,
    range: Union[str, Mapping[str, int], None] = None,
    source: Optional[str] = None,
    block: Optional[int] = None,
    owner: Optional[int] = -1,
    ttl: Duration = None,
    name: Optional[str] = None,
    strategy: Optional[str] = None,
    allow_ephemeral: bool = False,
    executable: Executable = None,
    env: Optional[Mapping[str, str]] = None,
) -> Lease:
    """``berth port``: lease ports (default: one, from the default band).

    owner: the lease lives while that pid lives; default this process (os.getpid()); None
    for no owner (then ttl, default 10 minutes). block=N asks for N contiguous ports (needs a
    berth with ``port --block``; UsageError otherwise).
    """
    if owner == -1:
        owner = os.getpid()
    argv = find_berth(executable)
    flags = _flags(
        port=port,
        range=range,
        layout=layout,
        band=band,
        instance=instance,
        source=source,
        count=count,
        block=block,
        owner=owner,
        ttl=_duration(ttl, "ttl"),
        name=name,
        strategy=strategy,
        allow_ephemeral=allow_ephemeral,
    )
    return Lease(_check_call(argv + ["port", "--json"] + flags, "berth port", env), argv)


def release(
    *, port: Optional[Sequence[int]] = None, owner: Optional[int] = None, job: Optional[str] = None, all: bool = False, executable: Executable = None
) -> List[int]:
    """``berth release``: end leases by port, owner pid, Slurm job or all of yours; returns the released ports."""
    doc = _check_call(find_berth(executable) + ["release", "--json"] + _flags(port=port, owner=owner, job=job, all=all), "berth release")
    return [int(p) for p in doc.get("released", [])]


# ---- berth up ------------------------------------------------------------------------------


class Stack:
    """A running ``berth up``: endpoints, and an orderly stop on exit or exception."""

    endpoints: Dict[str, Any]
    """endpoints.json as berth printed it when the stack became ready."""

    def __init__(self, proc: _Process, argv: List[str]) -> None:
        self._proc = proc
        self._argv = argv
        self.endpoints = {}
        self.returncode: Optional[int] = None

    # -- where things are
    @property
    def run_dir(self) -> str:
        return str(self.endpoints.get("runDir", ""))

    @property
    def pid(self) -> int:
        """berth's own pid."""
        return self._proc.popen.pid

    def replicas(self, service: str) -> List[Dict[str, Any]]:
        found = [r for r in self.endpoints.get("replicas", []) if r.get("service") == service]
        if not found:
            names = sorted({str(r.get("service")) for r in self.endpoints.get("replicas", [])})
            raise KeyError(f"no service {service!r} in this stack (services: {', '.join(names)})")
        return sorted(found, key=lambda r: int(r.get("replica", 0)))

    def _replica(self, service: str, replica: int) -> Dict[str, Any]:
        """One replica's record; KeyError naming the service's replicas when it has no such one."""
        found = self.replicas(service)
        if isinstance(replica, bool) or not isinstance(replica, int) or not 0 <= replica < len(found):
            raise KeyError(f"service {service!r} has no replica {replica!r} (its replicas: 0-{len(found) - 1})")
        return found[replica]

    def url(self, service: str, replica: int = 0) -> str:
        """The url of one replica, SCHEME://HOST:PORT in its service's `scheme:` (default
        http, e.g. postgresql://127.0.0.1:20500)."""
        rec = self._replica(service, replica)
        if not rec.get("url"):
            if rec.get("port") is not None and "scheme" in rec:
                raise KeyError(f"{service}/{replica} has no url (scheme: none); use port() and its host")
            raise KeyError(f"{service}/{replica} has no port")
        return str(rec["url"])

    def urls(self, service: str) -> List[str]:
        """The urls of every replica of a service, in replica order (in its scheme)."""
        return [str(r["url"]) for r in self.replicas(service) if r.get("url")]

    def port(self, service: str, replica: int = 0) -> int:
        rec = self._replica(service, replica)
        if rec.get("port") is None:
            raise KeyError(f"{service}/{replica} has no port")
        return int(rec["port"])

    def ports(self, service: str, replica: int = 0) -> Dict[str, Any]:
        """Named ports of one replica as endpoints.json lists them: a single port as a number, a
        block as {"first", "last", "count"}; {"port": P} for a service without `ports:`."""
        named = self._replica(service, replica).get("ports")
        return dict(named) if isinstance(named, dict) else {}

    def shared(self, service: str) -> Dict[str, Any]:
        """A service's shared ports (`NAME: shared`, e.g. a torch MASTER_PORT) and the host
        they are reached at: {"host": "10.0.0.1", "ports": {"master": 1025}}; {} when none."""
        rec = (self.endpoints.get("shared") or {}).get(service)
        if not isinstance(rec, dict):
            self.replicas(service)  # KeyError for a service the stack does not have
            return {}
        return dict(rec)

    def generation(self, service: str) -> int:
        """The generation a job of many ranks restarted as a group (restart: on-failure) is in,
        from 0, as endpoints.json says now (re-read); 0 for any other service."""
        self.refresh()
        return max((int(r.get("generation", 0)) for r in self.replicas(service)), default=0)

    def refresh(self) -> Dict[str, Any]:
        """Re-read endpoints.json (berth rewrites it on every state change)."""
        try:
            with open(os.path.join(self.run_dir, "endpoints.json"), encoding="utf-8") as f:
                self.endpoints = json.load(f)
        except (OSError, ValueError):
            pass
        return self.endpoints

    # -- ending
    @property
    def running(self) -> bool:
        return self._proc.popen.poll() is None

    def wait(self, timeout: Optional[float] = None) -> int:
        """Wait for the stack to end by itself (its job exited); raises for a failed stack.
        An exception meanwhile (KeyboardInterrupt, also in a worker thread) stops the stack."""
        try:
            self._proc.wait_exit(timeout)
        except subprocess.TimeoutExpired:
            raise
        except BaseException:
            self.stop()
            raise
        return self._end(stopped=False)

    def stop(self) -> int:
        """Stop the stack in order (SIGTERM to berth: dependents first) and wait; returns berth's status."""
        if self.returncode is not None:
            return self.returncode
        self._proc.terminate()
        return self._end(stopped=True)

    def _end(self, stopped: bool) -> int:
        code = self._proc.finish()
        self.returncode = code
        if code == 0 or (stopped and code == 128 + signal.SIGTERM):
            return code
        raise _stack_error(self._proc, code)

    def __enter__(self) -> "Stack":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            # The body failed (KeyboardInterrupt included): stop, and let its exception through.
            try:
                self.stop()
            except BerthError:
                pass
            return
        if self.running:
            self.stop()
        elif self.returncode is None:
            self._end(stopped=False)


def _stack_error(proc: _Process, code: int) -> BerthError:
    err = proc.error
    failure = err.get("failure") if isinstance(err.get("failure"), dict) else {}
    assert isinstance(failure, dict)
    logs = failure.get("logs") if isinstance(failure.get("logs"), dict) else {}
    assert isinstance(logs, dict)
    service = f"{failure['service']}/{failure.get('replica', 0)}" if failure.get("service") else None
    message = str(err.get("message") or "\n".join(list(proc.stderr_tail)[-5:]) or f"berth up exited {code}")
    if code == 64 and "already holds a run" in message:
        message += " (from Python: berth.up(..., runs='runs') makes a fresh directory per run)"
    return _error(
        code,
        message,
        diagnostics=failure.get("diagnostics"),
        stderr_tail=_tail_file(logs.get("err")),
        service=service,
        run_dir=err.get("runDir"),
        details=err,
    )


def _fresh_run_dir(parent: str) -> str:
    """parent/<UTC time>, new (mkdir is the lock), private, named as berth names its own runs."""
    try:
        os.makedirs(parent, mode=0o700, exist_ok=True)
    except OSError as e:
        raise BerthIOError(f"cannot make the runs directory {parent}: {e.strerror}", 74) from None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for n in range(1, 1001):
        path = os.path.join(parent, stamp if n == 1 else f"{stamp}-{n}")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
        except OSError as e:
            raise BerthIOError(f"cannot make the run directory {path}: {e.strerror}", 74) from None
    raise BerthIOError(f"{parent}/{stamp} and 1000 numbered variants exist already; clean up {parent}", 74)


def up(
    stack: Union[str, "os.PathLike[str]"],
    *,
    run_dir: Union[str, "os.PathLike[str]", None] = None,
    runs: Union[str, "os.PathLike[str]", None] = None,
    follow: bool = False,
    on_status: StatusSink = None,
    stdout: Optional[IO[str]] = None,
    on_event: EventSink = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    executable: Executable = None,
) -> Stack:
    """``berth up STACK``: start a stack and return once every service (but the job) is ready.

    berth's stderr (status lines, the job's stderr) goes to on_status line by line (default:
    sys.stderr, unchanged); the job's stdout to stdout (default sys.stdout), unchanged.
    on_event gets berth's own events as dicts (``berth up --events-fd``: ready, every state
    change, warnings, messages, the closing exit or error); the client reads the stack's state
    only from that channel, never from what a service prints. Use it as a context manager: leaving the block stops the stack in
    order, also on an exception or Ctrl-C. A stack that fails raises the BerthError subclass
    of berth's exit code, with the diagnostics folder and the failing replica's stderr tail.

    Where the run's files go (endpoints.json, events.jsonl, logs/): ``run_dir=`` is that
    directory and, as with ``berth up --run-dir``, must not hold an earlier run (berth never
    mixes two runs, nor deletes one: UsageError); ``runs=`` is a parent in which each call
    makes a fresh ``<UTC time>`` directory (``-2``, ``-3`` … within one second), as berth's
    default ``./berth-runs/`` does. ``stack.run_dir`` says which one was used.
    """
    if run_dir is not None and runs is not None:
        raise UsageError("berth.up: give run_dir= (one run's directory) or runs= (a parent for a fresh directory per run), not both")
    argv = find_berth(executable)
    if runs is not None:
        run_dir = _fresh_run_dir(os.path.join(cwd or os.getcwd(), os.fspath(runs)))
    flags = _flags(run_dir=os.fspath(run_dir) if run_dir is not None else None, follow=follow)

    def cmd(events_fd: int) -> List[str]:
        return argv + ["up", os.fspath(stack), "--events-fd", str(events_fd), _STOP_ON_EOF] + flags

    status = _lines(on_status) if on_status is not None else _printer(None, sys.stderr)
    proc = _Process(cmd, on_stdout=_printer(stdout, sys.stdout), on_stderr=status, on_event=on_event, env=env, cwd=cwd)
    handle = Stack(proc, argv)
    try:
        proc.wait_for(lambda: proc.event("ready") is not None)
    except BaseException:
        proc.terminate()
        raise
    ready = proc.event("ready")
    if ready is None or not isinstance(ready.get("endpoints"), dict):
        code = proc.finish()
        handle.returncode = code
        if code == 0:
            raise StoppedError("berth up ended before the stack was ready", 0)
        raise _stack_error(proc, code)
    ready = ready["endpoints"]
    handle.endpoints = dict(ready)
    return handle


# ---- berth run -----------------------------------------------------------------------------


class Service:
    """A running ``berth run``: where the service is, and its stop."""

    def __init__(self, proc: _Process, info: Dict[str, Any]) -> None:
        self._proc = proc
        self.info = info
        self.returncode: Optional[int] = None

    @property
    def name(self) -> str:
        return str(self.info.get("name", ""))

    @property
    def host(self) -> str:
        return str(self.info.get("host", ""))

    @property
    def port(self) -> int:
        return int(self.info.get("port", 0))

    @property
    def pid(self) -> int:
        """The service's pid (not berth's)."""
        return int(self.info.get("pid", 0))

    @property
    def url(self) -> str:
        host = self.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc.popen.poll() is None

    def wait(self, timeout: Optional[float] = None) -> int:
        """Wait for the service to end; returns its status (128+N for signal N)."""
        try:
            self._proc.wait_exit(timeout)
        except subprocess.TimeoutExpired:
            raise
        except BaseException:
            self.stop()
            raise
        self.returncode = self._proc.finish()
        return self.returncode

    def stop(self) -> int:
        """SIGTERM to the service (through berth, SIGKILL after its stop grace); returns its status."""
        if self.returncode is None:
            self.returncode = self._proc.terminate()
        return self.returncode

    def __enter__(self) -> "Service":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def run(
    command: Sequence[str],
    *,
    ready: Optional[str] = None,
    handoff: Optional[str] = None,
    port: Union[int, str, None] = None,
    learn: Optional[str] = None,
    range: Union[str, Mapping[str, int], None] = None,
    layout: Optional[str] = None,
    band: Optional[str] = None,
    instance: Union[int, str, None] = None,
    source: Optional[str] = None,
    bind: Optional[str] = None,
    env_name: Optional[str] = None,
    ready_timeout: Duration = None,
    ready_file: Optional[str] = None,
    diag_dir: Optional[str] = None,
    name: Optional[str] = None,
    stop_grace: Duration = None,
    allow_ephemeral: bool = False,
    stdout: Optional[IO[str]] = None,
    stderr: Optional[IO[str]] = None,
    on_event: EventSink = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    executable: Executable = None,
) -> Service:
    """``berth run -- COMMAND``: start one service on a leased port; return once it is ready.

    ``{port}`` in the command is the port (also $PORT); ``port="learn"`` (with ``learn=REGEX``
    to pick one of several listeners by the line that names it): the service chooses its port
    itself (binds port 0), berth learns and leases it, and ``Service.port`` is it. The service's output goes to stdout
    and stderr (default sys.stdout / sys.stderr) unchanged; berth's own lines ("berth: … ready
    on …") are on that stderr too. on_event gets berth's events as dicts (``berth run
    --events-fd``: ready, warnings, the closing exit or error), the only place the client
    reads berth's state from. Raises the BerthError subclass of berth's
    exit code (69 no port, 70 failed before ready, 75 not ready in time), with the
    diagnostics folder and the service's last stderr lines.
    """
    if isinstance(command, str):
        raise TypeError("command is an argv list, e.g. ['python3', '-m', 'http.server', '{port}'] (berth uses no shell)")
    command = [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in command]
    if not command or not command[0].strip():
        raise UsageError("berth.run: the command is empty; give the service's argv, e.g. ['python3', '-m', 'http.server', '{port}']")
    argv = find_berth(executable)
    flags = _flags(
        port=port,
        learn=learn,
        range=range,
        layout=layout,
        band=band,
        instance=instance,
        source=source,
        bind=bind,
        env=env_name,
        handoff=handoff,
        ready=ready,
        ready_timeout=_duration(ready_timeout, "ready_timeout"),
        ready_file=ready_file,
        diag_dir=diag_dir,
        name=name,
        stop_grace=_duration(stop_grace, "stop_grace"),
        allow_ephemeral=allow_ephemeral,
    )

    def cmd(events_fd: int) -> List[str]:
        return argv + ["run", "--events-fd", str(events_fd), _STOP_ON_EOF] + flags + ["--"] + command

    proc = _Process(cmd, on_stdout=_printer(stdout, sys.stdout), on_stderr=_printer(stderr, sys.stderr), on_event=on_event, env=env, cwd=cwd)
    try:
        proc.wait_for(lambda: proc.event("ready") is not None)
    except BaseException:
        proc.terminate()
        raise
    info = proc.event("ready")
    if info is None:
        code = proc.finish()
        if code == 0:
            raise StoppedError("the service exited (status 0) before berth saw it ready", 0)
        err = proc.error
        message = str(err.get("message") or "\n".join(list(proc.stderr_tail)[-5:]) or f"berth run exited {code}")
        found = _DIAGNOSTICS.search(message)
        diagnostics = found.group(1) if found else diag_dir
        log = os.path.join(diagnostics, "stderr.log") if diagnostics else None
        # The service's own stderr (berth keeps it apart from its lines), also when it wrote nothing.
        tail = _tail_file(log) if log and os.path.isfile(log) else []
        raise _error(code, message, diagnostics=diagnostics, stderr_tail=tail, service=name or os.path.basename(command[0]), details=err)
    info = {k: v for k, v in info.items() if k != "event"}
    return Service(proc, info)
