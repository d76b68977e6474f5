// ioredis through a failover: node sentinel_ioredis.js host:port,... password
// (the Sentinels' addresses, then the servers' password).
// It drains a key, prints "ready" and waits for a line on stdin: the test has killed
// the primary (SIGKILL). Then it calls until a write succeeds on the new primary,
// which must be another address, and the drained key must still be drained there.
"use strict";
const Redis = require("ioredis");
const { eq, that, stdinLines, main } = require("./check");

const sentinels = process.argv[2].split(",").map((a) => ({ host: a.split(":")[0], port: Number(a.split(":")[1]) }));
const password = process.argv[3];
const p = "ios:";
const day = 86400000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

main(async () => {
  const r = new Redis({ sentinels, name: "mymaster", password, maxRetriesPerRequest: 1, connectTimeout: 1000 });
  r.on("error", () => {});
  const s = new Redis(sentinels[0]);
  const master = async () => (await s.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")).join(":");
  const before = await master();
  const drain = [];
  for (let i = 0; i < 4; i++) drain.push((await r.call("RL.TOKEN", `${p}drained`, 3, day)).slice(0, 3));
  await eq("drain a key", () => drain, [[1, 3, 2], [1, 3, 1], [1, 3, 0], [0, 3, 0]]);
  console.log("ready");
  await stdinLines()();
  const deadline = Date.now() + 60000;
  const errors = new Set();
  for (;;) {
    try {
      await r.call("RL.TOKEN", `${p}after`, 3, day);
      break;
    } catch (e) {
      errors.add(e.message.split(" ")[0]);
      if (Date.now() > deadline) throw new Error(`no write within 60 s of the kill: ${[...errors]}`);
      await sleep(100);
    }
  }
  console.log(`errors on the way: ${[...errors]}`);
  // The client may hear of the promotion from another Sentinel before sentinels[0] does.
  for (const until = Date.now() + 10000; (await master()) === before && Date.now() < until; ) await sleep(100);
  await that("the new primary", master, (a) => a !== before, `not ${before}`);
  await eq("the drained key, drained", async () => (await r.call("RL.TOKEN", `${p}drained`, 3, day)).slice(0, 3), [0, 3, 0]);
  r.disconnect();
  s.disconnect();
});
