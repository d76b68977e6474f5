// The checks the Node scripts share. Each prints "ok NAME" or "not ok NAME: what
// differed"; clients_test.go fails the test on the second, and on a script that
// does not print "done" at its end.
"use strict";
const util = require("node:util");

// show is a value as one line, for "not ok" lines.
function show(v) {
  return util.inspect(v, { depth: 6, breakLength: Infinity, compact: true, maxArrayLength: 20 });
}

// plain turns Buffers into strings and Maps into objects, so that replies compare
// with literals whatever the library's type mapping.
function plain(v) {
  if (Buffer.isBuffer(v)) return v.toString();
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, e]) => [plain(k), plain(e)]));
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Error) return { error: v.message };
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, plain(e)]));
  return v;
}

// checkWait bounds one check: a client that hangs fails the check, not the script.
const checkWait = 10000;

// within is fn's promise, rejected after checkWait.
function within(fn) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${checkWait} ms`)), checkWait);
  });
  return Promise.race([Promise.resolve().then(fn), limit]).finally(() => clearTimeout(timer));
}

function report(name, ok, detail) {
  console.log(ok ? `ok ${name}` : `not ok ${name}: ${detail}`);
}

// eq: fn's value equals want (after plain).
async function eq(name, fn, want) {
  try {
    const got = plain(await within(fn));
    report(name, util.isDeepStrictEqual(got, want), `got ${show(got)}, want ${show(want)}`);
  } catch (e) {
    report(name, false, `threw ${show(e.message)}, want ${show(want)}`);
  }
}

// that: pred holds for fn's value.
async function that(name, fn, pred, what) {
  try {
    const got = await within(fn);
    report(name, !!pred(got), `got ${show(plain(got))}, want ${what}`);
  } catch (e) {
    report(name, false, `threw ${show(e.message)}, want ${what}`);
  }
}

// throws: fn throws (or rejects with) an error whose message is want.
async function throws(name, fn, want) {
  try {
    const got = await within(fn);
    report(name, false, `answered ${show(plain(got))}, want the error ${show(want)}`);
  } catch (e) {
    report(name, e.message === want, `threw ${show(e.message)}, want ${show(want)}`);
  }
}

// parseClientInfo reads CLIENT INFO's "k=v k=v" line.
function parseClientInfo(line) {
  const out = {};
  for (const f of String(line).trim().split(" ")) {
    const i = f.indexOf("=");
    out[f.slice(0, i)] = f.slice(i + 1);
  }
  return out;
}

// clientInfoFields are the fields Redis 7's CLIENT INFO has in every version from
// 7.0 (7.0.15 is what Debian ships and the suite checks them on): clients parse
// them by name.
const clientInfoFields = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub",
  "multi", "qbuf", "qbuf-free", "argv-mem", "obl", "oll", "omem", "tot-mem", "events", "cmd", "user",
  "redir", "resp"];

// missingFields are the names of fields that info lacks.
function missingFields(info) {
  return clientInfoFields.filter((f) => !(f in info));
}

// lines reads stdin a line at a time: await next() is the next line.
function stdinLines() {
  const rl = require("node:readline").createInterface({ input: process.stdin });
  const queue = [];
  const waiting = [];
  rl.on("line", (l) => (waiting.length ? waiting.shift()(l) : queue.push(l)));
  rl.on("close", () => waiting.splice(0).forEach((w) => w(null)));
  return () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => waiting.push(r)));
}

// main runs fn, then prints "done" and exits; an exception fails the script.
function main(fn) {
  fn().then(
    () => {
      console.log("done");
      process.exit(0);
    },
    (e) => {
      console.log(`not ok script: ${e && e.stack ? e.stack : e}`);
      process.exit(1);
    },
  );
}

module.exports = { eq, that, throws, show, plain, parseClientInfo, clientInfoFields, missingFields, stdinLines, main };
