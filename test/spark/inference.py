"""Read Redis keys of any type (the seed's Redis example, inference.py).

    python3 inference.py KEY...

Connects to REDIS_HOST:REDIS_PORT, which atom gives every task on a
cluster with a cache Redis, asks each key's TYPE and reads it with the
call for that type (string, hash, list, set, zset), printing one JSON line
per key: {"key": ..., "type": ..., "value": ...}.
"""
import json
import os
import sys

import redis

# Connect to Redis.
redis_host = os.getenv("REDIS_HOST", "localhost")
redis_port = int(os.getenv("REDIS_PORT", 6379))
r = redis.Redis(host=redis_host, port=redis_port, decode_responses=True)


def read(key):
    """The key's type, and its value read with the call for that type."""
    kind = r.type(key)
    if kind == "string":
        return kind, r.get(key)
    if kind == "hash":
        return kind, r.hgetall(key)
    if kind == "list":
        return kind, r.lrange(key, 0, -1)
    if kind == "set":
        return kind, sorted(r.smembers(key))
    if kind == "zset":
        return kind, [[m, s] for m, s in r.zrange(key, 0, -1, withscores=True)]
    return kind, None  # "none": no such key


for key in sys.argv[1:]:
    kind, value = read(key)
    print(json.dumps({"key": key, "type": kind, "value": value}, sort_keys=True), flush=True)
