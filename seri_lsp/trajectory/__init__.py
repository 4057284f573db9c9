"""Trajectories (`/trajectory`): recording a run, the on/off toggle and retention, views.

May depend on the context's prompt, the store, events, host and settings: never on the agent.
"""
