"""Subscribes on the first NATS server, publishes on the last: the message crosses the routes.

argv[1]: every server's HOST:PORT, comma-joined ({nats.hostports}). Speaks the NATS text
protocol on plain sockets (no client library needed). Prints the message and the servers it
went through; exits 1 if it does not arrive within 30 s.
"""
import socket
import sys
import time


class Conn:
    def __init__(self, hostport):
        host, port = hostport.rsplit(":", 1)
        self.s = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
        self.buf = b""
        info = self.line()
        assert info.startswith(b"INFO "), info
        self.send(b'CONNECT {"verbose":false,"pedantic":false}\r\n')
        self.ping()

    def send(self, data):
        self.s.sendall(data)

    def line(self, until=None):
        """The next protocol line, or None when `until` (a monotonic time) passes first."""
        while b"\r\n" not in self.buf:
            if until is not None:
                left = until - time.monotonic()
                if left <= 0:
                    return None
                self.s.settimeout(left)
            try:
                chunk = self.s.recv(4096)
            except socket.timeout:
                return None
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def ping(self):
        self.send(b"PING\r\n")
        while (line := self.line()) != b"PONG":
            if line == b"PING":
                self.send(b"PONG\r\n")


servers = sys.argv[1].split(",")
sub = Conn(servers[0])
sub.send(b"SUB berth.check 1\r\n")
sub.ping()
pub = Conn(servers[-1])
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    # The subscription's interest reaches the other servers over the routes shortly after.
    pub.send(b"PUB berth.check 5\r\nhello\r\n")
    pub.ping()
    line = sub.line(until=time.monotonic() + 0.5)
    if line is not None and line.startswith(b"MSG berth.check 1 5"):
        print(f"{sub.line().decode()} from {servers[-1]} to {servers[0]}, a cluster of {len(servers)}")
        sys.exit(0)
print("no message crossed the cluster within 30 s", file=sys.stderr)
sys.exit(1)
