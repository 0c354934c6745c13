#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz corpus (fuzz/corpus/<target>/seed-*).

RDB and AOF files come from a real redis-server 7.0 (it must be on PATH):
small datasets with every type in each of its encodings, expiries, several
databases, a function library, with and without compression and checksum.
Older encodings redis 7 no longer writes (ziplist, zipmap, quicklist of
ziplists, the text-double zset, second expiries) are assembled here.
Replies for resp_decoder are captured from the same server (RESP2 and
RESP3). Run from anywhere: `python3 fuzz/seeds.py`; then minimise with
`cargo fuzz cmin` (docs/fuzzing.md).
"""

import atexit
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def encode(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, (int, float)):
            a = repr(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_reply(f):
    """One raw reply from a file-like socket, as bytes."""
    line = f.readline()
    tag, body = line[:1], line[1:-2]
    if tag in b"$!=":
        n = int(body)
        return line if n < 0 else line + f.read(n + 2)
    if tag in b"*~>":
        n = int(body)
        return line + b"".join(read_reply(f) for _ in range(max(n, 0)))
    if tag in b"%|":
        n = int(body)
        out = line + b"".join(read_reply(f) for _ in range(2 * n))
        return out + read_reply(f) if tag == b"|" else out
    return line


class Redis:
    def __init__(self, conf):
        self.dir = tempfile.mkdtemp(prefix="keel-seeds-")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        args = ["redis-server", "--port", str(self.port), "--dir", self.dir,
                "--save", "", "--appendonly", "no"]
        for k, v in conf.items():
            args += ["--" + k, v]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
        # Stopped even when a step fails half-way.
        atexit.register(self.close)
        for _ in range(100):
            try:
                self.sock = socket.create_connection(("127.0.0.1", self.port))
                break
            except OSError:
                time.sleep(0.05)
        self.f = self.sock.makefile("rb")

    def call(self, *args):
        self.sock.sendall(encode(*args))
        return read_reply(self.f)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def dataset(r, big=False):
    """A few keys of every type (more elements with `big`)."""
    n = 20 if big else 3
    r.call("set", "str", "hello")
    r.call("set", "int", 12345)
    r.call("set", "neg", -7)
    r.call("set", "long", "x" * 40 + "y" * 40)  # LZF-compressible
    r.call("set", "ttl", "v", "px", 100000000)
    r.call("rpush", "list", *["item%d" % i for i in range(n)], 7, -3, 1 << 40)
    r.call("sadd", "ints", *range(n + 2))
    r.call("sadd", "set", *["m%d" % i for i in range(n)])
    r.call("zadd", "zset", *sum([[i / 3, "z%d" % i] for i in range(n)], []))
    r.call("zadd", "zinf", "inf", "top", "-inf", "bottom", 0, "zero")
    r.call("hset", "hash", *sum([["f%d" % i, "v%d" % i] for i in range(n)], []))
    r.call("hset", "hnum", "a", 1, "b", -2)
    for i in range(n):
        r.call("xadd", "stream", "%d-%d" % (1000 + i, i), "sensor", i, "temp", "21.5")
    r.call("xadd", "stream", "2000-0", "other", "x")
    r.call("xgroup", "create", "stream", "g1", "0")
    r.call("xgroup", "createconsumer", "stream", "g1", "bob")
    r.call("xreadgroup", "group", "g1", "alice", "count", 2, "streams", "stream", ">")
    r.call("xdel", "stream", "1001-1")
    r.call("select", 3)
    r.call("set", "db3", "yes")
    r.call("lpush", "db3list", "a")
    r.call("select", 0)


LIB = "#!lua name=seedlib\nredis.register_function('hi', function(keys, args) return 'hi' end)"


def rdb_seeds():
    variants = {
        "listpack": {},
        "tables": {  # every collection past its listpack/intset limits
            "hash-max-listpack-entries": "2",
            "zset-max-listpack-entries": "2",
            "set-max-intset-entries": "2",
            "list-max-listpack-size": "2",
        },
        "plain": {"rdbcompression": "no", "rdbchecksum": "no"},
    }
    for name, conf in variants.items():
        r = Redis(conf)
        dataset(r, big=name == "tables")
        r.call("function", "load", LIB)
        r.call("save")
        with open(os.path.join(r.dir, "dump.rdb"), "rb") as f:
            put("rdb_load", name + ".rdb", f.read())
        r.close()
    r = Redis({})
    r.call("set", "only", "key")
    r.call("save")
    with open(os.path.join(r.dir, "dump.rdb"), "rb") as f:
        put("rdb_load", "one-key.rdb", f.read())
    r.call("flushall")
    r.call("save")
    with open(os.path.join(r.dir, "dump.rdb"), "rb") as f:
        put("rdb_load", "empty.rdb", f.read())
    r.close()


# Encodings of older Redis versions, assembled by hand.

def rdb_len(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    return b"\x80" + struct.pack(">I", n)


def rdb_str(s):
    if isinstance(s, str):
        s = s.encode()
    return rdb_len(len(s)) + s


def ziplist(items):
    body = b""
    prev = 0
    offsets = []
    for it in items:
        offsets.append(10 + len(body))
        pl = bytes([prev]) if prev < 254 else b"\xfe" + struct.pack("<I", prev)
        if isinstance(it, int):
            if 0 <= it <= 12:
                enc = bytes([0xF1 + it])
            elif -128 <= it < 128:
                enc = b"\xfe" + struct.pack("<b", it)
            elif -32768 <= it < 32768:
                enc = b"\xc0" + struct.pack("<h", it)
            else:
                enc = b"\xe0" + struct.pack("<q", it)
        else:
            it = it.encode() if isinstance(it, str) else it
            assert len(it) < 64
            enc = bytes([len(it)]) + it
        entry = pl + enc
        body += entry
        prev = len(entry)
    tail = offsets[-1] if offsets else 10
    total = 10 + len(body) + 1
    return struct.pack("<IIH", total, tail, len(items)) + body + b"\xff"


def zipmap(pairs):
    out = bytes([len(pairs)])
    for k, v in pairs:
        out += bytes([len(k)]) + k.encode() + bytes([len(v)]) + b"\x00" + v.encode()
    return out + b"\xff"


def intset(values, width=2):
    fmt = {2: "<h", 4: "<i", 8: "<q"}[width]
    return struct.pack("<II", width, len(values)) + b"".join(
        struct.pack(fmt, v) for v in sorted(values))


def old_rdb(version, items):
    # Checksum 0: "saved with checksum disabled", so no CRC64 is needed.
    out = b"REDIS%04d" % version + b"\xfe\x00" + b"".join(items) + b"\xff"
    return out + (b"\x00" * 8 if version >= 5 else b"")


def old_rdb_seeds():
    put("rdb_load", "v9-ziplists.rdb", old_rdb(9, [
        b"\x0a" + rdb_str("zl-list") + rdb_str(ziplist(["a", "b", 5, -100, 70000, 1 << 40])),
        b"\x0c" + rdb_str("zl-zset") + rdb_str(ziplist(["one", 1, "two", "2.5"])),
        b"\x0d" + rdb_str("zl-hash") + rdb_str(ziplist(["f", "v", "n", 12])),
        b"\x0e" + rdb_str("ql-list") + rdb_len(2) + rdb_str(ziplist(["x", "y"]))
        + rdb_str(ziplist([3, "z"])),
        b"\x0b" + rdb_str("is-set") + rdb_str(intset([1, 2, 3, -4])),
        b"\x0b" + rdb_str("is-set64") + rdb_str(intset([1 << 40, -5], 8)),
    ]))
    put("rdb_load", "v4-zipmap.rdb", old_rdb(4, [
        b"\x09" + rdb_str("zm-hash") + rdb_str(zipmap([("a", "1"), ("bb", "two")])),
    ]))
    put("rdb_load", "v6-old-types.rdb", old_rdb(6, [
        b"\xfd" + struct.pack("<I", 4000000000) + b"\x00" + rdb_str("exp") + rdb_str("v"),
        b"\x03" + rdb_str("old-zset") + rdb_len(3) + rdb_str("a") + b"\x031.5"
        + rdb_str("b") + b"\xfe" + rdb_str("c") + b"\xff",
        b"\x01" + rdb_str("plain-list") + rdb_len(2) + rdb_str("p") + rdb_str("q"),
        b"\x02" + rdb_str("plain-set") + rdb_len(2) + rdb_str("s1") + rdb_str("s2"),
        b"\x04" + rdb_str("plain-hash") + rdb_len(1) + rdb_str("hf") + rdb_str("hv"),
        b"\x00" + rdb_str("enc-int") + b"\xc0\x7f",
        b"\x00" + rdb_str("enc-int16") + b"\xc1\x00\x80",
        b"\x00" + rdb_str("enc-int32") + b"\xc2\x00\x00\x00\x80",
    ]))


def aof_seeds():
    r = Redis({"appendonly": "yes", "aof-timestamp-enabled": "yes"})
    time.sleep(0.3)
    dataset(r)
    r.call("multi")
    r.call("incr", "counter")
    r.call("lpush", "list", "in-multi")
    r.call("exec")
    r.call("expire", "str", 100000)
    r.call("del", "neg")
    r.call("eval", "return redis.call('set', KEYS[1], ARGV[1])", 1, "scripted", "v")
    time.sleep(0.3)
    d = os.path.join(r.dir, "appendonlydir")
    incr = [f for f in os.listdir(d) if f.endswith(".incr.aof")][0]
    with open(os.path.join(d, incr), "rb") as f:
        log = f.read()
    r.call("bgrewriteaof")
    time.sleep(1)
    base = [f for f in os.listdir(d) if f.endswith(".base.rdb")][0]
    with open(os.path.join(d, base), "rb") as f:
        preamble = f.read()
    r.close()
    put("aof_load", "incr.aof", log)
    put("aof_load", "base.rdb", preamble)
    put("aof_load", "preamble-and-tail.aof", preamble + encode("set", "after", "preamble"))
    # Cut mid-record and mid-transaction, and with keel's preallocated
    # zeros (an input ending in a zero byte replays as an incremental file).
    put("aof_load", "truncated.aof", log[: len(log) - 5])
    put("aof_load", "open-multi.aof", encode("set", "a", "1") + encode("multi")
        + encode("set", "b", "2"))
    put("aof_load", "zeros.aof", log + b"\x00" * 64)
    put("aof_load", "zeros-then-junk.aof", encode("set", "a", "1") + b"\x00" * 8
        + encode("set", "b", "2") + b"\x00")
    r = Redis({"appendonly": "yes", "aof-use-rdb-preamble": "no"})
    time.sleep(0.3)
    dataset(r)
    r.call("bgrewriteaof")
    time.sleep(1)
    d = os.path.join(r.dir, "appendonlydir")
    base = [f for f in os.listdir(d) if f.endswith(".base.aof")][0]
    with open(os.path.join(d, base), "rb") as f:
        put("aof_load", "base-resp.aof", f.read())
    r.close()


RESP_REQUESTS = {
    "multibulk": encode("set", "k", "v") + encode("get", "k"),
    "inline": "PING\r\nset \"a b\" 'c\\'d' \"\\x41\\n\"\r\n\r\nGET a\n",
    "mixed": encode("mset", "a", "1", "b", "2") + b"EXISTS a b\r\n*0\r\n" + encode("del", "a"),
    "huge-bulk": "*1\r\n$536870911\r\nabc",
    "huge-count": "*2147483647\r\n$1\r\na\r\n",
    "errors": "*1\r\n$-1\r\n",
    "expected-dollar": "*1\r\n:1\r\n",
    "unbalanced": "set \"abc\r\n",
    "binary": encode("set", b"\x00\r\n\xff".decode("latin1"), "\r\n"),
}


def resp_seeds():
    for name, data in RESP_REQUESTS.items():
        put("resp_decoder", "req-" + name, data)
    r = Redis({})
    dataset(r)
    calls = [
        ("ok", ["set", "a", "b"]), ("err", ["incr", "str"]), ("int", ["incr", "n"]),
        ("bulk", ["get", "str"]), ("nil", ["get", "missing"]),
        ("array", ["lrange", "list", 0, -1]), ("nested", ["xrange", "stream", "-", "+"]),
        ("scan", ["scan", 0]), ("zscores", ["zrange", "zset", 0, -1, "withscores"]),
        ("hgetall", ["hgetall", "hash"]), ("smembers", ["smembers", "ints"]),
        ("xinfo", ["xinfo", "stream", "stream", "full"]), ("double", ["zscore", "zset", "z1"]),
        ("nullarray", ["blpop", "nolist", "0.01"]), ("bool", ["eval", "return true", 0]),
        ("info", ["info", "keyspace"]), ("hello", ["hello"]),
    ]
    for proto in (2, 3):
        if proto == 3:
            put("resp_decoder", "reply3-hello", r.call("hello", 3))
        for name, args in calls:
            put("resp_decoder", "reply%d-%s" % (proto, name), r.call(*args))
    r.close()
    # RESP3 types redis 7.0 does not send as replies.
    put("resp_decoder", "reply3-attribute", "|1\r\n+key\r\n+val\r\n:42\r\n")
    put("resp_decoder", "reply3-push", ">3\r\n+message\r\n+ch\r\n$2\r\nhi\r\n")
    put("resp_decoder", "reply3-bignum", "(3492890328409238509324850943850943825024385\r\n")
    put("resp_decoder", "reply3-blob-error", "!21\r\nSYNTAX invalid syntax\r\n")


COMMAND_SEEDS = {
    "strings": """set k v
