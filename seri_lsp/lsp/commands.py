"""The `seri.*` commands of the LSP contract (SPEC section 7), as thin engine calls.

Each command takes one JSON object (missing, null, `[]` or `[[]]` count as `{}`) and
returns one. Argument errors answer InvalidParams naming the field (`data.field`); other
refusals answer RequestFailed with the reason, and so does a write that failed on the
disk (full, read-only, an I/O error: the file and what to do); anything else is a bug and
answers InternalError. Nothing a client sends can take the server down.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from seri_lsp import faults
from seri_lsp.engine import Engine
from seri_lsp.errors import InvalidArgument, SeriError, store_failure_message
from seri_lsp.limits import (
    DEFAULT_SEARCH_LIMIT,
    MAX_BUNDLE_BYTES,
    MAX_CHOICE_CHARS,
    MAX_FOCUS_CHARS,
    MAX_LIST_LIMIT,
    MAX_MESSAGE_ID,
    MAX_MODEL_CHARS,
    MAX_PAGE_LIMIT,
    MAX_PATH_CHARS,
    MAX_PROMPT_CHARS,
    MAX_QUERY_CHARS,
    MAX_REWIND_STEPS,
    MAX_SEARCH_LIMIT,
    MAX_SEARCH_OFFSET,
    MAX_SESSION_ID_CHARS,
    MAX_TITLE_CHARS,
    MAX_TURNS,
)
from seri_lsp.lsp.arguments import (
    attachments,
    optional_bool,
    optional_int,
    optional_text,
    required_int,
    required_text,
    single_object,
)
from seri_lsp.lsp.protocol import REQUEST_FAILED
from seri_lsp.lsp.wire import to_wire
from seri_lsp.slash import COMMANDS as SLASH_COMMANDS

# A command: the engine's answer to its arguments (a typed value, or a dict holding some).
Handler = Callable[[Engine, dict[str, Any]], Awaitable[Any]]


async def session_new(engine: Engine, args: dict[str, Any]) -> Any:
    return {"session": await engine.new_session()}


async def session_continue(engine: Engine, args: dict[str, Any]) -> Any:
    return {"session": await engine.continue_session()}


async def session_resume(engine: Engine, args: dict[str, Any]) -> Any:
    return {
        "session": await engine.resume_session(
            required_text(args, "sessionId", MAX_SESSION_ID_CHARS)
        )
    }


async def session_list(engine: Engine, args: dict[str, Any]) -> Any:
    limit = optional_int(args, "limit", 1, MAX_LIST_LIMIT)
    all_projects = bool(optional_bool(args, "allProjects"))
    return {"sessions": await engine.list_sessions(limit, all_projects)}


async def session_get(engine: Engine, args: dict[str, Any]) -> Any:
    session_id = optional_text(args, "sessionId", MAX_SESSION_ID_CHARS)
    limit = optional_int(args, "limit", 1, MAX_PAGE_LIMIT)
    before = optional_int(args, "before", 1, MAX_MESSAGE_ID)
    # The messages come encoded: the protocol writes them as they are (a long history is
    # held once, as bytes).
    return await engine.session_view(session_id or None, limit=limit, before=before, encoded=True)


async def session_fork(engine: Engine, args: dict[str, Any]) -> Any:
    session_id = optional_text(args, "sessionId", MAX_SESSION_ID_CHARS)
    message_id = optional_int(args, "messageId", 1, MAX_MESSAGE_ID)
    return await engine.fork_session(session_id or None, message_id)


async def session_usage(engine: Engine, args: dict[str, Any]) -> Any:
    session_id = optional_text(args, "sessionId", MAX_SESSION_ID_CHARS)
    return await engine.session_usage(session_id or None)


async def session_context(engine: Engine, args: dict[str, Any]) -> Any:
    session_id = optional_text(args, "sessionId", MAX_SESSION_ID_CHARS)
    return await engine.session_context(session_id or None)


async def session_search(engine: Engine, args: dict[str, Any]) -> Any:
    page = await engine.search(
        required_text(args, "query", MAX_QUERY_CHARS),
        all_projects=bool(optional_bool(args, "allProjects")),
        limit=optional_int(args, "limit", 1, MAX_SEARCH_LIMIT) or DEFAULT_SEARCH_LIMIT,
        offset=optional_int(args, "offset", 0, MAX_SEARCH_OFFSET) or 0,
    )
    return page


async def session_rename(engine: Engine, args: dict[str, Any]) -> Any:
    session_id = optional_text(args, "sessionId", MAX_SESSION_ID_CHARS)
    # Surrounding spaces are dropped: the bound is checked on what is kept.
    title = required_text(args, "title", MAX_TITLE_CHARS + 1_000)
    return {"session": await engine.rename_session(session_id or None, title)}


async def session_delete(engine: Engine, args: dict[str, Any]) -> Any:
    return await engine.delete_session(required_text(args, "sessionId", MAX_SESSION_ID_CHARS))


async def session_model(engine: Engine, args: dict[str, Any]) -> Any:
    session_id = optional_text(args, "sessionId", MAX_SESSION_ID_CHARS)
    if "model" not in args:
        raise InvalidArgument("model", "model is required: a model id, or null for the setting's")
    model = optional_text(args, "model", MAX_MODEL_CHARS)
    return await engine.set_session_model(session_id or None, model)


async def code_merge(engine: Engine, args: dict[str, Any]) -> Any:
    path = required_text(args, "path", MAX_PATH_CHARS)
    # A code block from a reply: no longer than a prompt may be.
    return await engine.merge_code(path, required_text(args, "text", MAX_PROMPT_CHARS))


async def models(engine: Engine, args: dict[str, Any]) -> Any:
    return await engine.models()


async def session_export(engine: Engine, args: dict[str, Any]) -> Any:
    session_id = optional_text(args, "sessionId", MAX_SESSION_ID_CHARS)
    export_format = required_text(args, "format", MAX_CHOICE_CHARS)
    return await engine.export_session(session_id or None, export_format)


async def session_import(engine: Engine, args: dict[str, Any]) -> Any:
    return await engine.import_session(required_text(args, "text", MAX_BUNDLE_BYTES))


async def prompt(engine: Engine, args: dict[str, Any]) -> Any:
    text = required_text(args, "text", MAX_PROMPT_CHARS)
    return await engine.prompt(text, attachments(args))


async def compact(engine: Engine, args: dict[str, Any]) -> Any:
    focus = optional_text(args, "focus", MAX_FOCUS_CHARS)
    return await engine.compact(focus.strip() if focus and focus.strip() else None)


async def clear(engine: Engine, args: dict[str, Any]) -> Any:
    return {"session": await engine.clear()}


async def rewind(engine: Engine, args: dict[str, Any]) -> Any:
    return await engine.rewind(
        steps=optional_int(args, "steps", 1, MAX_REWIND_STEPS) or 1,
        restore=optional_text(args, "restore", MAX_CHOICE_CHARS) or "both",
        force=bool(optional_bool(args, "force")),
        message_id=optional_int(args, "messageId", 1, MAX_MESSAGE_ID),
        check=bool(optional_bool(args, "check")),
    )


async def checkpoints(engine: Engine, args: dict[str, Any]) -> Any:
    session_id = optional_text(args, "sessionId", MAX_SESSION_ID_CHARS)
    return await engine.checkpoints_of(session_id or None)


async def max_turns(engine: Engine, args: dict[str, Any]) -> Any:
    return await engine.set_max_turns(required_int(args, "n", 1, MAX_TURNS))


async def cancel(engine: Engine, args: dict[str, Any]) -> Any:
    return {"cancelled": engine.cancel()}


async def tool_stop(engine: Engine, args: dict[str, Any]) -> Any:
    session_id = required_text(args, "sessionId", MAX_SESSION_ID_CHARS)
    call_id = required_text(args, "toolCallId", MAX_SESSION_ID_CHARS)
    return {"stopped": engine.stop_tool(session_id, call_id)}


async def trajectory(engine: Engine, args: dict[str, Any]) -> Any:
    return await engine.trajectory(optional_bool(args, "enabled"))


async def trajectory_get(engine: Engine, args: dict[str, Any]) -> Any:
    session_id = optional_text(args, "sessionId", MAX_SESSION_ID_CHARS)
    trajectory_id = optional_text(args, "trajectoryId", MAX_SESSION_ID_CHARS)
    compacted = optional_bool(args, "compacted") or False
    return await engine.trajectory_get(session_id or None, trajectory_id or None, compacted)


async def legacy_import(engine: Engine, args: dict[str, Any]) -> Any:
    report = await engine.import_legacy()
    return report.summary()


async def info(engine: Engine, args: dict[str, Any]) -> Any:
    return await engine.info()


async def mcp_restart(engine: Engine, args: dict[str, Any]) -> Any:
    name = required_text(args, "name", 1_000)
    try:
        await engine.mcp.restart(name)
    except KeyError:
        raise InvalidArgument("name", f"There is no MCP server named {name!r}.") from None
    return {"restarted": name}


async def mcp_consent(engine: Engine, args: dict[str, Any]) -> Any:
    return await engine.mcp.consent_command(optional_bool(args, "revoke") or False)


def slash_commands() -> list[dict[str, str | bool]]:
    """The slash commands as the wire shows them (`seri.commands`, and `initialize`'s
    `experimental.seri.slashCommands`), in the registry's order."""
    return [
        {"name": command.name, "usage": command.usage, "summary": command.summary}
        | ({"argumentHint": command.argument_hint} if command.argument_hint else {})
        | ({"picker": True} if command.picker else {})
        for command in SLASH_COMMANDS
    ]


