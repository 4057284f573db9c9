"""TLS for the provider's HTTP client: the one place seri builds an SSL context.

It opens no socket and no TLS session: httpx does both. It only says what httpx's
connections trust, as httpx documents it (an `ssl.SSLContext` given as `verify=`, made
by truststore for the system's store), and words the TLS errors httpx passes up.
httpx's own `create_ssl_context` trusts one of certifi, `SSL_CERT_FILE` or `SSL_CERT_DIR`
and not the system's store; seri trusts all of them together.

The operating system's trust store is used through truststore (as pip does), so a
company's authority installed in the system is trusted; certifi's bundle too (some
Pythons come with no system store), and the authorities `SSL_CERT_FILE` and
`SSL_CERT_DIR` name.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping


def tls_context(environ: Mapping[str, str] = os.environ) -> ssl.SSLContext:
    """TLS settings: the system's trust store, SSL_CERT_FILE / SSL_CERT_DIR, certifi."""
    import certifi
    import truststore

    context = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(certifi.where())
    cafile, capath = environ.get("SSL_CERT_FILE"), environ.get("SSL_CERT_DIR")
    if cafile and os.path.isfile(cafile):
        context.load_verify_locations(cafile=cafile)
    if capath and os.path.isdir(capath):
        context.load_verify_locations(capath=capath)
    return context


def tls_failure(cause: BaseException, where: str) -> str | None:
    """Why TLS with `where` failed, in words, when `cause` is a TLS error (else None)."""
    if isinstance(cause, ssl.SSLCertVerificationError):
        return (
            f"the TLS certificate of {where} is not trusted ({cause.verify_message}); if your "
            "organisation signs it, install its authority in the system's certificate store "
            "or point SSL_CERT_FILE at it"
        )
    if isinstance(cause, ssl.SSLError):
        return f"TLS with {where} failed ({cause.reason or cause})"
    return None