get k
set n 10 ex 100 nx
incrby n 5
incrbyfloat f 1.5e3
append k tail
getrange k 1 -2
setrange k 3 XYZ
setbit bits 100 1
bitcount bits 0 -1 bit
bitpos bits 1 2 -1 bit
bitop xor dst bits k
bitfield bits overflow sat incrby i5 #3 100 get u8 0
bitfield_ro bits get i64 0
getex k persist
lcs k n idx minmatchlen 1 withmatchlen
mset a 1 b 2 c 3
mget a b c nokey
getdel a
set k v keepttl get
strlen k
""",
    "hyperloglog": """pfadd h a b c
pfadd h d e f g h i j k l m n o p
pfcount h
pfcount h nokey h
pfmerge m h nokey
pfmerge m
pfdebug decode h
pfdebug getreg m
pfdebug todense h
pfdebug encoding h
set c "HYLL\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x80\\x7f\\xfe\\x80"
pfcount c
pfadd c x y z
append h junk
pfcount h
config set hll-sparse-max-bytes 40
pfadd s 1 2 3 4 5 6 7 8 9
""",
    "keys": """set a 1
expire a 100 nx
pexpire a 100000 gt
ttl a
copy a b db 2 replace
rename a c
renamenx c b
move b 3
select 3
type b
object encoding b
keys *
scan 0 match * count 10 type string
randomkey
swapdb 0 3
dbsize
persist b
expiretime b
sort b
touch b c
unlink b c
""",
    "lists": """rpush l a b c 1 2 3
