"""The metrics endpoint (metrics-port) read by the Prometheus project's own
Python parser, which rejects what the text exposition format does not allow.

Run by scripts/test.sh with pytest; starts target/debug/keel-server (or
$KEEL_SERVER) on free ports.
"""
import os
import signal
import socket
import subprocess
import urllib.error
import urllib.request

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from test_redis_py import BINARY, free_port


def wait_ready(proc, port):
    # Polls until the server answers (what the redis-py fixture does).
    while True:
        assert proc.poll() is None, "keel-server exited at start"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            pass


@pytest.fixture(scope="module")
def server():
    port, mport = free_port(), free_port()
    proc = subprocess.Popen(
        [BINARY, "--port", str(port), "--save", "", "--metrics-port", str(mport)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_ready(proc, port)
    yield port, mport
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


def scrape(mport, path="/metrics"):
    with urllib.request.urlopen(f"http://127.0.0.1:{mport}{path}", timeout=10) as r:
        return r.headers.get("Content-Type"), r.read().decode()


def test_every_line_parses(server):
    port, mport = server
    r = redis.Redis(port=port)
    for i in range(10):
        r.set(f"k{i}", "v")
    r.get("k1")
    r.config_get("maxmemory")
    ctype, text = scrape(mport)
    assert ctype == "text/plain; version=0.0.4; charset=utf-8"
    families = {f.name: f for f in text_string_to_metric_families(text)}
    # The parser drops `_total` from counter family names.
    assert families["redis_commands"].type == "counter"
    calls = {s.labels["cmd"]: s.value for s in families["redis_commands"].samples}
    assert calls["set"] == 10
    assert calls["config|get"] == 1
    keys = {s.labels["db"]: s.value for s in families["redis_db_keys"].samples}
    assert keys["db0"] == 10
    assert families["keel_aof_fsync_duration_seconds"].type == "histogram"
    assert families["redis_instance_info"].samples[0].labels["redis_version"] == "7.4.1"
    for f in families.values():
        assert f.documentation, f.name
    r.close()


def test_other_paths_are_404(server):
    _, mport = server
    with pytest.raises(urllib.error.HTTPError) as e:
        scrape(mport, "/")
    assert e.value.code == 404
