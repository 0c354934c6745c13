"""redis-py, a real client library, against keel in RESP2 and RESP3.

Run by scripts/test.sh with pytest; starts target/debug/keel-server (built
by `cargo test`) on a free port.
"""
import os
import signal
import socket
import subprocess
import time

import pytest
import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KEEL_SERVER", os.path.join(ROOT, "target", "debug", "keel-server"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def server():
    port = free_port()
    proc = subprocess.Popen([BINARY, "--port", str(port), "--save", ""], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield port
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


@pytest.fixture(params=[2, 3])
def r(server, request):
    client = redis.Redis(port=server, protocol=request.param, decode_responses=True)
    client.flushall()
    yield client
    client.close()


def test_strings(r):
    assert r.set("k", "v") is True
    assert r.get("k") == "v"
    assert r.get("missing") is None
    assert r.set("k", "w", nx=True) is None
    assert r.set("k", "w", xx=True, get=True) == "v"
    assert r.incr("n") == 1
    assert r.incrby("n", 41) == 42
    assert r.incrbyfloat("f", 10.5) == 10.5
    assert r.incrbyfloat("f", 0.1) == pytest.approx(10.6)
    assert r.mset({"a": "1", "b": "2"}) is True
    assert r.mget("a", "b", "zz") == ["1", "2", None]
    assert r.append("a", "23") == 3
    assert r.getrange("a", 0, 1) == "12"
    assert r.strlen("a") == 3


def test_expiry_and_keys(r):
    r.set("t", "v", ex=100)
    assert 99 <= r.ttl("t") <= 100
    assert r.persist("t") is True
    assert r.ttl("t") == -1
    assert r.expire("t", 100, nx=True) is True
    assert r.expire("t", 50, gt=True) is False
    assert r.exists("t", "nope") == 1
    assert r.type("t") == "string"
    assert r.rename("t", "u") is True
    assert r.delete("u") == 1
    for i in range(50):
        r.set(f"scan:{i}", i)
    assert set(r.scan_iter(match="scan:*", count=7)) == {f"scan:{i}" for i in range(50)}
    assert sorted(r.keys("scan:1*")) == sorted(["scan:1"] + [f"scan:1{i}" for i in range(10)])
    assert r.dbsize() == 50


def test_errors(r):
    r.set("s", "x")
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r.incr("s")
    with pytest.raises(redis.ResponseError, match="unknown command 'NOSUCH', with args beginning with: 'a'"):
        r.execute_command("NOSUCH", "a")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'get' command"):
        r.execute_command("GET")


def test_server_commands(r):
    info = r.info()
    assert info["redis_version"] == "7.4.1"
    assert "keel_version" in info
    assert r.config_get("databases") == {"databases": "16"}
    assert r.ping() is True
    assert r.echo("hi") == "hi"
    r.client_setname("py")
    assert r.client_getname() == "py"
    assert any(c["name"] == "py" for c in r.client_list())
    assert r.command_count() > 50


def test_hello_resp3_shapes(server):
    c = redis.Redis(port=server, protocol=3, decode_responses=True)
    # RESP3: CONFIG GET is a map, a missing key is null.
    assert c.execute_command("CONFIG", "GET", "port") == {"port": str(server)}
    assert c.get("definitely-missing") is None
    c.close()
