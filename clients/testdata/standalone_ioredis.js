// ioredis against one server: node standalone_ioredis.js rlserver|redis host:port 2|3
// The first part runs on redis-server as well (its answers are the ground truth of
// what these checks expect); the RL.* part only on rlserver, whose clock the test
// froze at the start of a day: fresh keys answer the algorithms' known values.
"use strict";
const Redis = require("ioredis");
const { eq, that, throws, parseClientInfo, missingFields, main } = require("./check");

const [target, addr, proto] = process.argv.slice(2);
const [host, port] = addr.split(":");
const p = `io${proto}:`; // this run's keys
const opts = { host, port: Number(port), protocol: Number(proto), maxRetriesPerRequest: 0 };

main(async () => {
  const r = new Redis({ ...opts, connectionName: `io-${proto}` });

  await eq("PING", () => r.ping(), "PONG");
  await eq("ECHO", () => r.echo("hi"), "hi");
  await throws("unknown command", () => r.call("NOSUCH", "x"), "ERR unknown command 'NOSUCH', with args beginning with: 'x' ");
  await throws("arity", () => r.call("ECHO"), "ERR wrong number of arguments for 'echo' command");
  await throws("AUTH without a password set", () => r.call("AUTH", "x"),
    "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
  await throws("AUTH of an unknown user", () => r.call("AUTH", "bob", "x"), "WRONGPASS invalid username-password pair or user is disabled.");
  await eq("CLIENT GETNAME", () => r.client("GETNAME"), `io-${proto}`);
  const info = parseClientInfo(await r.client("INFO"));
  await eq("CLIENT INFO fields", () => missingFields(info), []);
  await eq("CLIENT INFO values", () => [info.name, info.db, info.resp, info.cmd, info.flags, info.multi, info.user],
    [`io-${proto}`, "0", proto, "client|info", "N", "-1", "default"]);
  await eq("CLIENT ID is CLIENT INFO's id", async () => String(await r.client("ID")), info.id);
  await that("INFO server", () => r.info("server"), (s) => /^redis_version:/m.test(s), "a redis_version line");
  await eq("CONFIG GET", () => r.config("GET", "maxmemory"), ["maxmemory", "0"]);
  await eq("pipeline", () => r.pipeline().ping().echo("a").call("NOSUCH").exec(),
    [[null, "PONG"], [null, "a"], [{ error: "ERR unknown command 'NOSUCH', with args beginning with: " }]]);
  await eq("MULTI", () => r.multi().ping().echo("x").exec(), [[null, "PONG"], [null, "x"]]);
  await throws("MULTI with a command refused when queued", () => r.multi().ping().call("NOSUCH").exec(),
    "EXECABORT Transaction discarded because of previous errors.");
  await eq("the connection after EXECABORT", () => r.ping(), "PONG");

  // Pub/Sub: a subscriber connection gets what another publishes.
  const sub = new Redis(opts);
  const got = new Promise((resolve) => sub.on("message", (ch, msg) => resolve([ch, msg])));
  await eq("SUBSCRIBE", () => sub.subscribe(`${p}ch`), 1);
  await eq("PUBSUB NUMSUB", () => r.call("PUBSUB", "NUMSUB", `${p}ch`), [`${p}ch`, 1]);
  await eq("PUBSUB CHANNELS", () => r.call("PUBSUB", "CHANNELS", `${p}*`), [`${p}ch`]);
  await eq("PUBLISH", () => r.publish(`${p}ch`, "hello"), 1);
  await eq("message", () => got, [`${p}ch`, "hello"]);
  sub.disconnect();

  if (target === "rlserver") {
    await rl(r);
  }
  r.disconnect();
});

async function rl(r) {
  const fixed = ["RL.FIXED", `${p}fixed`, 3, 60000];
  await eq("RL.FIXED", async () => [await r.call(...fixed), await r.call(...fixed), await r.call(...fixed), await r.call(...fixed)],
    [[1, 3, 2, 0, 60000], [1, 3, 1, 0, 60000], [1, 3, 0, 0, 60000], [0, 3, 0, 60000, 60000]]);
  await eq("RL.TOKEN", async () => {
    const out = [];
    for (let i = 0; i < 3; i++) out.push(await r.call("RL.TOKEN", `${p}token`, 2, 1000));
    return out;
  }, [[1, 2, 1, 0, 500], [1, 2, 0, 0, 1000], [0, 2, 0, 500, 1000]]);
  const all = ["RL.ALL", "FIXED", `${p}user`, 100, 60000, "TOKEN", `${p}ip`, 2, 1000];
  await eq("RL.ALL", async () => [await r.call(...all), await r.call(...all), await r.call(...all)],
    [[1, [1, 100, 99, 0, 60000], [1, 2, 1, 0, 500]], [1, [1, 100, 98, 0, 60000], [1, 2, 0, 0, 1000]],
      [0, [1, 100, 97, 0, 60000], [0, 2, 0, 500, 1000]]]);
  await eq("TYPE", () => r.type(`${p}fixed`), "rl.fixed");
  await eq("PTTL", () => r.pttl(`${p}token`), 1000);
  await throws("WRONGTYPE", () => r.call("RL.TOKEN", `${p}fixed`, 3, 60000),
    "WRONGTYPE Operation against a key holding the wrong kind of value");
  await throws("bad limit", () => r.call("RL.FIXED", `${p}bad`, 0, 60000), "ERR limit must be an integer between 1 and 1000000000");
  await eq("bad input changes nothing", () => r.exists(`${p}bad`), 0);

  // A pipeline of 500 keys, twice: the first admits each, the second limits each.
  const keys = Array.from({ length: 500 }, (_, i) => `${p}pipe:${i}`);
  const pipe = () => keys.reduce((pl, k) => pl.call("RL.FIXED", k, 1, 60000), r.pipeline()).exec();
  await eq("pipeline of 500, admitted", async () => (await pipe()).map(([e, v]) => e || v), keys.map(() => [1, 1, 0, 0, 60000]));
  await eq("pipeline of 500, limited", async () => (await pipe()).map(([e, v]) => e || v), keys.map(() => [0, 1, 0, 60000, 60000]));
  await eq("MULTI of RL.*", () => r.multi().call("RL.FIXED", `${p}m1`, 2, 60000).call("RL.GCRA", `${p}m2`, 10, 1000).exec(),
    [[null, [1, 2, 1, 0, 60000]], [null, [1, 10, 9, 0, 100]]]);

  // 10 connections, 30 calls each, on one key of limit 100: exactly 100 admitted.
  const conns = Array.from({ length: 10 }, () => new Redis(opts));
  const answers = await Promise.all(conns.flatMap((c) => Array.from({ length: 30 }, () => c.call("RL.FIXED", `${p}shared`, 100, 60000))));
  conns.forEach((c) => c.disconnect());
  await eq("10 connections share a limit", () => answers.filter((a) => a[0] === 1).length, 100);

  const scanned = [];
  await new Promise((resolve, reject) =>
    r.scanStream({ match: `${p}pipe:*`, count: 100 }).on("data", (ks) => scanned.push(...ks)).on("end", resolve).on("error", reject));
  await eq("SCAN", () => new Set(scanned).size, 500);
  await eq("DEL", () => r.del(`${p}fixed`, `${p}token`, `${p}nosuch`), 2);
}
