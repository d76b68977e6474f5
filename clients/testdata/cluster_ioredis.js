// ioredis's Cluster against three rlserver nodes: node cluster_ioredis.js host:port,... 2|3
// The nodes' clocks are frozen at the start of a day: fresh keys answer the
// algorithms' known values. ioredis does not know RL.*: it sends a single command to
// a random node and follows the MOVED; the checks show what that means for
// pipelines, and the two ways around it of docs/clients.md.
"use strict";
const Redis = require("ioredis");
const calculateSlot = require("cluster-key-slot");
const { eq, that, main } = require("./check");

const [addrs, proto] = process.argv.slice(2);
const nodes = addrs.split(",").map((a) => ({ host: a.split(":")[0], port: Number(a.split(":")[1]) }));
const p = `ioc${proto}:`;
const opts = { redisOptions: { protocol: Number(proto) } };
const range = (n) => Array.from({ length: n }, (_, i) => i);
const answers = (results) => results.map(([e, v]) => (e ? e.message : v));

main(async () => {
  const c = new Redis.Cluster(nodes, opts);
  const cmd = (...args) => c.call(...args);
  const keys = range(300).map((i) => `${p}spread:${i}`);
  await eq("300 keys over the nodes, admitted", () => Promise.all(keys.map((k) => cmd("RL.FIXED", k, 1, 60000))), keys.map(() => [1, 1, 0, 0, 60000]));
  await eq("300 keys over the nodes, limited", () => Promise.all(keys.map((k) => cmd("RL.FIXED", k, 1, 60000))), keys.map(() => [0, 1, 0, 60000, 60000]));

  const users = range(30).map((u) => `{${p}user:${u}}`);
  await eq("RL.ALL on hash-tagged keys of 30 users", () => Promise.all(users.map(async (t) => {
    const out = [];
    for (let i = 0; i < 3; i++) out.push(await cmd("RL.ALL", "FIXED", `${t}:day`, 100, 86400000, "TOKEN", `${t}:sec`, 2, 1000));
    return out;
  })), users.map(() => [[1, [1, 100, 99, 0, 86400000], [1, 2, 1, 0, 500]], [1, [1, 100, 98, 0, 86400000], [1, 2, 0, 0, 1000]],
    [0, [1, 100, 97, 0, 86400000], [0, 2, 0, 500, 1000]]]));

  // A pipeline goes to one node; keys sharing a hash tag are all on it.
  const tagged = range(50).reduce((pl, i) => pl.call("RL.FIXED", `{${p}batch}:${i}`, 2, 60000), c.pipeline());
  await eq("a pipeline on one hash tag", async () => answers(await tagged.exec()), range(50).map(() => [1, 2, 1, 0, 60000]));

  // Across nodes, the pipeline's node answers MOVED for the other nodes' keys.
  const cross = range(30).map((i) => `${p}cross:${i}`);
  await that("a pipeline across nodes gets MOVED for other nodes' keys",
    async () => answers(await cross.reduce((pl, k) => pl.call("RL.FIXED", k, 2, 60000), c.pipeline()).exec()),
    (got) => got.some((a) => /^MOVED /.test(a)) && got.every((a) => /^MOVED /.test(a) || a[0] === 1), "MOVED errors");

  // Around it: a pipeline per node, the keys grouped by the node owning their slot.
  const byNode = new Map();
  for (const k of cross) {
    const node = c.slots[calculateSlot(k)][0];
    byNode.set(node, [...(byNode.get(node) || []), k]);
  }
  const masters = new Map(c.nodes("master").map((n) => [`${n.options.host}:${n.options.port}`, n]));
  await eq("a pipeline per node", async () => {
    const got = {};
    await Promise.all([...byNode].map(async ([node, ks]) => {
      const res = await ks.reduce((pl, k) => pl.call("RL.FIXED", k, 3, 60000, "PEEK"), masters.get(node).pipeline()).exec();
      ks.forEach((k, i) => (got[k] = answers([res[i]])[0][0]));
    }));
    return cross.map((k) => got[k]);
  }, cross.map(() => 1));
  await eq("... on every node", () => byNode.size, nodes.length);

  // MULTI on hash-tagged keys, sent (not knowing RL.*) to a random node: a node that
  // does not own the slot refuses the commands when queued (MOVED), EXEC answers
  // EXECABORT, and ioredis sends the transaction again to the owner.
  await eq("MULTI on hash tags of 20 users", () => Promise.all(range(20).map(async (u) => {
    const t = `{${p}tx:${u}}`;
    const out = [];
    for (let i = 0; i < 2; i++) {
      out.push(answers(await c.multi().call("RL.FIXED", `${t}:a`, 2, 60000).call("RL.TOKEN", `${t}:b`, 2, 1000).exec()));
    }
    return out;
  })), range(20).map(() => [[[1, 2, 1, 0, 60000], [1, 2, 1, 0, 500]], [[1, 2, 0, 0, 60000], [1, 2, 0, 0, 1000]]]));

  // Told RL.FIXED's key position (what COMMAND INFO says), ioredis routes it itself
  // and refuses a cross-node pipeline before sending anything.
  const info = await c.call("COMMAND", "INFO", "RL.FIXED");
  const table = require("@ioredis/commands/built/commands.json");
  const [name, arity, flags, first, last, step] = info[0];
  table[String(name).toLowerCase()] = { arity, flags: flags.map(String), keyStart: first, keyStop: last, step };
  await eq("COMMAND INFO RL.FIXED's key position", () => [first, last, step], [1, 1, 1]);
  const known = range(30).map((i) => `${p}known:${i}`);
  await eq("a known command's cross-node pipeline is refused", async () => {
    try {
      return await known.reduce((pl, k) => pl.call("RL.FIXED", k, 2, 60000), c.pipeline()).exec();
    } catch (e) {
      return e.message;
    }
  }, "All keys in the pipeline should belong to the same slots allocation group");
  await eq("... before sending anything", () => Promise.all(known.map((k) => c.exists(k))), known.map(() => 0));
  await eq("a known command's single calls", () => Promise.all(known.map((k) => cmd("RL.FIXED", k, 2, 60000))), known.map(() => [1, 2, 1, 0, 60000]));
  c.disconnect();
});
