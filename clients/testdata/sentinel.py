"""redis-py's Sentinel through a failover: python3 sentinel.py host:port,... password

The Sentinels' addresses, then the servers' password.

It drains a key, prints "ready" and waits for a line on stdin: the test has killed
the primary (SIGKILL). Then it calls until a write succeeds on the new primary, which
must be another address, and the drained key must still be drained there."""
import sys
import time

from redis.exceptions import ConnectionError, ReadOnlyError, ResponseError, TimeoutError
from redis.sentinel import MasterNotFoundError, Sentinel

from check import eq, main, that

SENTINELS = [(h, int(p)) for h, p in (a.rsplit(":", 1) for a in sys.argv[1].split(","))]
PASSWORD = sys.argv[2]
P = "pys:"
DAY = 86400000


def run():
    sentinel = Sentinel(SENTINELS, socket_timeout=1)
    master = sentinel.master_for("mymaster", socket_timeout=1, password=PASSWORD)
    before = sentinel.discover_master("mymaster")
    # A bucket of 3 that refills 3 a day: drained, it stays drained for hours.
    eq("drain a key", lambda: [master.execute_command("RL.TOKEN", P + "drained", 3, DAY)[:3] for _ in range(4)],
       [[1, 3, 2], [1, 3, 1], [1, 3, 0], [0, 3, 0]])
    print("ready", flush=True)
    sys.stdin.readline()
    deadline, errors = time.time() + 60, set()
    while True:
        try:
            master.execute_command("RL.TOKEN", P + "after", 3, DAY)
            break
        except (ConnectionError, TimeoutError, ReadOnlyError, MasterNotFoundError, ResponseError) as e:
            errors.add(type(e).__name__)
            if time.time() > deadline:
                raise AssertionError("no write within 60 s of the kill: %s" % sorted(errors))
            time.sleep(0.1)
    print("errors on the way: %s" % sorted(errors), flush=True)
    that("the new primary", lambda: sentinel.discover_master("mymaster"), lambda a: a != before, "not %r" % (before,))
    eq("the drained key, drained", lambda: master.execute_command("RL.TOKEN", P + "drained", 3, DAY)[:3], [0, 3, 0])


main(run)
