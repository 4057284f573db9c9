"""What the model sees: the open conversation, compaction, the recap, pairing, the frozen prompt.

May depend on the store, events, host and settings: never on the agent, the engine or a face.
"""
