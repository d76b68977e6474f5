"""redis-py against one server: python3 standalone.py rlserver|redis host:port

The first part runs on redis-server as well (its answers are the ground truth of
what these checks expect); the RL.* part only on rlserver, whose clock the test
froze at the start of a day: fresh keys answer the algorithms' known values.
redis-py 4.3 speaks RESP2 only."""
import sys
import threading

import redis
from redis.exceptions import ResponseError

from check import CLIENT_INFO_FIELDS, eq, main, raises, that

TARGET, ADDR = sys.argv[1:3]
HOST, PORT = ADDR.rsplit(":", 1)
P = "py:"  # this run's keys


def client(**kw):
    return redis.Redis(host=HOST, port=int(PORT), decode_responses=True, **kw)


def run():
    r = client(client_name="py-2")
    eq("PING", r.ping, True)
    eq("ECHO", lambda: r.echo("hi"), "hi")
    raises("unknown command", lambda: r.execute_command("NOSUCH", "x"), ResponseError,
           "unknown command 'NOSUCH', with args beginning with: 'x' ")
    raises("arity", lambda: r.execute_command("ECHO"), ResponseError, "wrong number of arguments for 'echo' command")
    raises("AUTH without a password set", lambda: r.execute_command("AUTH", "x"), Exception,
           "AUTH <password> called without any password configured for the default user. "
           "Are you sure your configuration is correct?")
    raises("AUTH of an unknown user", lambda: r.execute_command("AUTH", "bob", "x"), Exception,
           "WRONGPASS invalid username-password pair or user is disabled.")
    eq("CLIENT GETNAME", r.client_getname, "py-2")
    that("client_info()", r.client_info, lambda i: i["name"] == "py-2" and str(i["db"]) == "0" and i["cmd"] == "client|info"
         and i["flags"] == "N" and str(i["multi"]) == "-1" and str(i["resp"]).strip() == "2" and i["user"] == "default"
         and not [f for f in CLIENT_INFO_FIELDS if f not in i],
         "every field of Redis 7's CLIENT INFO, name py-2, db 0, cmd client|info, flags N, multi -1, resp 2")
    that("client_list()", r.client_list, lambda cs: str(r.client_id()) in [c["id"] for c in cs], "this connection's id")
    that("INFO server", lambda: r.info("server"), lambda i: "redis_version" in i, "a redis_version field")
    eq("CONFIG GET", lambda: r.config_get("maxmemory"), {"maxmemory": "0"})
    eq("pipeline", lambda: r.pipeline(transaction=False).ping().echo("a").execute(), [True, "a"])
    eq("pipeline with an error", lambda: r.pipeline(transaction=False).ping().execute_command("NOSUCH").execute(raise_on_error=False),
       [True, {"error": "unknown command 'NOSUCH', with args beginning with: "}])
    eq("MULTI", lambda: r.pipeline(transaction=True).ping().echo("x").execute(), [True, "x"])
    raises("MULTI with a command refused when queued", lambda: r.pipeline(transaction=True).ping().execute_command("NOSUCH").execute(),
           ResponseError, "Command # 2 (NOSUCH) of pipeline caused error: unknown command 'NOSUCH', with args beginning with: ")
    eq("the connection after EXECABORT", r.ping, True)

    sub = client().pubsub()
    sub.subscribe(P + "ch")
    that("SUBSCRIBE", lambda: sub.get_message(timeout=5), lambda m: m and m["type"] == "subscribe", "a subscribe message")
    eq("PUBSUB NUMSUB", lambda: r.pubsub_numsub(P + "ch"), [[P + "ch", 1]])
    eq("PUBSUB CHANNELS", lambda: r.pubsub_channels(P + "*"), [P + "ch"])
    eq("PUBLISH", lambda: r.publish(P + "ch", "hello"), 1)
    that("message", lambda: sub.get_message(timeout=5), lambda m: m and m["data"] == "hello", "the message hello")
    sub.close()

    if TARGET == "rlserver":
        rl(r)


def rl(r):
    cmd = r.execute_command
    fixed = ("RL.FIXED", P + "fixed", 3, 60000)
    eq("RL.FIXED", lambda: [cmd(*fixed) for _ in range(4)],
       [[1, 3, 2, 0, 60000], [1, 3, 1, 0, 60000], [1, 3, 0, 0, 60000], [0, 3, 0, 60000, 60000]])
    eq("RL.TOKEN", lambda: [cmd("RL.TOKEN", P + "token", 2, 1000) for _ in range(3)],
       [[1, 2, 1, 0, 500], [1, 2, 0, 0, 1000], [0, 2, 0, 500, 1000]])
    rl_all = ("RL.ALL", "FIXED", P + "user", 100, 60000, "TOKEN", P + "ip", 2, 1000)
    eq("RL.ALL", lambda: [cmd(*rl_all) for _ in range(3)],
       [[1, [1, 100, 99, 0, 60000], [1, 2, 1, 0, 500]], [1, [1, 100, 98, 0, 60000], [1, 2, 0, 0, 1000]],
        [0, [1, 100, 97, 0, 60000], [0, 2, 0, 500, 1000]]])
    eq("TYPE", lambda: r.type(P + "fixed"), "rl.fixed")
    eq("PTTL", lambda: r.pttl(P + "token"), 1000)
    raises("WRONGTYPE", lambda: cmd("RL.TOKEN", P + "fixed", 3, 60000), ResponseError,
           "WRONGTYPE Operation against a key holding the wrong kind of value")
    raises("bad limit", lambda: cmd("RL.FIXED", P + "bad", 0, 60000), ResponseError,
           "limit must be an integer between 1 and 1000000000")
    eq("bad input changes nothing", lambda: r.exists(P + "bad"), 0)

    keys = [P + "pipe:%d" % i for i in range(500)]

    def pipe():
        pl = r.pipeline(transaction=False)
        for k in keys:
            pl.execute_command("RL.FIXED", k, 1, 60000)
        return pl.execute()
    eq("pipeline of 500, admitted", pipe, [[1, 1, 0, 0, 60000]] * 500)
    eq("pipeline of 500, limited", pipe, [[0, 1, 0, 60000, 60000]] * 500)
    eq("MULTI of RL.*", lambda: r.pipeline(transaction=True).execute_command("RL.FIXED", P + "m1", 2, 60000)
       .execute_command("RL.GCRA", P + "m2", 10, 1000).execute(), [[1, 2, 1, 0, 60000], [1, 10, 9, 0, 100]])

    # A pool of 4 connections shared by 8 threads, 300 calls on one key of limit 100.
    pool = redis.BlockingConnectionPool(host=HOST, port=int(PORT), max_connections=4)
    shared = redis.Redis(connection_pool=pool)
    admitted = []

    def worker():
        for _ in range(300 // 8 + 1):
            admitted.append(shared.execute_command("RL.FIXED", P + "shared", 100, 60000)[0])
    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eq("a pool of 4 for 8 threads shares a limit", lambda: (sum(admitted), len(admitted)), [100, 8 * (300 // 8 + 1)])
    pool.disconnect()

    eq("SCAN", lambda: len(set(r.scan_iter(match=P + "pipe:*", count=100))), 500)
    eq("DEL", lambda: r.delete(P + "fixed", P + "token", P + "nosuch"), 2)


main(run)
