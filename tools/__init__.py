"""What developers run, not the suite: ``reference`` (the generated docs pages) and the Slurm
scripts that make a cluster on one machine."""
