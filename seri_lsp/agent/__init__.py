"""Acting: the task runner and loop, the provider, tools, the workspace boundary, cancellation.

May depend on the context, the store, events, host and settings: never on the engine or a face.
"""
