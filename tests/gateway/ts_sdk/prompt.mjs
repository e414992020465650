// One prompt that reads a file: initialize, session/new, session/prompt.
export async function run(t) {
  const init = await t.agent.request(t.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: {},
  });
  const session = await t.agent.request(t.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  const response = await t.agent.request(t.methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "what is in a.txt?" }],
  });
  return { agent: init.agentInfo.name, stopReason: response.stopReason, sessionId: session.sessionId };
}
