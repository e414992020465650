// The mode flow: the modes a new session offers, session/set_mode and the
// current_mode_update it brings, a write run without asking in "allow",
// the mode set back through session/set_config_option, then a write
// refused without asking in "read-only".
export function permission(params, t) {
  t.log({ asked: params.toolCall.toolCallId });
  return { outcome: { outcome: "cancelled" } };
}

export async function run(t) {
  const { agent, methods } = t;
  await agent.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const session = await agent.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  const sessionId = session.sessionId;
  await t.waitFor(() => t.of("available_commands_update").length > 0);

  await agent.request(methods.agent.session.setMode, { sessionId, modeId: "allow" });
  await t.waitFor(() => t.of("current_mode_update").length > 0);
  const allowed = await agent.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "write x" }],
  });

  const options = await agent.request(methods.agent.session.setConfigOption, {
    sessionId,
    configId: "mode",
    value: "read-only",
  });
  await t.waitFor(() => t.of("current_mode_update").length > 1);
  const refused = await agent.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "write y" }],
  });
  return {
    modes: session.modes,
    configOptions: session.configOptions.map((o) => [o.id, o.currentValue]),
    commands: t.of("available_commands_update")[0].availableCommands.map((c) => c.name),
    modeUpdates: t.of("current_mode_update").map((u) => u.currentModeId),
    optionsAfter: options.configOptions.map((o) => [o.id, o.currentValue]),
    stopReasons: [allowed.stopReason, refused.stopReason],
  };
}
