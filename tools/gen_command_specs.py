#!/usr/bin/env python3
"""Capture redis-server's command table (COMMAND INFO and COMMAND DOCS, RESP3)
into crates/server/src/command/redis_commands.json.

keel serves the same metadata as the Redis version whose behaviour it
implements, so clients see identical arity, flags, key specs and docs.
Run against a redis-server 7.0.x:  tools/gen_command_specs.py [port]
and against a redis-server 7.4.1 for what keel serves under `redis-version 7.4.1`:
  tools/gen_command_specs.py port --out crates/server/src/command/redis74_commands.json

Commands and subcommands newer than 7.0 that keel implements come from a newer
redis-server into crates/server/src/command/keel_commands.json:
  tools/gen_command_specs.py --newer port name [name ...]   (e.g. client|no-touch)
Tagged JSON: "+s" status, "$s" bulk, "%" map (list of pairs), "~" set,
"*" array, ":" integer, "_" null, "," double.
"""
import json, socket, sys

def parse(f):
    t = f.read(1)
    line = f.readline()[:-2].decode()
    if t in b'+':
        return {"+": line}
    if t == b'-':
        raise RuntimeError(line)
    if t == b':':
        return {":": int(line)}
    if t == b',':
        return {",": line}
    if t == b'_':
        return {"_": None}
    if t == b'$':
        n = int(line)
        if n < 0:
            return {"_": None}
        data = f.read(n + 2)[:-2]
        return {"$": data.decode()}
    if t in (b'*', b'~', b'>'):
        n = int(line)
        if n < 0:
            return {"_": None}
        return {t.decode(): [parse(f) for _ in range(n)]}
    if t == b'%':
        n = int(line)
        return {"%": [[parse(f), parse(f)] for _ in range(n)]}
    raise RuntimeError("unexpected type %r" % t)

def call(sock, f, *args):
    out = b'*%d\r\n' % len(args)
    for a in args:
        a = a.encode()
        out += b'$%d\r\n%s\r\n' % (len(a), a)
    sock.sendall(out)
    return parse(f)

def main():
    args = sys.argv[1:]
    out = "crates/server/src/command/redis_commands.json"
    if "--out" in args:
        i = args.index("--out")
        out = args[i + 1]
        del args[i:i + 2]
    port = int(args[0]) if args else 6379
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile('rb')
    call(s, f, "HELLO", "3")
    info = call(s, f, "COMMAND")["*"]
    docs = call(s, f, "COMMAND", "DOCS")["%"]
    docs = {k["$"]: v for k, v in docs}
    table = {}
    for entry in info:
        name = entry["*"][0]["$"]
        table[name] = {"info": entry, "docs": docs.get(name)}
    with open(out, "w") as fh:
        json.dump(dict(sorted(table.items())), fh, separators=(",", ":"))
    print("wrote", out, len(table), "commands")

def newer(port, names):
    """Adds `names` (commands, or `container|sub` subcommands) as the server
    on `port` describes them to keel_commands.json."""
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile('rb')
    call(s, f, "HELLO", "3")
    path = "crates/server/src/command/keel_commands.json"
    with open(path) as fh:
        table = json.load(fh)
    for full in names:
        top, _, sub = full.partition('|')
        info = call(s, f, "COMMAND", "INFO", top)["*"][0]
        docs = dict((k["$"], v) for k, v in call(s, f, "COMMAND", "DOCS", top)["%"])[top]
        if not sub:
            table[full] = {"info": info, "docs": docs}
            continue
        sub_info = [e for e in info["*"][9]["*"] if e["*"][0]["$"] == full]
        subs = [v for k, v in docs["%"] if k["$"] == "subcommands"][0]
        sub_docs = [v for k, v in subs["%"] if k["$"] == full]
        if not sub_info or not sub_docs:
            raise RuntimeError("%s: no such subcommand on that server" % full)
        table[full] = {"info": sub_info[0], "docs": sub_docs[0]}
    with open(path, "w") as fh:
        json.dump(dict(sorted(table.items())), fh, separators=(",", ":"))
    print("wrote", path, len(table), "entries")

if len(sys.argv) > 2 and sys.argv[1] == "--newer":
    newer(int(sys.argv[2]), sys.argv[3:])
else:
    main()
