// node-redis against one server: node standalone_node_redis.js rlserver|redis host:port 2|3
// The first part runs on redis-server as well (its answers are the ground truth of
// what these checks expect); the RL.* part only on rlserver, whose clock the test
// froze at the start of a day: fresh keys answer the algorithms' known values.
"use strict";
const { createClient, createClientPool } = require("redis");
const { eq, that, throws, main } = require("./check");

const [target, addr, proto] = process.argv.slice(2);
const p = `nr${proto}:`; // this run's keys
const opts = { url: `redis://${addr}`, RESP: Number(proto), name: `nr-${proto}` };

main(async () => {
  const c = await createClient(opts).on("error", () => {}).connect();

  await eq("PING", () => c.ping(), "PONG");
  await eq("ECHO", () => c.echo("hi"), "hi");
  await throws("unknown command", () => c.sendCommand(["NOSUCH", "x"]), "ERR unknown command 'NOSUCH', with args beginning with: 'x' ");
  await throws("arity", () => c.sendCommand(["ECHO"]), "ERR wrong number of arguments for 'echo' command");
  await throws("AUTH without a password set", () => c.sendCommand(["AUTH", "x"]),
    "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
  await throws("AUTH of an unknown user", () => c.sendCommand(["AUTH", "bob", "x"]), "WRONGPASS invalid username-password pair or user is disabled.");
  await eq("CLIENT GETNAME", () => c.clientGetName(), `nr-${proto}`);
  const info = await c.clientInfo();
  const id = await c.clientId();
  await eq("clientInfo()", () => [info.id, info.name, info.db, info.resp, info.cmd, info.flags, info.multi, info.sub, info.user,
    Number.isInteger(info.fd), Number.isInteger(info.idle), Number.isInteger(info.totMem), typeof info.events],
  [id, `nr-${proto}`, 0, Number(proto), "client|info", "N", -1, 0, "default", true, true, true, "string"]);
  await that("INFO server", () => c.info("server"), (s) => /^redis_version:/m.test(s), "a redis_version line");
  await eq("CONFIG GET", () => c.configGet("maxmemory"), { maxmemory: "0" });
  await eq("pipeline", () => c.multi().ping().echo("a").execAsPipeline(), ["PONG", "a"]);
  await eq("MULTI", () => c.multi().ping().echo("x").exec(), ["PONG", "x"]);
  // node-redis rejects with the error of the command refused when queued.
  await throws("MULTI with a command refused when queued", () => c.multi().ping().addCommand(["NOSUCH"]).exec(),
    "ERR unknown command 'NOSUCH', with args beginning with: ");
  await eq("the connection after EXECABORT", () => c.ping(), "PONG");

  // Pub/Sub on a duplicate connection.
  const sub = await c.duplicate().on("error", () => {}).connect();
  let resolveMsg;
  const got = new Promise((r) => (resolveMsg = r));
  await sub.subscribe(`${p}ch`, (msg, ch) => resolveMsg([ch, msg]));
  await eq("PUBSUB NUMSUB", () => c.pubSubNumSub(`${p}ch`), { [`${p}ch`]: 1 });
  await eq("PUBSUB CHANNELS", () => c.pubSubChannels(`${p}*`), [`${p}ch`]);
  await eq("PUBLISH", () => c.publish(`${p}ch`, "hello"), 1);
  await eq("message", () => got, [`${p}ch`, "hello"]);
  await sub.unsubscribe();
  sub.destroy();

  if (Number(proto) === 3) {
    // The client-side cache asks for CLIENT TRACKING ON when it connects.
    await eq("clientSideCache connects", async () => {
      const cc = await createClient({ ...opts, clientSideCache: { ttl: 0, maxEntries: 0 } }).on("error", () => {}).connect();
      const pong = await cc.ping();
      cc.destroy();
      return pong;
    }, "PONG");
  }

  if (target === "rlserver") {
    await rl(c);
  }
  c.destroy();
});

async function rl(c) {
  const cmd = (...args) => c.sendCommand(args.map(String));
  const fixed = ["RL.FIXED", `${p}fixed`, 3, 60000];
  await eq("RL.FIXED", async () => [await cmd(...fixed), await cmd(...fixed), await cmd(...fixed), await cmd(...fixed)],
    [[1, 3, 2, 0, 60000], [1, 3, 1, 0, 60000], [1, 3, 0, 0, 60000], [0, 3, 0, 60000, 60000]]);
  await eq("RL.TOKEN", async () => {
    const out = [];
    for (let i = 0; i < 3; i++) out.push(await cmd("RL.TOKEN", `${p}token`, 2, 1000));
    return out;
  }, [[1, 2, 1, 0, 500], [1, 2, 0, 0, 1000], [0, 2, 0, 500, 1000]]);
  const all = ["RL.ALL", "FIXED", `${p}user`, 100, 60000, "TOKEN", `${p}ip`, 2, 1000];
  await eq("RL.ALL", async () => [await cmd(...all), await cmd(...all), await cmd(...all)],
    [[1, [1, 100, 99, 0, 60000], [1, 2, 1, 0, 500]], [1, [1, 100, 98, 0, 60000], [1, 2, 0, 0, 1000]],
      [0, [1, 100, 97, 0, 60000], [0, 2, 0, 500, 1000]]]);
  await eq("TYPE", () => c.type(`${p}fixed`), "rl.fixed");
  await eq("PTTL", () => c.pTTL(`${p}token`), 1000);
  await throws("WRONGTYPE", () => cmd("RL.TOKEN", `${p}fixed`, 3, 60000), "WRONGTYPE Operation against a key holding the wrong kind of value");
  await throws("bad limit", () => cmd("RL.FIXED", `${p}bad`, 0, 60000), "ERR limit must be an integer between 1 and 1000000000");
  await eq("bad input changes nothing", () => c.exists(`${p}bad`), 0);

  // Auto-pipelining: 500 calls sent in one tick, twice.
  const keys = Array.from({ length: 500 }, (_, i) => `${p}pipe:${i}`);
  const burst = () => Promise.all(keys.map((k) => cmd("RL.FIXED", k, 1, 60000)));
  await eq("500 calls in one tick, admitted", burst, keys.map(() => [1, 1, 0, 0, 60000]));
  await eq("500 calls in one tick, limited", burst, keys.map(() => [0, 1, 0, 60000, 60000]));
  await eq("MULTI of RL.*", () => c.multi().addCommand(["RL.FIXED", `${p}m1`, "2", "60000"]).addCommand(["RL.GCRA", `${p}m2`, "10", "1000"]).exec(),
    [[1, 2, 1, 0, 60000], [1, 10, 9, 0, 100]]);

  // A pool of 10 connections, 300 calls on one key of limit 100: exactly 100 admitted.
  const pool = await createClientPool(opts, { minimum: 10, maximum: 10 }).on("error", () => {}).connect();
  const answers = await Promise.all(Array.from({ length: 300 }, () => pool.sendCommand(["RL.FIXED", `${p}shared`, "100", "60000"])));
  pool.destroy();
  await eq("a pool of 10 shares a limit", () => answers.filter((a) => a[0] === 1).length, 100);

  const scanned = [];
  for await (const ks of c.scanIterator({ MATCH: `${p}pipe:*`, COUNT: 100 })) scanned.push(...ks);
  await eq("SCAN", () => new Set(scanned).size, 500);
  await eq("DEL", () => c.del([`${p}fixed`, `${p}token`, `${p}nosuch`]), 2);
}
