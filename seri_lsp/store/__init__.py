"""The durable record: seri.db, migrations, sessions, messages, checkpoints, the legacy import.

May depend on the shared top-level modules (errors, faults) only: never context, agent or engine.
"""
