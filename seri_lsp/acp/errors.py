"""seri's errors as ACP (JSON-RPC) errors, in the user's words.

A missing or mistyped argument (an unknown session id included) answers Invalid params
(-32602) with the field in `data.field`; a request that cannot be carried out (a session
open in another seri process, a task already running, a store that cannot be used)
answers Internal error (-32603) with the reason as the message and `data.reason`. The
SDK itself answers malformed params (-32602) and unknown methods (-32601).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from acp import RequestError

from seri_lsp.errors import Busy, InvalidArgument, SeriError, SessionHeld, StoreBusy
from seri_lsp.store.database import StoreError

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


@contextmanager
def acp_errors() -> Iterator[None]:
    """Translate seri's errors raised in the block into ACP errors."""
    try:
        yield
    except InvalidArgument as exc:
        raise RequestError(INVALID_PARAMS, str(exc), {"field": exc.field}) from exc
    except SessionHeld as exc:
        data = {"reason": "sessionHeld", "sessionId": exc.session_id, "holder": exc.holder}
        raise RequestError(INTERNAL_ERROR, str(exc), data) from exc
    except Busy as exc:
        raise RequestError(INTERNAL_ERROR, str(exc), {"reason": "busy"}) from exc
    except StoreBusy as exc:
        raise RequestError(INTERNAL_ERROR, str(exc), {"reason": "storeBusy"}) from exc
    except SeriError as exc:
        raise RequestError(INTERNAL_ERROR, str(exc), {"reason": "failed"}) from exc
    except (StoreError, OSError) as exc:
        message = f"seri cannot use its store: {exc}"
        raise RequestError(INTERNAL_ERROR, message, {"reason": "store"}) from exc
