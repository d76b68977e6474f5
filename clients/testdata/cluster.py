"""redis-py's RedisCluster against three nodes: python3 cluster.py rlserver|redis host:port,...

The first part runs on a real Redis Cluster as well (its answers are the ground
truth of what these checks expect); the RL.* part only on rlserver nodes, whose
clocks the test froze at the start of a day."""
import sys

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot
from redis.exceptions import RedisClusterException, ResponseError

from check import eq, main, raises, that

TARGET = sys.argv[1]
NODES = [a.rsplit(":", 1) for a in sys.argv[2].split(",")]
P = "pyc:"  # this run's keys


def run():
    rc = RedisCluster(startup_nodes=[ClusterNode(h, int(p)) for h, p in NODES], decode_responses=True)
    eq("the nodes", lambda: sorted("%s:%s" % (n.host, n.port) for n in rc.get_primaries()),
       sorted("%s:%s" % (h, p) for h, p in NODES))
    keys = ["%s%d" % (P, i) for i in range(50)] + ["{%stag}" % P]
    eq("CLUSTER KEYSLOT is the client's CRC16", lambda: [rc.cluster_keyslot(k) for k in keys], [key_slot(k.encode()) for k in keys])

    # MULTI on one node, a key of its own and one of another node's: Redis Cluster
    # refuses the second when it is queued (MOVED), EXEC answers EXECABORT, and the
    # first is not applied either.
    node = rc.get_primaries()[0]
    local = next(k for k in ("%slocal:%d" % (P, i) for i in range(1000)) if rc.get_node_from_key(k) == node)
    foreign = next(k for k in ("%sforeign:%d" % (P, i) for i in range(1000)) if rc.get_node_from_key(k) != node)
    direct = redis.Redis(host=node.host, port=node.port, decode_responses=True)
    create(rc, local)
    multi = direct.pipeline(transaction=True)
    multi.delete(local)
    multi.delete(foreign)
    raises("MULTI across nodes is refused", multi.execute, ResponseError, moved(rc, 2, "DEL " + foreign, foreign))
    eq("MULTI across nodes applied nothing", lambda: direct.exists(local), 1)
    eq("the connection after it", direct.ping, True)

    if TARGET == "rlserver":
        rl(rc, direct, local, foreign)


def create(rc, key):
    if TARGET == "redis":
        rc.set(key, "v")
    else:
        rc.execute_command("RL.FIXED", key, 5, 60000)


def rl(rc, direct, local, foreign):
    cmd = rc.execute_command
    keys = ["%sspread:%d" % (P, i) for i in range(300)]
    eq("300 keys over the nodes, admitted", lambda: [cmd("RL.FIXED", k, 1, 60000) for k in keys], [[1, 1, 0, 0, 60000]] * 300)
    eq("300 keys over the nodes, limited", lambda: [cmd("RL.FIXED", k, 1, 60000) for k in keys], [[0, 1, 0, 60000, 60000]] * 300)

    def users():
        out = []
        for u in range(30):
            t = "{%suser:%d}" % (P, u)
            args = ("RL.ALL", "FIXED", t + ":day", 100, 86400000, "TOKEN", t + ":sec", 2, 1000)
            out.append([cmd(*args) for _ in range(3)])
        return out
    eq("RL.ALL on hash-tagged keys of 30 users", users,
       [[[1, [1, 100, 99, 0, 86400000], [1, 2, 1, 0, 500]], [1, [1, 100, 98, 0, 86400000], [1, 2, 0, 0, 1000]],
         [0, [1, 100, 97, 0, 86400000], [0, 2, 0, 500, 1000]]]] * 30)
    a, b = P + "untagged:a", P + "untagged:b"
    if key_slot(a.encode()) == key_slot(b.encode()):
        raise AssertionError("pick keys of two slots")
    # RedisCluster refuses it itself (RedisClusterException), or the node answers
    # CROSSSLOT: either way nothing is written.
    that("RL.ALL on keys of two slots is refused",
         lambda: catch(lambda: cmd("RL.ALL", "FIXED", a, 1, 60000, "FIXED", b, 1, 60000)),
         lambda e: isinstance(e, (RedisClusterException, ResponseError)), "RedisClusterException or CROSSSLOT")
    eq("... and writes nothing", lambda: [rc.exists(a), rc.exists(b)], [0, 0])

    def pipe(n):
        pl = rc.pipeline()
        for k in keys:
            pl.execute_command("RL.FIXED", k, n, 60000)
        return pl.execute()
    eq("a pipeline over the nodes", lambda: pipe(2), [[1, 2, 0, 0, 60000]] * 300)

    # A transaction on one node's connection, keys sharing a hash tag.
    tag = "{%s}" % local
    multi = direct.pipeline(transaction=True)
    multi.execute_command("RL.FIXED", tag + ":a", 2, 60000)
    multi.execute_command("RL.TOKEN", tag + ":b", 2, 1000)
    eq("MULTI on a hash tag", multi.execute, [[1, 2, 1, 0, 60000], [1, 2, 1, 0, 500]])
    before = cmd("RL.FIXED", local, 5, 60000, "PEEK")
    multi = direct.pipeline(transaction=True)
    multi.execute_command("RL.FIXED", local, 5, 60000)
    multi.execute_command("RL.FIXED", foreign, 5, 60000)
    raises("MULTI of RL.* across nodes is refused", multi.execute, ResponseError,
           moved(rc, 2, "RL.FIXED %s 5 60000" % foreign, foreign))
    eq("... and applied nothing", lambda: [cmd("RL.FIXED", local, 5, 60000, "PEEK"), rc.exists(foreign)], [before, 0])


def moved(rc, n, command, key):
    """redis-py's text for a transaction whose n-th command got MOVED for key."""
    owner = rc.get_node_from_key(key)
    return "Command # %d (%s) of pipeline caused error: MOVED %d %s:%d" % (n, command, key_slot(key.encode()), owner.host, owner.port)


def catch(fn):
    try:
        return fn()
    except Exception as e:
        return e


main(run)
