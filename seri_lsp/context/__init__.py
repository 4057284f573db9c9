"""What the model sees: the open conversation, compaction, recap, pairing, prompt, recordings.

May depend on the store, events, host and settings: never on the agent, the engine or a face.
"""
