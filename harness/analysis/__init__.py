"""Statistics and rendering over result rows, in five rooms, each using only those below it:
pages; versions and scale; comparisons; run."""
