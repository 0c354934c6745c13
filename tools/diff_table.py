#!/usr/bin/env python3
"""Runs the 7.0 differential table (crates/server/tests/it/compat.rs) against two
running servers and prints every reply that differs, byte for byte (no sorting:
unordered replies show up too). Used to list what Redis 7.4 changed in replies
to existing commands, with keel started with `--redis-version 7.4.1`:

  tools/diff_table.py <keel port> <redis port>

Both servers should be fresh (the table assumes an empty dataset) and run with
`--enable-debug-command yes`.
"""
import os
import socket, sys
def split(line):
    args=[]; i=0; n=len(line)
    while True:
        while i<n and line[i].isspace(): i+=1
        if i>=n: return args
        cur=bytearray(); inq=insq=False; done=False
        while not done:
            if inq:
                if i>=n: raise ValueError('unbalanced')
                c=line[i]
                if c=='\\' and i+3<n and line[i+1]=='x' and all(ch in '0123456789abcdefABCDEF' for ch in line[i+2:i+4]):
                    cur.append(int(line[i+2:i+4],16)); i+=3
                elif c=='\\' and i+1<n:
                    i+=1; c=line[i]; cur+= {'n':b'\n','r':b'\r','t':b'\t','b':b'\b','a':b'\a'}.get(c,c.encode())
                elif c=='"':
                    if i+1<n and not line[i+1].isspace(): raise ValueError('closing quote')
                    done=True
                else: cur+=c.encode()
            elif insq:
                if i>=n: raise ValueError('unbalanced')
                c=line[i]
                if c=='\\' and i+1<n and line[i+1]=="'": i+=1; cur+=b"'"
                elif c=="'":
                    if i+1<n and not line[i+1].isspace(): raise ValueError('closing quote')
                    done=True
                else: cur+=c.encode()
            else:
                if i>=n: done=True; break
                c=line[i]
                if c in ' \n\r\t\0': done=True
                elif c=='"': inq=True
                elif c=="'": insq=True
                else: cur+=c.encode()
            if i<n: i+=1
        args.append(bytes(cur))
def enc(args):
    out=b'*%d\r\n'%len(args)
    for a in args: out+=b'$%d\r\n%s\r\n'%(len(a),a)
    return out
class Conn:
    def __init__(s,port): s.port=port; s.connect()
    def connect(s):
        s.s=socket.create_connection(('127.0.0.1',s.port)); s.s.settimeout(5); s.f=s.s.makefile('rb')
    def read(s):
        line=s.f.readline()
        if not line: raise EOFError
        t=line[:1]; rest=line[1:-2]
        if t in b'$': 
            n=int(rest); 
            return line if n<0 else line+s.f.read(n+2)
        if t in b'*%~>':
            n=int(rest); m=2 if t==b'%' else 1
            out=line
            for _ in range(max(n,0)*m): out+=s.read()
            return out
        return line
    def cmd(s,args):
        try:
            s.s.sendall(enc(args)); return s.read()
        except Exception as e:
            s.connect(); return b'<err %r>'%e
def table():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "crates/server/tests/it/compat.rs")
    src = open(path).read()
    start = src.index('const TABLE: &str = r##"') + len('const TABLE: &str = r##"')
    out = []
    for line in src[start:src.index('"##;', start)].splitlines():
        l = line.strip()
        if not l or l.startswith('#'):
            continue
        out.append(l[1:] if l[0] in '~%!' else l)
    return out
lines=table()
a=Conn(int(sys.argv[1])); b=Conn(int(sys.argv[2]))
diffs=0
for l in lines:
    try: args=split(l)
    except Exception as e: continue
    if not args: continue
    ra=a.cmd(args); rb=b.cmd(args)
    if ra!=rb:
        diffs+=1
        print('LINE:',l[:150]); print('  keel :',ra[:300]); print('  redis:',rb[:300])
print('diffs',diffs,'of',len(lines))
