"""Recording runs (trajectories): one recording per session opened in a process.

When a session opens (a subagent's child session included) and recording is on, a
recording starts with a header: the settings in force (model, base URL without
credentials, every sampling knob, the provider pin, reasoning effort, the window and the
budgets) and the sha256 of every prompt file. From then on every
`Conversation.record_event(kind, data)` appends an event to it, numbered in order.
Any value over `elideBytes` (a string's UTF-8 bytes, or the JSON of anything else) is
stored as `{"elided": true, "originalBytes": N}`. Nothing ever deletes events when
messages leave the conversation (compaction, rewind): the recording stands apart.

Recording off (see `toggle`): nothing is written to the recording tables.
The toggle is read when a session opens, and a change made with `/trajectory on|off`
(or `seri.trajectory`) applies at once to the open session: off stops its recording,
on starts a new one.

Retention runs at every session open: recordings of a session whose newest record is
older than the window go (the session's conversation never does), and so do legacy
`trajectories/*.jsonl` files older than the window; what was pruned goes to the log.
A recording in progress (here, or in another live seri process) is never pruned.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import sqlite3
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from seri_lsp import __version__
from seri_lsp.context.prompt_files import FrozenPrompt
from seri_lsp.errors import InvalidArgument
from seri_lsp.host import Host
from seri_lsp.settings import SAMPLING_KNOBS, Settings
from seri_lsp.store.database import utc_now
from seri_lsp.store.locks import SessionLocks
from seri_lsp.store.sessions import SessionStore
from seri_lsp.store.trajectories import (
    PruneReport,
    Trajectory,
    TrajectoryStore,
    cutoff_for,
    prune_legacy_files,
    write_events,
)
from seri_lsp.store.worker import Worker
from seri_lsp.trajectory.toggle import (
    TrajectoryToggle,
    read_toggle,
    retention_days,
    store_toggle,
)

logger = logging.getLogger(__name__)

HEADER_FORMAT = 1
# Query parameters of the base URL whose names contain one of these are credentials.
_SECRET_PARTS = ("key", "token", "secret", "pass", "auth", "sig", "credential")
# How many pruned items the log names before it only counts.
_LOG_NAMES = 10
# An event numbered in its recording and elided: (seq, kind, data).
Numbered = tuple[int, str, dict[str, Any]]


# --- elision ----------------------------------------------------------------------------


def elided(size: int) -> dict[str, Any]:
    """The marker stored in place of a value too large to record."""
    return {"elided": True, "originalBytes": size}


def value_bytes(value: Any) -> int:
    """A value's size: a string's UTF-8 bytes, else the UTF-8 bytes of its JSON text
    (`json.dumps` with its default separators, non-ASCII characters as themselves)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    text = json.dumps(value, ensure_ascii=False, default=str)
    return len(text.encode("utf-8", "surrogatepass"))


def size_bound(value: Any) -> float:
    """An upper bound of `value_bytes(value)` that costs no encoding (inf: unknown).

    A character takes at most 4 UTF-8 bytes, and at most 6 in JSON (`\\u001f`); a key
    and its value add at most 6 (the quotes of a key that is no string, the colon and
    the separator with their spaces) and a container its brackets.
    """
    if isinstance(value, str):
        return 6 * len(value) + 2
    if value is None or isinstance(value, bool):
        return 5
    if isinstance(value, int):
        return len(str(value)) if abs(value) < 10**30 else float("inf")
    if isinstance(value, float):
        return 32
    if isinstance(value, dict):
        return 2 + sum(size_bound(k) + size_bound(v) + 6 for k, v in value.items())
    if isinstance(value, list | tuple):
        return 2 + sum(size_bound(item) + 2 for item in value)
    return float("inf")


def elide_value(value: Any, limit: int) -> Any:
    """`value` with every part over `limit` bytes replaced by an elision marker.

    Objects and lists are elided from the inside out: their large members first, and
    the container itself only when it is still over the limit after that, so a tool
    call's small `path` survives its large `content`.
    """
    if size_bound(value) <= limit:
        return value  # no part of it can be over the limit: nothing to measure
    if isinstance(value, str):
        size = value_bytes(value)
        return elided(size) if size > limit else value
    if isinstance(value, dict):
        inner: Any = {key: elide_value(item, limit) for key, item in value.items()}
    elif isinstance(value, list | tuple):
        inner = [elide_value(item, limit) for item in value]
    else:
        inner = value
    if value_bytes(inner) > limit:
        return elided(value_bytes(value))
    return inner


def elide_event(data: dict[str, Any], limit: int) -> dict[str, Any]:
    """An event's data with each of its values elided as `elide_value` does."""
    return {key: elide_value(value, limit) for key, value in data.items()}


