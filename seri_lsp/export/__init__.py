"""Sessions carried out and back in: JSON bundles, Markdown transcripts, import, redaction.

May depend on the store and the shared modules: never on the context, the agent or a face.
"""