async def commands(engine: Engine, args: dict[str, Any]) -> dict[str, Any]:
    return {"commands": slash_commands()}


COMMANDS: dict[str, Handler] = {
    "seri.session.new": session_new,
    "seri.session.continue": session_continue,
    "seri.session.resume": session_resume,
    "seri.session.list": session_list,
    "seri.session.get": session_get,
    "seri.session.fork": session_fork,
    "seri.session.usage": session_usage,
    "seri.session.context": session_context,
    "seri.session.search": session_search,
    "seri.session.rename": session_rename,
    "seri.session.delete": session_delete,
    "seri.session.model": session_model,
    "seri.session.export": session_export,
    "seri.session.import": session_import,
    "seri.prompt": prompt,
    "seri.compact": compact,
    "seri.clear": clear,
    "seri.rewind": rewind,
    "seri.checkpoints": checkpoints,
    "seri.maxTurns": max_turns,
    "seri.cancel": cancel,
    "seri.tool.stop": tool_stop,
    "seri.trajectory": trajectory,
    "seri.trajectory.get": trajectory_get,
    "seri.legacy.import": legacy_import,
    "seri.info": info,
    "seri.mcp.restart": mcp_restart,
    "seri.mcp.consent": mcp_consent,
    "seri.models": models,
    "seri.code.merge": code_merge,
    "seri.commands": commands,
}


