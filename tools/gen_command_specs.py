#!/usr/bin/env python3
"""Capture redis-server's command table (COMMAND INFO and COMMAND DOCS, RESP3)
into crates/server/src/command/redis_commands.json.

keel serves the same metadata as the Redis version whose behaviour it
implements, so clients see identical arity, flags, key specs and docs.
Run against a redis-server 7.0.x:  tools/gen_command_specs.py [port]
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
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
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
    out = "crates/server/src/command/redis_commands.json"
    with open(out, "w") as fh:
        json.dump(dict(sorted(table.items())), fh, separators=(",", ":"))
    print("wrote", out, len(table), "commands")

main()
