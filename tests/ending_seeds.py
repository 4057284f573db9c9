"""A session whose turns ended every way a turn can end short, stored as the server
stores them, for the editors' tests of a reopened chat: a prompt that failed (nothing
after it), a reply that was cancelled, and a turn still running when its server was
killed (the next server to open the session finds it interrupted)."""

from __future__ import annotations

from pathlib import Path

from seri_lsp.profile import DB_NAME
from seri_lsp.store.database import Database
from seri_lsp.store.messages import Message
from seri_lsp.store.sessions import SessionStore

ENDINGS = {
    "failedPrompt": "first: this one fails",
    "failedError": "The provider answered HTTP 400: model not found: gpt-9",
    "cancelledPrompt": "second: this one is cancelled",
    "cancelledReply": "The first words arri",
    "cutPrompt": "third: this one is cut off",
    "cutReply": "Half of a sentence and then",
}


def seed_turn_endings(profile: Path, workspace: Path) -> str:
    """Store the session (the project's latest) and return its id."""
    profile.mkdir(parents=True, exist_ok=True)
    db = Database.open(profile / DB_NAME)
    try:
        store = SessionStore(db)
        session = store.create(str(workspace)).id

        def prompt(text: str) -> None:
            store.write_step(session, [Message(role="user", content=text)], turn_starts=True)

        prompt(ENDINGS["failedPrompt"])
        store.end_turn(session, "failed", ENDINGS["failedError"])
        prompt(ENDINGS["cancelledPrompt"])
        store.append(session, Message(role="assistant", content=ENDINGS["cancelledReply"]))
        store.end_turn(session, "cancelled", "Cancelled by the user.")
        prompt(ENDINGS["cutPrompt"])
        store.append(session, Message(role="assistant", content=ENDINGS["cutReply"]))
        # No end: the process that ran this turn died.
        return session
    finally:
        db.close()
