"""redis-py as an ACL user: python3 acl.py host:port user password

The tenant of clients/acl_test.go (~tenantA:* +@ratelimit), logged in with
username=: it spends its own key, gets NOPERM (redis-py's NoPermissionError, the
text after the code) for another tenant's key, an RL.ALL with one rule on it, and
the server's commands. The Go test checks the key's count and ACL LOG after."""
import sys

import redis
from redis.exceptions import NoPermissionError

from check import eq, main, raises

ADDR, USER, PASS = sys.argv[1:4]
HOST, PORT = ADDR.rsplit(":", 1)
OWN, OTHER = "tenantA:redis-py", "tenantB:redis-py"
KEY = "this user has no permissions to access one of the keys used as arguments"


def cmd(name):
    return "this user has no permissions to run the '%s' command" % name


def run():
    r = redis.Redis(host=HOST, port=int(PORT), username=USER, password=PASS, decode_responses=True)
    eq("RL.TOKEN of its own key", lambda: r.execute_command("RL.TOKEN", OWN, 10, 1000), [1, 10, 9, 0, 100])
    raises("RL.TOKEN of another tenant's key", lambda: r.execute_command("RL.TOKEN", "tenantB:x", 10, 1000),
           NoPermissionError, KEY)
    raises("RL.ALL with one rule on another tenant's key",
           lambda: r.execute_command("RL.ALL", "TOKEN", OWN, 10, 1000, "TOKEN", OTHER, 10, 1000), NoPermissionError, KEY)
    raises("FLUSHALL", r.flushall, NoPermissionError, cmd("flushall"))
    raises("CONFIG GET", lambda: r.config_get("maxmemory"), NoPermissionError, cmd("config|get"))
    raises("CONFIG SET", lambda: r.config_set("requirepass", "x"), NoPermissionError, cmd("config|set"))
    raises("DEBUG", lambda: r.execute_command("DEBUG", "SLEEP", 0), NoPermissionError, cmd("debug"))
    raises("REPLICAOF", lambda: r.execute_command("REPLICAOF", "NO", "ONE"), NoPermissionError, cmd("replicaof"))
    raises("CLUSTER INFO", lambda: r.execute_command("CLUSTER", "INFO"), NoPermissionError, cmd("cluster|info"))


main(run)