# --- the header -------------------------------------------------------------------------


def public_url(url: str) -> str:
    """The base URL without credentials: no user:password, no key-like query values."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(not a valid URL)"
    netloc = parts.netloc.rpartition("@")[2]
    query = [
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if not any(part in name.lower() for part in _SECRET_PARTS)
    ]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), ""))


def build_header(
    settings: Settings,
    *,
    session_id: str,
    project: str,
    reason: str,
    frozen: FrozenPrompt,
    max_turns: int,
    context_window: int | None,
    parent_id: str | None = None,
) -> dict[str, Any]:
    """What was in force when a recording started, so two runs can be compared."""
    provider = settings.provider
    return {
        "format": HEADER_FORMAT,
        "trajectoryId": str(uuid.uuid4()),
        "seriVersion": __version__,
        "sessionId": session_id,
        "parentSessionId": parent_id,
        "project": project,
        "reason": reason,
        "startedAt": utc_now(),
        "model": provider.model,
        "baseUrl": public_url(provider.base_url),
        "sampling": {name: provider.sampling.get(field) for name, field in SAMPLING_KNOBS.items()},
        "providerPin": provider.provider,
        "reasoningEffort": provider.reasoning_effort,
        "contextWindow": context_window,
        "keepTokens": provider.keep_tokens,
        "elideBytes": provider.elide_bytes,
        "maxTurns": max_turns,
        "stream": provider.stream,
        "permissions": {"write": settings.write_permission, "run": settings.run_permission},
        "checks": [check.to_json() for check in settings.checks],
        "promptFiles": frozen.hashes(),
    }


# --- one recording ----------------------------------------------------------------------


class Recorder:
    """Appends the events of one recording in progress."""

    def __init__(
        self,
        store: TrajectoryStore,
        io: Worker,
        *,
        trajectory_id: str,
        session_id: str,
        header: dict[str, Any],
        elide_bytes: int,
    ) -> None:
        self.store = store
        self.io = io
        self.trajectory_id = trajectory_id
        self.session_id = session_id
        self.header = header
        self.elide_bytes = elide_bytes
        self._seq = 0

    async def record(self, kind: str, data: dict[str, Any]) -> None:
        """Append one event (numbered now, so events keep the order they were made in)."""
        seq, kind, value = self.number(kind, data)
        await self.io(
            self.store.append, self.trajectory_id, self.session_id, self.header, seq, kind, value
        )

    def number(self, kind: str, data: dict[str, Any]) -> Numbered:
        """An event numbered now and elided, to be written with a step (`writer`)."""
        self._seq += 1
        return self._seq, kind, elide_event(data, self.elide_bytes)

    def writer(self, events: Sequence[Numbered]) -> Callable[[sqlite3.Connection], None]:
        """What writes numbered events inside a step's transaction (on the database
        thread), so they commit with the step's messages."""
        return functools.partial(
            write_events,
            trajectory_id=self.trajectory_id,
            session_id=self.session_id,
            header=self.header,
            events=events,
        )

    async def note_context_window(self, window: int) -> None:
        """Fill in the window when it became known only after the start (from the
        provider's model list, asked before the first model call)."""
        if self.header.get("contextWindow") is None:
            self.header = {**self.header, "contextWindow": window}
            await self.io(self.store.update_header, self.trajectory_id, self.header)


# --- the recordings of one process ------------------------------------------------------


