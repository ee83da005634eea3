"""Starting `scylla-emulator` processes and talking to their console, for the tests.

Every emulator of this suite listens on `127.0.N.1` .. `127.0.N.<nodes>` with N in
PYTHON_RANGES: the embedded cluster's own allocator (`src/server/listen.rs`) never picks a
`127.0.x.y` address (it stays off 127.0.0.0/16), and the Rust tests that pass a fixed
`--address` use 127.77.x.y. Other conformance suites take other N (see conformance/README.md).
"""

import itertools
import os
import select
import signal
import subprocess
import time
import uuid

# Third octets this suite may use: 127.0.100.0/24 .. 127.0.149.0/24.
PYTHON_RANGES = range(100, 150)

_next_range = itertools.count()


def wait_until(condition, timeout, what, interval=0.05):
    """Polls `condition` until it returns a true value (which is returned), failing after
    `timeout` seconds with `what` in the message."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def unique_name(prefix):
    """A fresh keyspace or table name."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


class Emulator:
    """One `scylla-emulator` process: its contact point, its console, its log."""

    READY_TIMEOUT = 60

    def __init__(self, nodes=3, shards=2, extra_args=(), log_dir=None):
        binary = os.environ.get("SCYLLA_EMULATOR")
        if not binary:
            raise RuntimeError("SCYLLA_EMULATOR is not set (run conformance/run)")
        self.nodes = nodes
        self.shards = shards
        last_error = None
        # A range can be taken by a process we do not know of: try the next one.
        for _ in range(len(PYTHON_RANGES)):
            octet = PYTHON_RANGES[next(_next_range) % len(PYTHON_RANGES)]
            address = f"127.0.{octet}.1"
            log_path = os.path.join(log_dir or os.environ.get("CONFORMANCE_LOGS", "."),
                                    f"emulator-127.0.{octet}.log")
            self._log = open(log_path, "ab")
            self.process = subprocess.Popen(
                [binary, "--nodes", str(nodes), "--shards", str(shards), "--port", "0",
                 "--address", address, *extra_args],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                # Unbuffered: `_read_line` selects on the pipe, and a buffered reader could
                # hold a second line (a `cql` row, then its `ok`) that select never reports.
                bufsize=0)
            self.log_path = log_path
            line = self._read_line(self.READY_TIMEOUT)
            if line is not None and line.startswith(f"ready {address}:"):
                self.host = address
                self.port = int(line.rsplit(":", 1)[1])
                self.addresses = [f"127.0.{octet}.{i}" for i in range(1, nodes + 1)]
                return
            last_error = f"{address}: {line!r} (log: {log_path})"
            self._kill()
        raise RuntimeError(f"scylla-emulator did not start: {last_error}")

    def _read_line(self, timeout):
        """The next stdout line without its newline, or None at end of file or timeout."""
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.process.stdout.readline()
        if not line:
            return None
        return line.decode().rstrip("\n")

    def command(self, line, timeout=30):
        """Runs one console command; returns the lines it printed, the `ok ...` reply last.
        Fails on an `error: ...` reply."""
        self.process.stdin.write((line + "\n").encode())
        self.process.stdin.flush()
        out = []
        while True:
            reply = self._read_line(timeout)
            if reply is None:
                raise AssertionError(f"no reply to {line!r} (log: {self.log_path})")
            out.append(reply)
            if reply == "ok" or reply.startswith("ok "):
                return out
            if reply.startswith("error:"):
                raise AssertionError(f"{line!r}: {reply}")

    def stats(self):
        """Request counts by (node, shard), from the console's `stats`."""
        reply = self.command("stats")[-1]
        counts = {}
        for item in reply[len("ok"):].split():
            where, n = item.split("=")
            node, shard = where.split("/")
            counts[(int(node), int(shard))] = int(n)
        return counts

    def node_index(self, address):
        """1-based index of the node listening on `address`."""
        return self.addresses.index(address) + 1

    def _kill(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError(
                    f"scylla-emulator ignored SIGTERM for 15 s (log: {self.log_path})")
        for f in (self.process.stdin, self.process.stdout):
            try:
                f.close()
            except OSError:
                pass
        self._log.close()

    def stop(self):
        """Stops the process (SIGTERM, then SIGKILL after 15 s)."""
        self._kill()
