"""What the model sees: the open conversation, compaction, recap, pairing, prompt, reports.

May depend on the store, events, host, settings and trajectory: never on the agent or a face.
"""
