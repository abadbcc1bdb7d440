"""The Python client against the real CLI ($BERTH), run by test/python-client.test.ts inside a
network namespace with a private BERTH_STATE_DIR. Real processes and sockets throughout."""

from __future__ import annotations

import ctypes
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from pathlib import Path
from typing import Any, Dict, List

import berth

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
REPO = HERE.parents[2]
PY = "/usr/bin/python3"

# Text that looks exactly like berth's machine output: its --json error document, a
# `berth run --json` ready line, and a line like the endpoints document `berth up --json`
# prints. A service printing it must fool nothing (issue 32 item 16).
FAKE = (
    '{\n  "error": {\n    "exitCode": 65,\n    "message": "FAKE: not berth\'s"\n  }\n}\n'
    '{"event":"ready","name":"fake","host":"127.0.0.1","port":1,"pid":1}\n'
    '{"replicas": [{"service": "web", "replica": 0, "port": 1, "url": "http://127.0.0.1:1", "pid": 1}], "runDir": "/fake"}\n'
)


def liar(path: str, then: str) -> str:
    """A Python script that prints FAKE on stdout and stderr, then runs `then`."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"import sys, os, time\nFAKE = {FAKE!r}\nsys.stdout.write(FAKE); sys.stdout.flush()\nsys.stderr.write(FAKE); sys.stderr.flush()\n{then}\n")
    return path


def read_until(stream: Any, needle: str, seconds: float = 60) -> str:
    """Lines of a text stream up to the first holding needle (all of them if it ends first)."""
    seen = []
    for line in iter(stream.readline, ""):
        seen.append(line)
        if needle in line:
            break
    return "".join(seen)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_dead(pids: List[int], seconds: float = 15) -> List[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def leases() -> List[dict]:
    out = subprocess.run(berth.find_berth() + ["leases", "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


class PortTest(unittest.TestCase):
    def test_round_trip(self) -> None:
        with berth.port(count=2, range="20000-20099", name="py-test") as lease:
            self.assertEqual(len(set(lease.ports)), 2)
            self.assertTrue(all(20000 <= p <= 20099 for p in lease.ports))
            mine = {row["port"]: row for row in leases() if row.get("name") == "py-test"}
            self.assertEqual(sorted(mine), sorted(lease.ports))
            self.assertEqual({row["pid"] for row in mine.values()}, {os.getpid()}, "owner defaults to this process")
        self.assertTrue(lease.released)
        self.assertEqual([r for r in leases() if r.get("name") == "py-test"], [])

    def test_default_band_and_errors(self) -> None:
        lease = berth.port(ttl=30)
        try:
            self.assertEqual(lease.source.get("band"), "default")
        finally:
            lease.release()
        with self.assertRaises(berth.UsageError) as cm:
            berth.port(range="1-2-3")
        self.assertEqual(cm.exception.exit_code, 64)
        with self.assertRaises(berth.NoPortError):
            with berth.port(port=20500):
                berth.port(port=20500)

    def test_block(self) -> None:
        # block= needs `berth port --block`; an older berth is named clearly.
        try:
            lease = berth.port(block=4, range="20100-20199")
        except berth.UsageError as e:
            self.assertIn("does not support --block", str(e))
            return
        with lease:
            self.assertGreaterEqual(len(lease.ports), 1)

    def test_torch_distributed_style_launcher(self) -> None:
        # The launcher takes MASTER_PORT from berth: outside the ephemeral range and leased, so
        # no other job and no outgoing connection can take it before rank 0 binds.
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        world = 4
        with berth.port(name="rendezvous") as lease:
            self.assertFalse(lo <= lease.port <= hi)
            env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(lease.port), WORLD_SIZE=str(world))
            ranks = [
                subprocess.Popen([PY, str(FIXTURES / "rank.py")], env=dict(env, RANK=str(r)), stdout=subprocess.PIPE, text=True)
                for r in range(world)
            ]
            outs = [p.communicate(timeout=60)[0] for p in ranks]
        self.assertEqual([p.returncode for p in ranks], [0] * world)
        self.assertIn(f"3 ranks joined on port {lease.port}", outs[0])


class StackTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="berth-py-stack-")

    def test_ready_endpoints_and_ordered_stop(self) -> None:
        status: List[str] = []
        with berth.up(FIXTURES / "web.yaml", run_dir=os.path.join(self.tmp, "run"), on_status=status.append) as stack:
            engines = stack.urls("engine")
            self.assertEqual(len(engines), 2)
            self.assertRegex(stack.url("proxy"), r"^http://127\.0\.0\.1:210\d\d$")
            # Without ports: the one port is named "port" (docs/stack.md, endpoints.json).
            self.assertEqual(stack.ports("proxy"), {"port": int(stack.url("proxy").rsplit(":", 1)[1])})
            shared = stack.shared("engine")
            self.assertEqual(shared["host"], "127.0.0.1")
            self.assertTrue(20000 <= shared["ports"]["rdv"] <= 20999, shared)
            self.assertEqual(stack.shared("proxy"), {})
            # Issue 32 item 16: an unknown service or replica is a clear error, never nothing.
            for call in (lambda: stack.urls("nope"), lambda: stack.ports("nope"), lambda: stack.shared("nope")):
                with self.assertRaisesRegex(KeyError, r"no service 'nope' in this stack \(services: engine, proxy\)"):
                    call()
            for call in (lambda: stack.ports("engine", 2), lambda: stack.url("engine", 5), lambda: stack.port("proxy", -1)):
                with self.assertRaisesRegex(KeyError, r"has no replica -?\d+ \(its replicas: 0-\d\)"):
                    call()
            for url in engines + [stack.url("proxy")]:
                with urllib.request.urlopen(url + "/", timeout=10) as r:
                    self.assertEqual(r.status, 200)
            pids = [r["pid"] for r in stack.endpoints["replicas"]]
        self.assertEqual(wait_dead(pids + [stack.pid], 1), [], "every service stopped when the block ended")
        self.assertEqual(stack.returncode, 143)
        joined = "\n".join(status)
        self.assertIn("proxy/0 ready", joined)
        # dependents first: the proxy stops before the engines
        stopping = [line.split()[1] for line in status if re.match(r"^[0-9:.]+ \S+ stopping ", line)]
        self.assertEqual(stopping[0], "proxy/0", joined)

    def test_up_from_a_thread_outlives_the_thread(self) -> None:
        # Issue 32 item 16: PR_SET_PDEATHSIG fired when the thread that started berth exited,
        # so a stack started from a worker thread was stopped at once.
        got: Dict[str, Any] = {}
        status: List[str] = []
        worker = threading.Thread(target=lambda: got.update(stack=berth.up(FIXTURES / "web.yaml", run_dir=os.path.join(self.tmp, "run"), on_status=status.append)))
        worker.start()
        worker.join()
        with got["stack"] as stack:
            # Give a stop caused by the thread's end time to show: berth must still run.
            stack._proc.wait_for(lambda: False, timeout=2)
            self.assertTrue(stack.running, "\n".join(status))
            with urllib.request.urlopen(stack.url("proxy") + "/", timeout=10) as r:
                self.assertEqual(r.status, 200)

    def test_keyboard_interrupt_in_a_threads_wait(self) -> None:
        # Issue 32 item 16: KeyboardInterrupt raised in a worker thread blocked in stack.wait()
        # (a long popen.wait took no exception) must stop the stack, leaving nothing running.
        got: Dict[str, Any] = {}
        waiting = threading.Event()

        def work() -> None:
            try:
                with berth.up(FIXTURES / "web.yaml", run_dir=os.path.join(self.tmp, "run"), on_status=lambda line: None) as stack:
                    got["stack"] = stack
                    waiting.set()
                    stack.wait()
            except KeyboardInterrupt:
                got["interrupted"] = True
            finally:
                waiting.set()

        worker = threading.Thread(target=work)
        worker.start()
        self.assertTrue(waiting.wait(120))
        stack = got["stack"]
        pids = [r["pid"] for r in stack.endpoints["replicas"]]
        self.assertTrue(all(alive(p) for p in pids))
        assert worker.ident is not None
        self.assertEqual(ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(KeyboardInterrupt)), 1)
        worker.join(60)
        self.assertFalse(worker.is_alive(), "the thread's wait took the KeyboardInterrupt")
        self.assertTrue(got.get("interrupted"), got)
        self.assertEqual(stack.returncode, 143)
        self.assertEqual(wait_dead(pids + [stack.pid], 1), [], "nothing left running after the interrupt")

    def test_a_service_printing_berths_json_fools_nothing(self) -> None:
        # Issue 32 item 16: the client read berth's JSON out of the mixed output (a line with
        # "replicas", a trailing {"error"} document); berth's events now have a pipe of their own.
        go = os.path.join(self.tmp, "go")
        job = liar(os.path.join(self.tmp, "job.py"), f"while not os.path.exists({go!r}): time.sleep(0.02)\nsys.exit(3)")
        web = liar(os.path.join(self.tmp, "web.py"), "import http.server as h\nh.HTTPServer(('127.0.0.1', int(sys.argv[1])), h.SimpleHTTPRequestHandler).serve_forever()")
        stack_file = os.path.join(self.tmp, "stack.yaml")
        with open(stack_file, "w", encoding="utf-8") as f:
            f.write(
                "services:\n"
                f"  web:\n    range: 21200-21299\n    logs: attach\n    command: [{PY}, {web}, '{{port}}']\n    ready: http://127.0.0.1:{{port}}/\n"
                f"  job:\n    job: true\n    command: [{PY}, {job}]\n"
            )
        out = io.StringIO()
        status: List[str] = []
        events: List[Dict[str, Any]] = []
        with self.assertRaises(berth.StoppedError) as cm:
            with berth.up(stack_file, run_dir=os.path.join(self.tmp, "run"), stdout=out, on_status=status.append, on_event=events.append) as stack:
                port = stack.port("web")
                self.assertTrue(21200 <= port <= 21299, port)
                self.assertEqual(stack.url("web"), f"http://127.0.0.1:{port}")
                self.assertEqual(stack.run_dir, os.path.join(self.tmp, "run"))
                with urllib.request.urlopen(stack.url("web") + "/", timeout=10) as r:
                    self.assertEqual(r.status, 200)
                with open(os.path.join(stack.run_dir, "endpoints.json"), encoding="utf-8") as f:
                    self.assertEqual([r["port"] for r in json.load(f)["replicas"] if r["service"] == "web"], [port])
                # The job's output so far: its stdout as it wrote it, its stderr line by line.
                self.assertTrue(stack._proc.wait_for(lambda: FAKE in out.getvalue(), timeout=30), out.getvalue())
                open(go, "w").close()
                stack.wait()
        # The job's status 3, not the 65 of the document it printed.
        self.assertEqual(cm.exception.exit_code, 3)
        self.assertNotIn("FAKE", str(cm.exception))
        self.assertEqual(out.getvalue(), FAKE, "the job's stdout passed through unchanged")
        self.assertIn(FAKE.rstrip("\n"), "\n".join(status), "the job's stderr passed through unchanged")
        self.assertIn("web/0 | " + FAKE.splitlines()[-1], status, "an attached service's lines, prefixed")
        self.assertEqual([e["event"] for e in events][-1], "exit")
        self.assertEqual(events[-1]["exitCode"], 3)
        self.assertIn("ready", [e["event"] for e in events])

    def test_url_in_the_services_scheme(self) -> None:
        with berth.up(FIXTURES / "schemes.yaml", run_dir=os.path.join(self.tmp, "run")) as stack:
            self.assertRegex(stack.url("db"), r"^postgresql://127\.0\.0\.1:220\d\d$")
            self.assertEqual(stack.urls("db"), [stack.url("db")])
            with self.assertRaisesRegex(KeyError, r"raw/0 has no url \(scheme: none\); use port\(\)"):
                stack.url("raw")
            self.assertTrue(22100 <= stack.port("raw") <= 22199)

    def test_failing_engine(self) -> None:
        status: List[str] = []
        with self.assertRaises(berth.ServiceFailedError) as cm:
            with berth.up(REPO / "examples/demo/stack-fail.yaml", run_dir=os.path.join(self.tmp, "run"), on_status=status.append):
                self.fail("the stack must not become ready")
        e = cm.exception
        self.assertIsInstance(e, berth.BerthError)
        self.assertEqual(e.exit_code, 70)
        self.assertEqual(e.service, "engine/1")
        self.assertIsNotNone(e.diagnostics)
        self.assertTrue(os.path.isfile(os.path.join(str(e.diagnostics), "diagnostics.json")))
        self.assertTrue(any("failed to load model" in line for line in e.stderr_tail), e.stderr_tail)
        self.assertIn("engine/1 failed", str(e))
        self.assertEqual(e.run_dir, os.path.join(self.tmp, "run"))

    def test_keyboard_interrupt_stops_the_stack(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO / "clients/python"))
        child = subprocess.Popen(
            [PY, str(FIXTURES / "interrupted.py"), str(FIXTURES / "web.yaml"), os.path.join(self.tmp, "run")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            first = child.stdout.readline()
            if not first:
                self.fail(f"the child did not start the stack: {child.communicate()[1]}")
            where = json.loads(first)
            self.assertTrue(all(alive(p) for p in where["services"]))
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
        self.assertIn("KeyboardInterrupt", err)
        self.assertEqual(wait_dead(where["services"] + [where["berth"]], 1), [], "nothing left running after Ctrl-C")


class GenerationTest(unittest.TestCase):
    def test_generations_reported_through_on_status(self) -> None:
        # issue 29: a job restarted as a group says so through on_status, and the stack knows its generation.
        tmp = tempfile.mkdtemp(prefix="berth-py-gen-")
        status: List[str] = []
        out = io.StringIO()
        with berth.up(FIXTURES / "generations.yaml", run_dir=os.path.join(tmp, "run"), on_status=status.append, stdout=out) as stack:
            code = stack.wait(timeout=120)
        self.assertEqual(code, 0, "\n".join(status))
        text = "\n".join(status)
        self.assertRegex(text, r"trainer: generation 0 ends: trainer/1 exited with status 3; stopping every rank, then generation 1 of 3")
        self.assertRegex(text, r"trainer/\d pending .*generation 1 of 3")
        self.assertEqual(stack.generation("trainer"), 1)
        self.assertIn("rank 1 generation 1 done", out.getvalue())


class RunTest(unittest.TestCase):
    def test_service_ready_and_stop(self) -> None:
        out = io.StringIO()
        with berth.run(
            [PY, "-m", "http.server", "{port}", "--bind", "127.0.0.1"],
            ready="http://127.0.0.1:{port}/",
            range="22000-22099",
            ready_timeout=30,
            stderr=out,
        ) as svc:
            self.assertTrue(22000 <= svc.port <= 22099)
            self.assertEqual(svc.url, f"http://127.0.0.1:{svc.port}")
            with urllib.request.urlopen(svc.url + "/", timeout=10) as r:
                self.assertEqual(r.status, 200)
            pid = svc.pid
        self.assertEqual(wait_dead([pid], 1), [])
        self.assertEqual(svc.returncode, 128 + signal.SIGTERM)

    def test_a_service_printing_berths_json_fools_nothing(self) -> None:
        tmp = tempfile.mkdtemp(prefix="berth-py-liar-")
        serve = liar(os.path.join(tmp, "serve.py"), "import http.server as h\nh.HTTPServer(('127.0.0.1', int(sys.argv[1])), h.SimpleHTTPRequestHandler).serve_forever()")
        out, err = io.StringIO(), io.StringIO()
        with berth.run([PY, serve, "{port}"], ready="http://127.0.0.1:{port}/", range="22100-22199", ready_timeout=30, stdout=out, stderr=err) as svc:
            self.assertTrue(22100 <= svc.port <= 22199, svc.info)
            self.assertNotEqual(svc.pid, 1)
            self.assertEqual(svc.name, "python3")
            with urllib.request.urlopen(svc.url + "/", timeout=10) as r:
                self.assertEqual(r.status, 200)
        self.assertEqual(out.getvalue(), FAKE, "the service's stdout passed through unchanged")
        self.assertIn(FAKE, err.getvalue(), "the service's stderr passed through unchanged")
        # Before ready, then failing: the message is berth's, not the document the service printed.
        fail = liar(os.path.join(tmp, "fail.py"), "sys.exit(3)")
        out, err = io.StringIO(), io.StringIO()
        with self.assertRaises(berth.ServiceFailedError) as cm:
            berth.run([PY, fail], ready="http://127.0.0.1:{port}/", stdout=out, stderr=err)
        self.assertEqual(cm.exception.exit_code, 70)
        self.assertIn("exited with status 3", str(cm.exception))
        self.assertNotIn("FAKE", str(cm.exception))
        self.assertEqual(cm.exception.stderr_tail, FAKE.splitlines())
        self.assertEqual(out.getvalue(), FAKE)

    def test_stdin_eof_stop_says_the_parent_went_away(self) -> None:
        # Issue 32 item 16: berth stopped on stdin EOF (--stop-on-stdin-eof) said "stopped by SIGTERM".
        tmp = tempfile.mkdtemp(prefix="berth-py-eof-")
        cases = [
            (["up", str(FIXTURES / "web.yaml"), "--run-dir", os.path.join(tmp, "run")], "stack ready",
             ["stdin reached EOF: the parent that started berth went away: stopping the stack", "stack stopping: the parent went away (stdin EOF)", "stopped because the parent went away (stdin EOF); stack torn down, exit 143"]),
            (["run", "--ready", "http://127.0.0.1:{port}/", "--", PY, "-m", "http.server", "{port}", "--bind", "127.0.0.1"], " ready on ",
             ["stdin reached EOF: the parent that started berth went away; stopping python3"]),
            (["run", "--ready", "http://127.0.0.1:{port}/", "--", PY, "-c", "import time; print('up', flush=True); time.sleep(60)"], None,
             ["stopped because the parent went away (stdin EOF) before python3 was ready; service stopped, exit 143"]),
        ]
        for args, ready, said in cases:
            child = subprocess.Popen(berth.find_berth() + args[:1] + ["--stop-on-stdin-eof"] + args[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                assert child.stdin is not None and child.stderr is not None and child.stdout is not None
                if ready is not None:
                    self.assertIn(ready, read_until(child.stderr, ready))
                else:
                    self.assertEqual(child.stdout.readline(), "up\n")
                child.stdin.close()  # the parent "goes away"
                err = child.stderr.read()
                self.assertEqual(child.wait(60), 143, err)
            finally:
                if child.poll() is None:
                    child.kill()
                child.stdout.close()
                child.stderr.close()
            for text in said:
                self.assertIn(text, err)
            # The services did get SIGTERM; berth did not.
            self.assertNotIn("stopped by SIGTERM", err)
            self.assertNotIn("berth got SIGTERM", err)

    def test_events_fd_is_berths_own_channel(self) -> None:
        # berth run --events-fd N from a shell-like caller: the events, and a descriptor berth
        # was not given (Node's own, e.g. its epoll fd 3) refused with 64 before anything starts.
        fake = '{"event":"exit","exitCode":9}'
        # A service that becomes ready, then its parent goes away; then one that fails before ready.
        for code, names, status in (
            ("import http.server as h, sys\nprint(sys.argv[2], flush=True)\nh.HTTPServer(('127.0.0.1', int(sys.argv[1])), h.SimpleHTTPRequestHandler).serve_forever()", ["ready", "parent-gone", "exit"], 143),
            ("import sys\nprint(sys.argv[2], flush=True)", ["error"], 70),
        ):
            read_end, write_end = os.pipe()
            try:
                child = subprocess.Popen(
                    berth.find_berth() + ["run", "--events-fd", str(write_end), "--stop-on-stdin-eof", "--ready", "http://127.0.0.1:{port}/", "--", PY, "-c", code, "{port}", fake],
                    pass_fds=(write_end,), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                )
            finally:
                os.close(write_end)
            with os.fdopen(read_end) as f:
                first = json.loads(f.readline())
                assert child.stdin is not None
                child.stdin.close()
                events = [first] + [json.loads(line) for line in f]
            with child:
                assert child.stdout is not None and child.stderr is not None
                out, err = child.stdout.read(), child.stderr.read()
            self.assertEqual(child.wait(60), status, err)
            self.assertEqual(out, fake + "\n", "the service's stdout, unchanged")
            self.assertEqual([e["event"] for e in events], names, events)
            last = events[-1]
            self.assertEqual(last.get("exitCode", last.get("error", {}).get("exitCode")), status)
        bad = subprocess.run(berth.find_berth() + ["run", "--events-fd", "3", "--", "true"], capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 64, bad.stderr)
        self.assertIn("--events-fd 3: file descriptor 3 is not one the caller gave berth", bad.stderr)

    def test_learned_port(self) -> None:
        # issue 28: http.server 0 chooses its port; berth learns and leases it.
        with berth.run([PY, "-m", "http.server", "0", "--bind", "127.0.0.1"], port="learn", ready="http://127.0.0.1:{port}/", ready_timeout=30, stderr=io.StringIO()) as svc:
            self.assertGreater(svc.port, 0)
            with urllib.request.urlopen(svc.url + "/", timeout=10) as r:
                self.assertEqual(r.status, 200)
            self.assertIn(svc.port, [row["port"] for row in leases()])
        with self.assertRaises(berth.UsageError):
            berth.run([PY, "-m", "http.server", "{port}"], port="learn", stderr=io.StringIO())

    def test_stack_learned_ports(self) -> None:
        tmp = tempfile.mkdtemp(prefix="berth-py-learn-")
        stack = os.path.join(tmp, "stack.yaml")
        with open(stack, "w", encoding="utf-8") as f:
            f.write(f"services:\n  web:\n    port: learn\n    command: [{PY}, -m, http.server, '0', --bind, 127.0.0.1]\n    ready: http://127.0.0.1:{{port}}/\n")
        with berth.up(stack, run_dir=os.path.join(tmp, "run"), on_status=lambda line: None) as st:
            port = st.port("web")
            self.assertEqual(st.url("web"), f"http://127.0.0.1:{port}")
            self.assertEqual(st.ports("web"), {"port": port})
            with urllib.request.urlopen(st.url("web") + "/", timeout=10) as r:
                self.assertEqual(r.status, 200)

    def test_fd_handoff(self) -> None:
        code = "import http.server as h, socket\ns = h.HTTPServer(('', 0), h.SimpleHTTPRequestHandler, False)\ns.socket = socket.socket(fileno=3)\ns.serve_forever()"
        with berth.run([PY, "-c", code], handoff="fd", ready="http://127.0.0.1:{port}/", stderr=io.StringIO()) as svc:
            with urllib.request.urlopen(svc.url + "/", timeout=10) as r:
                self.assertEqual(r.status, 200)

    def test_failure_before_ready(self) -> None:
        with self.assertRaises(berth.ServiceFailedError) as cm:
            berth.run(
                [PY, "-c", "import sys; print('model.bin: no such file', file=sys.stderr); sys.exit(3)"],
                ready="http://127.0.0.1:{port}/",
                stderr=io.StringIO(),
            )
        e = cm.exception
        self.assertEqual(e.exit_code, 70)
        self.assertIn("exited with status 3", str(e))
        self.assertEqual(e.stderr_tail, ["model.bin: no such file"])
        self.assertTrue(os.path.isfile(os.path.join(str(e.diagnostics), "diagnostics.json")))

    def test_nul_in_a_name_is_a_usage_error(self) -> None:
        # Issue 32 item 16: before, subprocess's ValueError ("embedded null byte") came through.
        with self.assertRaisesRegex(berth.UsageError, r"NUL byte"):
            berth.port(range="20000-20999", name="a\0b")
        with self.assertRaisesRegex(berth.UsageError, r"NUL byte"):
            berth.run([PY, "-c", "pass"], name="svc\0x")

    def test_usage_error(self) -> None:
        with self.assertRaises(berth.UsageError):
            berth.run([PY, "-c", "pass"], handoff="sideways")


class FindTest(unittest.TestCase):
    def test_order(self) -> None:
        self.assertEqual(berth.find_berth(["/bin/echo", "y"]), ["/bin/echo", "y"])
        saved = os.environ.get("BERTH")
        try:
            os.environ["BERTH"] = "node /opt/berth/dist/berth.cjs"
            self.assertEqual(berth.find_berth(), ["node", "/opt/berth/dist/berth.cjs"])
            del os.environ["BERTH"]
            path = os.environ.get("PATH", "")
            os.environ["PATH"] = "/nonexistent"
            try:
                with self.assertRaises(berth.BerthNotFoundError):
                    berth.find_berth()
            finally:
                os.environ["PATH"] = path
        finally:
            if saved is not None:
                os.environ["BERTH"] = saved


class NotFoundTest(unittest.TestCase):
    def test_names_every_place_and_how_to_install(self) -> None:
        # Outside the clone, no berth on PATH, no $BERTH: never npx's "could not determine executable".
        saved = dict(os.environ)
        cwd = os.getcwd()
        outside = tempfile.mkdtemp(prefix="berth-py-outside-")
        try:
            os.environ.pop("BERTH", None)
            os.environ["PATH"] = outside
            os.chdir(outside)
            with self.assertRaises(berth.BerthNotFoundError) as cm:
                berth.port()
            text = str(cm.exception)
            for place in ["executable=", "$BERTH", os.path.join("_bin", "berth"), f"berth on PATH ({outside})", f"in {outside} or a parent"]:
                self.assertIn(place, text)
            self.assertIn("pip install", text)
            self.assertIn("npm run build:bin", text)
            self.assertNotIn("could not determine", text)
            done = subprocess.run([PY, "-m", "berth", "--version"], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO / "clients/python")))
            self.assertEqual(done.returncode, 127, done.stderr)
            self.assertIn("cannot find berth; looked at:", done.stderr)
        finally:
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(saved)

    def test_bundled_executable_first_after_explicit_ones(self) -> None:
        # A package with berth/_bin/berth (as the platform wheels install it): found before PATH,
        # after executable= and $BERTH. Run from tmp: the working directory would come first on sys.path.
        tmp = Path(tempfile.mkdtemp(prefix="berth-py-bundled-"))
        pkg = tmp / "site" / "berth"
        (pkg / "_bin").mkdir(parents=True)
        for f in ("__init__.py", "__main__.py"):
            (pkg / f).write_text((REPO / "clients/python/berth" / f).read_text())
        exe = pkg / "_bin" / "berth"
        exe.write_text("#!/bin/sh\necho bundled \"$@\"\n")
        exe.chmod(0o644)  # an unpacker that dropped the mode: the client restores it
        on_path = tmp / "bin"
        on_path.mkdir()
        (on_path / "berth").write_text("#!/bin/sh\necho from-path\n")
        (on_path / "berth").chmod(0o755)
        env = dict(os.environ, PYTHONPATH=str(tmp / "site"), PATH=f"{on_path}:/usr/bin:/bin")
        env.pop("BERTH", None)
        show = "import berth; print(berth.find_berth())"
        out = subprocess.run([PY, "-c", show], capture_output=True, text=True, env=env, cwd=tmp, check=True).stdout
        self.assertEqual(out.strip(), repr([str(exe)]))
        out = subprocess.run([PY, "-c", show], capture_output=True, text=True, env=dict(env, BERTH="/bin/echo"), cwd=tmp, check=True).stdout
        self.assertEqual(out.strip(), repr(["/bin/echo"]))
        out = subprocess.run([PY, "-m", "berth", "--version"], capture_output=True, text=True, env=env, cwd=tmp, check=True).stdout
        self.assertEqual(out, "bundled --version\n")


class HardeningTest(unittest.TestCase):
    """Bad arguments are UsageError (or BerthNotFoundError) with a clear message, never a raw
    IndexError/PermissionError/OverflowError, and never run some other program."""

    def test_empty_command(self) -> None:
        for command in ([], [""]):
            with self.assertRaises(berth.UsageError) as cm:
                berth.run(command)
            self.assertIn("command is empty", str(cm.exception))

    def test_bad_executables(self) -> None:
        tmp = Path(tempfile.mkdtemp(prefix="berth-py-exe-"))
        marker = tmp / "ran"
        # Programs named like berth's commands on PATH: executable="" must not run them.
        for name in ("port", "up", "run", "release"):
            (tmp / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
            (tmp / name).chmod(0o755)
        plain = tmp / "not-executable"
        plain.write_text("#!/bin/sh\n")
        saved = os.environ["PATH"]
        os.environ["PATH"] = f"{tmp}:{saved}"
        try:
            cases = [("", "names no program"), ("  ", "names no program"), ([], "names no program"), (str(tmp), "is a directory"), (str(plain), "is not executable")]
            for exe, words in cases:
                for call in (lambda: berth.port(executable=exe), lambda: berth.up("x.yaml", executable=exe), lambda: berth.run(["true"], executable=exe), lambda: berth.release(all=True, executable=exe)):
                    with self.assertRaises(berth.UsageError, msg=repr(exe)) as cm:
                        call()
                    self.assertIn(words, str(cm.exception))
            with self.assertRaises(berth.BerthNotFoundError):
                berth.port(executable=str(tmp / "missing"))
        finally:
            os.environ["PATH"] = saved
        self.assertFalse(marker.exists(), "a program from PATH named like a berth command ran")

    def test_durations(self) -> None:
        for bad in (float("inf"), float("-inf"), float("nan"), -1, True):
            with self.assertRaises(berth.UsageError, msg=repr(bad)) as cm:
                berth.port(ttl=bad)
            self.assertIn("ttl=", str(cm.exception))
            with self.assertRaises(berth.UsageError, msg=repr(bad)) as cm:
                berth.run(["true"], ready_timeout=bad)
            self.assertIn("ready_timeout=", str(cm.exception))

    def test_output_a_stream_cannot_encode_is_kept(self) -> None:
        raw = io.BytesIO()
        ascii_out = io.TextIOWrapper(raw, encoding="ascii")
        code = "import sys, http.server as h\nfor line in ['caf\u00e9 ready', 'plain', '\u65e5\u672c']: print(line, flush=True)\nh.HTTPServer(('127.0.0.1', int(sys.argv[1])), h.SimpleHTTPRequestHandler).serve_forever()"
        with berth.run([PY, "-c", code, "{port}"], ready="http://127.0.0.1:{port}/", stdout=ascii_out, stderr=io.StringIO()) as svc:
            deadline = time.monotonic() + 10
            while raw.getvalue().count(b"\n") < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            svc.stop()
        ascii_out.flush()
        self.assertEqual(raw.getvalue().decode("ascii").splitlines(), ["caf\\xe9 ready", "plain", "\\u65e5\\u672c"])

    def test_ready_timeout_tail_is_the_services_stderr(self) -> None:
        for said, tail in (("loading weights", ["loading weights"]), ("", [])):
            code = f"import sys, time\nif {said!r}: print({said!r}, file=sys.stderr, flush=True)\ntime.sleep(60)"
            with self.assertRaises(berth.ReadyTimeoutError) as cm:
                berth.run([PY, "-c", code], ready="http://127.0.0.1:{port}/", ready_timeout=1, stderr=io.StringIO())
            self.assertEqual(cm.exception.stderr_tail, tail)
            self.assertTrue(os.path.isfile(os.path.join(str(cm.exception.diagnostics), "diagnostics.json")))

    def test_up_runs_makes_a_fresh_directory_per_call(self) -> None:
        tmp = tempfile.mkdtemp(prefix="berth-py-runs-")
        dirs = []
        for _ in range(2):
            with berth.up(FIXTURES / "web.yaml", runs=os.path.join(tmp, "runs"), on_status=lambda line: None) as stack:
                dirs.append(stack.run_dir)
        self.assertEqual(len(set(dirs)), 2, dirs)
        self.assertTrue(all(os.path.dirname(d) == os.path.join(tmp, "runs") for d in dirs), dirs)
        self.assertTrue(all(os.path.isfile(os.path.join(d, "endpoints.json")) for d in dirs))
        with self.assertRaises(berth.UsageError) as cm:
            berth.up(FIXTURES / "web.yaml", run_dir=dirs[0], on_status=lambda line: None)
        self.assertIn("already holds a run", str(cm.exception))
        self.assertIn("runs=", str(cm.exception))
        with self.assertRaises(berth.UsageError):
            berth.up(FIXTURES / "web.yaml", run_dir=dirs[0], runs=tmp)


if __name__ == "__main__":
    unittest.main()
