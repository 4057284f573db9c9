"""The language-server face: SPEC section 7 over pygls, translated into engine calls.

May depend on the engine and everything below it; the only package that imports pygls/lsprotocol.
"""