class Recordings:
    """Starts and ends this process's recordings, applies the toggle and retention."""

    def __init__(
        self,
        *,
        store: TrajectoryStore,
        sessions: SessionStore,
        io: Worker,
        host: Host,
        profile_root: Path,
        settings: Settings,
        locks: SessionLocks,
        known_context_window: Callable[[], int | None],
        env: Mapping[str, str] = os.environ,
    ) -> None:
        self.store = store
        self.sessions = sessions
        self.io = io
        self.host = host
        self.profile_root = profile_root
        self.settings = settings
        self.locks = locks
        self.known_context_window = known_context_window
        self.env = env
        # Recordings in progress in this process: recording id -> session id.
        self._active: dict[str, str] = {}
        self._warned: set[str] = set()

    # --- the toggle -----------------------------------------------------------------

    async def toggle(self) -> TrajectoryToggle:
        """The toggle as it stands now (the environment is read again every time)."""
        return await self.io(read_toggle, self.profile_root, self.env)

    async def answer(
        self, enabled: bool | None, conversation: Any | None, max_turns: int | None
    ) -> dict[str, Any]:
        """`/trajectory [on|off]` and `seri.trajectory {enabled?}`: the toggle (stored and
        applied first when `enabled` is given), with a sentence for the user."""
        if enabled is None:
            toggle = await self.toggle()
        else:
            toggle = await self.set_enabled(enabled, conversation, max_turns)
        message = toggle.describe()
        if enabled is not None and conversation is not None:
            recording = conversation.recorder is not None
            message += f" The open session is {'' if recording else 'not '}being recorded."
        return {**toggle.to_wire(), "message": message}

    async def set_enabled(
        self, enabled: bool, conversation: Any | None, max_turns: int | None
    ) -> TrajectoryToggle:
        """Store the toggle in config.json and apply what is now in force, at once."""
        toggle = await self.io(store_toggle, self.profile_root, enabled, self.env)
        if conversation is not None:
            if toggle.enabled and conversation.recorder is None:
                assert max_turns is not None
                await self._begin(conversation, "toggled", max_turns, None)
            elif not toggle.enabled and conversation.recorder is not None:
                self.finish(conversation)
                conversation.recorder = None
        return toggle

    # --- starting and ending ------------------------------------------------------------

    async def start(
        self,
        conversation: Any,
        *,
        reason: str,
        max_turns: int,
        parent_id: str | None = None,
    ) -> None:
        """Begin the conversation's recording if recording is on (the toggle is read now)."""
        toggle = await self.toggle()
        # A bad value is worth telling; the override is what the user asked for, and an
        # unreadable config.json was reported with the settings.
        self._warn(toggle.notices)
        if not toggle.enabled:
            conversation.recorder = None
            return
        await self._begin(conversation, reason, max_turns, parent_id)

    async def _begin(
        self, conversation: Any, reason: str, max_turns: int, parent_id: str | None
    ) -> None:
        settings = self.settings
        chosen = getattr(conversation.info, "model", None)
        if chosen:
            # The session's own model (`seri.session.model`), not the setting's.
            provider = dataclasses.replace(settings.provider, model=chosen)
            settings = dataclasses.replace(settings, provider=provider)
        header = build_header(
            settings,
            session_id=conversation.session_id,
            project=conversation.info.project,
            reason=reason,
            frozen=conversation.frozen,
            max_turns=max_turns,
            context_window=self.known_context_window(),
            parent_id=parent_id,
        )
        trajectory_id = await self.io(self.store.start, conversation.session_id, header)
        self._active[trajectory_id] = conversation.session_id
        conversation.recorder = Recorder(
            self.store,
            self.io,
            trajectory_id=trajectory_id,
            session_id=conversation.session_id,
            header=header,
            elide_bytes=self.settings.provider.elide_bytes,
        )

    def finish(self, conversation: Any) -> None:
        """The conversation's recording is no longer in progress (its session closed)."""
        recorder = getattr(conversation, "recorder", None)
        if recorder is not None:
            self._active.pop(recorder.trajectory_id, None)

    # --- retention ------------------------------------------------------------------

    async def prune(self) -> PruneReport:
        """Apply the retention window; never fails the session open that runs it."""
        days, warning = retention_days(self.env)
        if warning:
            self._warn((warning,))
        active = dict(self._active)
        try:
            report = await self.io(self._prune, days, active)
        except Exception as exc:
            logger.exception("Trajectory retention failed")
            self.host.log("warning", f"Trajectory retention failed: {exc}")
            return PruneReport()
        if report:
            self.host.log("info", _describe_pruned(report, days))
        return report

    def _prune(self, days: float, active: dict[str, str]) -> PruneReport:
        report = PruneReport()
        candidates = self.store.prune_candidates(
            None if days == 0 else cutoff_for(days), keep=active.keys()
        )
        # The session being recorded is never pruned, however old its records (with a
        # window of 0 days too), nor one another seri process has open.
        protected = self.locks.open_elsewhere(candidates) | set(active.values())
        doomed = [
            (trajectory_id, session)
            for session, ids in candidates.items()
            if session not in protected
            for trajectory_id in ids
        ]
        self.store.delete(trajectory_id for trajectory_id, _ in doomed)
        report.recordings = doomed
        prune_legacy_files(self.profile_root, days, report)
        return report

    # --- reading ----------------------------------------------------------------------

    async def get(
        self,
        *,
        session_id: str | None,
        trajectory_id: str | None,
        conversation: Any | None,
        compacted: bool = False,
    ) -> Trajectory:
        """A recording with its events: a given one, a session's latest, or the open
        session's (its recording in progress when there is one). `compacted` (without
        `trajectory_id`): the session's events up to its latest compaction, from every
        recording that holds them (`TrajectoryStore.before_compaction`)."""
        if trajectory_id is not None and compacted:
            raise InvalidArgument(
                "compacted", "compacted picks a session's record: give sessionId, not trajectoryId"
            )
        if compacted:
            return await self._before_compaction(session_id, conversation)
        if trajectory_id is not None:
            chosen = await self.io(self.store.resolve, trajectory_id)
        else:
            if session_id is not None:
                session: str | None = (await self.io(self.sessions.resolve, session_id)).id
            else:
                session = conversation.session_id if conversation is not None else None
            recorder = getattr(conversation, "recorder", None)
            if (
                recorder is not None
                and conversation is not None
                and conversation.session_id == session
            ):
                latest = recorder.trajectory_id
            elif session is not None:
                latest = await self.io(self.store.latest_of, session)
            else:
                latest = None
            if latest is None:
                return _nothing_recorded(session)
            chosen = latest
        return await self._trajectory(chosen, await self.io(self.store.events, chosen))

    async def _before_compaction(
        self, session_id: str | None, conversation: Any | None
    ) -> Trajectory:
        if session_id is not None:
            session: str | None = (await self.io(self.sessions.resolve, session_id)).id
        else:
            session = conversation.session_id if conversation is not None else None
        found = await self.io(self.store.before_compaction, session) if session else None
        if found is not None:
            return await self._trajectory(*found)
        if session is None:
            return _nothing_recorded(session)
        # A fork holds copies of its source's messages, not its recordings: the record of
        # a compaction it copied is its source's (or that one's source's).
        asked, current, seen = session, session, {session}
        for _ in range(MAX_FORK_HOPS):
            source = (await self.io(self.sessions.resolve, current)).forked_from
            if source is None or source in seen:
                break
            seen.add(source)
            found = await self.io(self.store.before_compaction, source)
            if found is not None:
                record = await self._trajectory(*found)
                return dataclasses.replace(
                    record,
                    note=(
                        f"Session {asked} is a fork of {source}; the turns compacted before "
                        f"the fork were recorded in {source}, shown here (up to its latest "
                        "compaction)."
                    ),
                )
            current = source
        if await self.io(self.sessions.is_imported, asked):
            return dataclasses.replace(
                _nothing_recorded(asked),
                note=(
                    f"Session {asked} was imported from a bundle, which holds no recordings: "
                    "the record of its compacted turns stays in the profile that exported "
                    "it (seri-lsp trajectory list there)."
                ),
            )
        return _nothing_recorded(asked)

    async def _trajectory(self, chosen: str, events: list[Any]) -> Trajectory:
        """Recording `chosen` with `events`, and the other recordings of its session."""
        info = await self.io(self.store.info, chosen)
        assert info is not None
        siblings = await self.io(self.store.recordings, info.session_id)
        return Trajectory(
            id=info.id,
            session_id=info.session_id,
            started_at=info.started_at,
            updated_at=info.updated_at,
            recording=chosen in self._active,
            header=info.header,
            events=events,
            recordings=siblings,
        )

    # --- telling the user -----------------------------------------------------------

    def _warn(self, warnings: tuple[str, ...]) -> None:
        """Each warning once per process: in the log and to the user."""
        for warning in warnings:
            if warning in self._warned:
                continue
            self._warned.add(warning)
            self.host.log("warning", warning)
            self.host.show("warning", f"seri: {warning}")


def _describe_pruned(report: PruneReport, days: float) -> str:
    window = f"{days:g} day{'s' if days != 1 else ''}"
    parts = []
    if report.recordings:
        sessions = sorted({session for _, session in report.recordings})
        parts.append(
            f"deleted {len(report.recordings)} recording(s) of {len(sessions)} session(s) from "
            f"seri.db (sessions {_names(sessions)}; their conversations are kept)"
        )
    if report.files:
        names = [os.path.basename(path) for path in report.files]
        parts.append(f"deleted {len(names)} legacy trajectory file(s) ({_names(names)})")
    if report.failed_files:
        parts.append(f"could not delete {_names(report.failed_files)}")
    return f"Trajectory retention ({window}): " + "; ".join(parts) + "."


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:_LOG_NAMES])
    if len(items) > _LOG_NAMES:
        shown += f" and {len(items) - _LOG_NAMES} more"
    return shown


# How many forks back a compaction's record is looked for.
MAX_FORK_HOPS = 50


def _nothing_recorded(session_id: str | None) -> Trajectory:
    """The answer for a session with no recording (or none of what was asked)."""
    return Trajectory(
        id=None,
        session_id=session_id,
        recording=False,
        header=None,
        events=[],
        recordings=[],
    )
