"""Acting: tasks and their loop, provider, tools, workspace boundary, cancel, checkpoints, rewind.

May depend on the context, the store, events, host and settings: never on the engine or a face.
"""
