"""A group's live instance: its members taking turns, each cell's step breakdown after the turns, and a run's journal read back to resume it."""
