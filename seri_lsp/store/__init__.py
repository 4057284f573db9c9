"""The durable record: seri.db, migrations, sessions, messages, checkpoints, recordings, legacy.

May depend on the shared top-level modules (errors, faults, limits) only: never context or above.
"""
