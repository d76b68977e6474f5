// node-redis's createCluster against three rlserver nodes: node cluster_node_redis.js host:port,... 2|3
// The nodes' clocks are frozen at the start of a day: fresh keys answer the
// algorithms' known values. node-redis takes a command's routing key from the caller
// (sendCommand(firstKey, isReadonly, args)), so it needs no table of RL.*; without
// one it picks a random node, and again after each MOVED (docs/clients.md).
"use strict";
const { createCluster } = require("redis");
const { eq, main } = require("./check");

const [addrs, proto] = process.argv.slice(2);
const p = `nrc${proto}:`;
const range = (n) => Array.from({ length: n }, (_, i) => i);

main(async () => {
  const c = createCluster({ rootNodes: addrs.split(",").map((a) => ({ url: `redis://${a}` })), RESP: Number(proto) });
  c.on("error", () => {});
  await c.connect();
  const cmd = (key, ...args) => c.sendCommand(key, false, args.map(String));
  const keys = range(300).map((i) => `${p}spread:${i}`);
  await eq("300 keys over the nodes, admitted", () => Promise.all(keys.map((k) => cmd(k, "RL.FIXED", k, 1, 60000))), keys.map(() => [1, 1, 0, 0, 60000]));
  await eq("300 keys over the nodes, limited", () => Promise.all(keys.map((k) => cmd(k, "RL.FIXED", k, 1, 60000))), keys.map(() => [0, 1, 0, 60000, 60000]));
  const users = range(30).map((u) => `{${p}user:${u}}`);
  await eq("RL.ALL on hash-tagged keys of 30 users", () => Promise.all(users.map(async (t) => {
    const out = [];
    for (let i = 0; i < 3; i++) out.push(await cmd(t, "RL.ALL", "FIXED", `${t}:day`, 100, 86400000, "TOKEN", `${t}:sec`, 2, 1000));
    return out;
  })), users.map(() => [[1, [1, 100, 99, 0, 86400000], [1, 2, 1, 0, 500]], [1, [1, 100, 98, 0, 86400000], [1, 2, 0, 0, 1000]],
    [0, [1, 100, 97, 0, 86400000], [0, 2, 0, 500, 1000]]]));

  await eq("MULTI on hash tags of 20 users", () => Promise.all(range(20).map(async (u) => {
    const t = `{${p}tx:${u}}`;
    const out = [];
    for (let i = 0; i < 2; i++) {
      out.push(await c.multi(t).addCommand(t, false, ["RL.FIXED", `${t}:a`, "2", "60000"])
        .addCommand(t, false, ["RL.TOKEN", `${t}:b`, "2", "1000"]).exec());
    }
    return out;
  })), range(20).map(() => [[[1, 2, 1, 0, 60000], [1, 2, 1, 0, 500]], [[1, 2, 0, 0, 60000], [1, 2, 0, 0, 1000]]]));
  await eq("a pipeline on one hash tag", () => range(50).reduce((m, i) => m.addCommand(`{${p}batch}`, false, ["RL.FIXED", `{${p}batch}:${i}`, "2", "60000"]),
    c.multi(`{${p}batch}`)).execAsPipeline(), range(50).map(() => [1, 2, 1, 0, 60000]));
  c.destroy();
});
