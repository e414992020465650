"""The middleware onion around tool execution."""

from agentrio import AgentSpec, ScriptedModel, Tool, ToolResult, ToolResultMessage

from .helpers import calls, echo_tool, say


def layer(name, log):
    async def middleware(ctx, call_next):
        log.append(f"{name} in")
        try:
            result = await call_next()
            log.append(f"{name} out: {'error' if result.is_error else 'ok'}")
            return result
        except Exception as exc:
            log.append(f"{name} saw {type(exc).__name__}")
            raise

    return middleware


async def _run(rt, middleware, tool=None, args=None):
    tool = tool or echo_tool()
    model = ScriptedModel([calls((tool.name, args or {"text": "hi"})), say("ok")])
    agent = await rt.create(AgentSpec("a", model, tools=[tool], middleware=middleware))
    await agent.run("go")
    return next(m for m in agent.messages if isinstance(m, ToolResultMessage))


async def test_layers_run_outermost_first_and_see_the_outcome(rt):
    log = []
    result = await _run(rt, [layer("outer", log), layer("inner", log)])
    assert result.text == "echo: hi"
    assert log == ["outer in", "inner in", "inner out: ok", "outer out: ok"]


async def test_outer_layers_see_failures(rt):
    log = []

    async def failing(args, ctx):
        raise OSError("disk on fire")

    tool = Tool("fail", "", {"type": "object"}, failing)
    result = await _run(rt, [layer("outer", log), layer("inner", log)], tool, {})
    assert result.is_error and result.text == "OSError: disk on fire"
    assert log == ["outer in", "inner in", "inner saw OSError", "outer saw OSError"]


async def test_a_layer_may_rewrite_arguments(rt):
    async def shout(ctx, call_next):
        ctx.args["text"] = ctx.args["text"].upper()
        return await call_next()

    assert (await _run(rt, [shout])).text == "echo: HI"


async def test_a_layer_that_corrupts_arguments_gets_a_contract_error_and_the_tool_never_runs(rt):
    ran = []

    async def execute(args, ctx):
        ran.append(args)
        return "ran"

    tool = Tool(
        "write",
        "",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        execute,
    )

    async def buggy_plugin(ctx, call_next):
        ctx.args["path"] = 42
        return await call_next()

    result = await _run(rt, [buggy_plugin], tool, {"path": "notes.txt"})
    assert ran == []
    assert result.is_error
    assert result.text == (
        "contract error: middleware changed the arguments of 'write' ('path': 'notes.txt' -> 42) "
        "and they no longer match its schema: path: 42 is not of type 'string'"
    )


async def test_a_layer_may_short_circuit_with_its_own_result(rt):
    async def cached(ctx, call_next):
        return ToolResult("from cache")

    assert (await _run(rt, [cached])).text == "from cache"


async def test_a_layer_wraps_the_call_in_a_scope(rt):
    import contextvars

    capability = contextvars.ContextVar("capability", default=None)
    seen = []

    async def grant(ctx, call_next):
        token = capability.set("workspace:rw")
        try:
            return await call_next()
        finally:
            capability.reset(token)

    async def execute(args, ctx):
        seen.append(capability.get())
        return "ok"

    await _run(rt, [grant], Tool("t", "", {"type": "object"}, execute), {})
    assert seen == ["workspace:rw"] and capability.get() is None


async def test_nothing_a_tool_does_to_its_arguments_reaches_history(rt):
    async def vandal(args, ctx):
        args["items"].append("injected")
        args.clear()
        return "done"

    tool = Tool("vandal", "", {"type": "object"}, vandal)
    model = ScriptedModel([calls(("vandal", {"items": ["a"]})), say("ok")])
    agent = await rt.create(AgentSpec("a", model, tools=[tool]))
    await agent.run("go")
    assert agent.messages[1].tool_calls[0].arguments == {"items": ["a"]}


async def test_details_that_are_not_json_keep_their_shape_with_values_as_text(rt):
    class Handle:
        def __repr__(self):
            return "<Handle 7>"

    async def execute(args, ctx):
        return ToolResult("opened", details={"handle": Handle()})

    result = await _run(rt, [], Tool("open", "", {"type": "object"}, execute), {})
    assert result.text == "opened" and result.details == {"handle": "<Handle 7>"}