def setup(server: LanguageServer) -> None:
    """Register every command with error translation around it."""
    for name, handler in COMMANDS.items():
        server.command(name)(_translated(name, handler))


def _translated(name: str, handler: Handler) -> Callable[..., Awaitable[dict[str, Any]]]:
    # Annotations stay resolvable at run time: pygls reads them to map arguments.
    async def run(ls: Any, *arguments: Any) -> dict[str, Any]:
        engine = await ls.ready()  # the SeriServer's engine, once start-up has finished
        try:
            faults.fail_point(f"command.{name}")
            # The engine's typed answer in the contract's JSON, in one place.
            return to_wire(await handler(engine, single_object(name, arguments)))
        except InvalidArgument as exc:
            raise JsonRpcInvalidParams(message=str(exc), data={"field": exc.field}) from exc
        except SeriError as exc:
            raise JsonRpcException(message=str(exc), code=REQUEST_FAILED) from exc
        except JsonRpcException:
            raise
        except Exception as exc:
            words = store_failure_message(exc, engine.profile_root)
            if words is not None:  # the disk, not seri: a refusal, logged in one line
                raise JsonRpcException(message=words, code=REQUEST_FAILED) from exc
            # A bug: the protocol logs it with its traceback.
            raise JsonRpcInternalError(message=f"{name} failed: {exc}") from exc

    run.__name__ = name.replace(".", "_")
    return run
