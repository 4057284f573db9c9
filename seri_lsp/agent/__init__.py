"""Acting: tasks and their loop, provider, tools, workspace, cancel, checkpoints, rewind, checks.

May depend on the context, the store, events, host and settings: never on the engine or a face.
"""
