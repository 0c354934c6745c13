#!/usr/bin/env python3
"""What a hash-field TTL costs in memory (used_memory deltas), on running
servers given by port: keel (--redis-version 7.4.1) and a redis-server 7.4.1.

  bench/field_ttl_memory.py <keel port> <redis 7.4 port>

Each server is flushed. Three cases: 100,000 fields of one hash all given a
TTL; 10,000 hashes of 5 and of 20 fields, one field TTL each.
"""
import redis, sys
for port in map(int, sys.argv[1:]):
    c=redis.Redis(port=port); c.flushall()
    def used(): return int(c.info('memory')['used_memory'])
    n=100000
    p=c.pipeline(transaction=False)
    for i in range(0,n,1000):
        p.hset('h',mapping={f'field:{j:06d}':'v' for j in range(i,i+1000)})
    p.execute(); a=used()
    p=c.pipeline(transaction=False)
    for i in range(0,n,1000):
        p.hexpire('h',100000,*[f'field:{j:06d}' for j in range(i,i+1000)])
    p.execute(); b=used()
    print(port, c.object('encoding','h').decode(), 'bytes per field TTL in a 100,000-field hash:', round((b-a)/n,1))
    for nf in (5, 20):
        c.flushall(); a0=used()
        p=c.pipeline(transaction=False)
        for i in range(10000): p.hset(f's{i}',mapping={f'f{k}':k for k in range(nf)})
        p.execute(); a=used()
        p=c.pipeline(transaction=False)
        for i in range(10000): p.hexpire(f's{i}',100000,'f1')
        p.execute(); b=used()
        print(port, c.object('encoding','s1').decode(), f'{nf}-field hash: {round((a-a0)/10000,1)} bytes; one field TTL adds', round((b-a)/10000,1))
