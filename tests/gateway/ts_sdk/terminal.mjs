// bash through the client's terminals, as an editor built on the SDK runs
// them: each command a real process (a group of its own, so kill stops all
// of it). Prompt 1 runs a command to its end; prompt 2 starts one that
// sleeps and cancels the turn while it runs.
import { spawn } from "node:child_process";

const terminals = new Map();
const calls = [];
let next = 1;

function status(term) {
  if (term.code === null && term.signal === null) return null;
  return { exitCode: term.code, signal: term.signal };
}

export function register(app, t) {
  const m = t.methods.client.terminal;
  app
    .onRequest(m.create, async ({ params }) => {
      calls.push(["create", params.command, params.args, params.cwd, params.outputByteLimit]);
      const child = spawn(params.command, params.args ?? [], { cwd: params.cwd, detached: true });
      const terminalId = `ts-term-${next++}`;
      const term = { child, output: "", code: null, signal: null, pid: child.pid };
      term.exited = new Promise((resolve) =>
        child.once("exit", (code, signal) => {
          term.code = code;
          term.signal = signal;
          resolve();
        }),
      );
      const keep = (chunk) => {
        term.output = (term.output + chunk.toString()).slice(-(params.outputByteLimit ?? Infinity));
      };
      child.stdout.on("data", keep);
      child.stderr.on("data", keep);
      terminals.set(terminalId, term);
      return { terminalId };
    })
    .onRequest(m.waitForExit, async ({ params }) => {
      calls.push(["wait_for_exit", params.terminalId]);
      const term = terminals.get(params.terminalId);
      await term.exited;
      return status(term);
    })
    .onRequest(m.output, async ({ params }) => {
      calls.push(["output", params.terminalId]);
      const term = terminals.get(params.terminalId);
      return { output: term.output, truncated: false, exitStatus: status(term) };
    })
    .onRequest(m.kill, async ({ params }) => {
      calls.push(["kill", params.terminalId]);
      const term = terminals.get(params.terminalId);
      if (status(term) === null) process.kill(-term.pid, "SIGKILL");
      await term.exited;
      return {};
    })
    .onRequest(m.release, async ({ params }) => {
      calls.push(["release", params.terminalId]);
      const term = terminals.get(params.terminalId);
      if (status(term) === null) process.kill(-term.pid, "SIGKILL");
      await term.exited;
      terminals.delete(params.terminalId);
      return {};
    });
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function run(t) {
  await t.agent.request(t.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { terminal: true },
  });
  const { sessionId } = await t.agent.request(t.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  const first = await t.agent.request(t.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "run it" }],
  });
  const embeds = (id) =>
    t.of("tool_call_update").filter((u) => u.toolCallId === id && (u.content ?? []).some((c) => c.type === "terminal"));
  const second = t.agent.request(t.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "sleep" }],
  });
  await t.waitFor(() => embeds("b2").length > 0);
  const sleeping = [...terminals.values()][0];
  const aliveBefore = alive(sleeping.pid);
  await t.agent.notify(t.methods.agent.session.cancel, { sessionId });
  const cancelled = await second;
  return {
    first: first.stopReason,
    second: cancelled.stopReason,
    calls,
    aliveBefore,
    aliveAfter: alive(sleeping.pid),
    open: terminals.size,
    embedded: [embeds("b1").map((u) => u.content[0].terminalId), embeds("b2").map((u) => u.content[0].terminalId)],
  };
}
