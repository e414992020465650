// An ACP client built on the official TypeScript SDK, driving an agent over
// stdio, for agentrio's tests (tests/gateway/npm_acp.py runs it).
//
//   node client.mjs SCENARIO.mjs TRANSCRIPT.jsonl -- AGENT_COMMAND [ARGS...]
//
// The SDK parses every request and notification the agent sends with its
// generated schemas; anything it refuses (it says so with console.error) is
// an error of the run. The scenario module exports:
//   run(t): async; drives the agent through `t.agent` (the SDK's
//     ClientContext); its JSON-able return value is reported as `result`.
//   register(app, t) (optional): adds client handlers (fs, terminal, ...)
//     to the SDK's ClientApp before it connects.
//   permission(params, t) (optional): the answer to session/request_permission;
//     by default the first allow_once option is selected.
// `t` holds: agent, methods, updates (every session/update's params, in
// order), waitFor(predicate, ms), of(kind), log(value), errors.
// The last line on stdout is {"result", "updates", "errors"}; the exit code
// is 0 when the run succeeded and nothing was refused.

import { spawn } from "node:child_process";
import { appendFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import * as acp from "@agentclientprotocol/sdk";

const [scenarioPath, transcriptPath, dashes, command, ...args] = process.argv.slice(2);
if (dashes !== "--" || !command) {
  console.log("usage: node client.mjs SCENARIO.mjs TRANSCRIPT.jsonl -- AGENT_COMMAND [ARGS...]");
  process.exit(2);
}
const scenario = await import(pathToFileURL(scenarioPath).href);
writeFileSync(transcriptPath, "");

const errors = [];
const consoleError = console.error;
console.error = (...parts) => {
  // The SDK reports a message it refused (schema violation, handler failure) here.
  errors.push(parts.map((p) => (typeof p === "string" ? p : JSON.stringify(p))).join(" "));
  consoleError(...parts);
};

const updates = [];
let changed = () => {};
const t = {
  agent: null,
  methods: acp.methods,
  updates,
  errors,
  notes: [],
  log(value) {
    this.notes.push(value);
  },
  of(kind) {
    return updates.filter((u) => u.update.sessionUpdate === kind).map((u) => u.update);
  },
  async waitFor(predicate, ms = 20000) {
    const deadline = Date.now() + ms;
    while (!predicate()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${predicate}`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        changed = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  },
};

const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const record = (from) =>
  new TransformStream({
    transform(message, controller) {
      appendFileSync(transcriptPath, JSON.stringify({ from, message }) + "\n");
      controller.enqueue(message);
    },
  });
const wire = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const toAgent = record("client");
toAgent.readable.pipeTo(wire.writable).catch(() => {});
const stream = { readable: wire.readable.pipeThrough(record("agent")), writable: toAgent.writable };

const app = acp
  .client({ name: "agentrio-tests" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
    changed();
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    if (scenario.permission) return await scenario.permission(params, t);
    const option = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });
if (scenario.register) scenario.register(app, t);

let result = null;
let code = 0;
try {
  result = await app.connectWith(stream, async (agent) => {
    t.agent = agent;
    return await scenario.run(t);
  });
} catch (error) {
  errors.push(`the scenario failed: ${error?.stack ?? error}`);
}
child.stdin.end();
const exited = new Promise((resolve) => child.once("exit", resolve));
const timer = setTimeout(() => child.kill("SIGKILL"), 15000);
await exited;
clearTimeout(timer);
if (errors.length) code = 1;
console.log(JSON.stringify({ result: result ?? null, updates, notes: t.notes, errors }));
process.exit(code);