lpush l x
linsert l before b new
lpos l b rank -1 count 0 maxlen 10
lrange l 0 -1
lset l 0 first
lrem l 0 a
ltrim l 0 4
lmove l l2 left right
lmpop 2 l l2 left count 2
blpop l 0
brpop empty 0.01
blmove l l3 right left 0
sort l alpha limit 0 3 desc
sort l by nosort get # store dst
llen dst
""",
    "hashes": """hset h f v g 1 e 2.5
hsetnx h f other
hincrby h g 10
hincrbyfloat h e 0.5
hmget h f g nofield
hgetall h
hrandfield h -5 withvalues
hscan h 0 match * count 2
hdel h f
hstrlen h g
hkeys h
hvals h
config set hash-max-listpack-entries 1
hset h many fields
object encoding h
""",
    "sets": """sadd s 1 2 3 a
sadd t 2 3 4
sinter s t
sunionstore u s t
sdiff s t
sintercard 2 s t limit 1
smove s t a
spop s 2
srandmember t -10
smismember t 2 9
sscan t 0
config set set-max-intset-entries 2
sadd big 1 2 3 4 5
object encoding big
""",
    "zsets": """zadd z 1 a 2 b 3 c
zadd z xx gt ch incr 5 a
zrange z 0 -1 withscores
zrange z (1 +inf byscore limit 0 2 rev
zrangebylex z - [b
zrangestore dst z 0 1
zincrby z 2.5 b
zrank z b
zcount z -inf +inf
zunionstore u 2 z dst weights 1 2 aggregate max
zinter 2 z u withscores
zdiff 2 z dst
zpopmin z 2
bzpopmax z 0
zmpop 1 z min count 2
zrandmember u -3 withscores
zremrangebyscore u -inf (2
zscan u 0
""",
    "streams": """xadd s * a 1 b 2
xadd s maxlen ~ 10 * c 3
xadd s 99999999999999-5 d 4
xgroup create s g 0 mkstream
xreadgroup group g alice count 2 streams s >
xpending s g - + 10 alice
xclaim s g bob 0 0-1 justid
xautoclaim s g bob 0 0 count 5
xack s g 0-1
xinfo stream s full
xinfo groups s
xrange s - + count 2
xrevrange s + -
xtrim s minid 0
xdel s 0-1
xread count 1 block 0 streams s $
xsetid s 99999999999999-9
xgroup destroy s g
""",
    "multi": """watch k
multi
set k v
incr n
lpush l a
exec
multi
set k
discard
multi
get k
unknown
exec
unwatch
""",
    "scripting": """eval "return redis.call('set', KEYS[1], ARGV[1])" 1 k v
eval "return {1,2,{3,'x'}}" 0
script load "return redis.call('get',KEYS[1])"
evalsha 6b1bf486c81ceb7edab3f5c0b5e6f8f2b3c4f4f8 1 k
eval "return cjson.encode({1,2,{a=3}})" 0
eval "return cmsgpack.unpack(cmsgpack.pack({1,2,3}))" 0
eval "return bit.band(7,3)" 0
eval "return struct.pack('>I2',5)" 0
eval "return redis.sha1hex('x')" 0
eval "return redis.error_reply('E')" 0
eval "return redis.pcall('incr','k')" 0
script flush
""",
    "functions": """function load "#!lua name=lib\\nredis.register_function('f', function(keys, args) return #keys end)"
fcall f 2 a b
fcall_ro f 0
function list withcode
function stats
function delete lib
""",
    "pubsub-resp2": """subscribe ch1 ch2
publish ch1 refused-in-resp2
ping
unsubscribe ch1
punsubscribe
unsubscribe
""",
    "pubsub": """hello 3
subscribe ch1 ch2
psubscribe ch*
publish ch1 hello
ssubscribe sh
spublish sh msg
pubsub channels *
pubsub numsub ch1
unsubscribe
punsubscribe
ping
reset
""",
    "server": """info everything
config get *max*
config set maxmemory 1 maxmemory-policy allkeys-lru
set a b
config set notify-keyspace-events KEA
client setname fuzz
client list
client info
client reply skip
ping
client reply on
command info get set
command getkeys sort a store b
memory usage a
memory stats
memory doctor
object freq a
hello 3
hgetall nohash
time
lastsave
echo hi
quit
""",
    "acl": """acl setuser alice on >pw ~k* &ch* +@read +set -debug
acl setuser bob on nopass allkeys allchannels +@all (~x* %R~y* +get)
acl getuser alice
acl list
acl users
acl whoami
acl cat
acl cat string
acl dryrun alice set k1 v
acl dryrun alice get x
auth alice pw
get k1
set x 1
auth default anything
acl log
acl genpass 64
acl deluser bob
acl setuser default resetpass >secret
ping
auth secret
hello 3 auth default secret
reset
""",
    "resp3": """hello 3
hset h a 1
hgetall h
zadd z 1 a
zrange z 0 -1 withscores
eval "return {double=3.14}" 0
eval "return redis.setresp(3)" 0
config get maxmemory
smembers nokey
""",
}


def command_seeds():
    for name, text in COMMAND_SEEDS.items():
        put("commands", name, text)


if __name__ == "__main__":
    rdb_seeds()
    old_rdb_seeds()
    aof_seeds()
    resp_seeds()
    command_seeds()
