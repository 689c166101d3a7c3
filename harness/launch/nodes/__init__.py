"""A run across machines on TensorFlow's cluster runtime: the chief, the run lease every task joins, the tasks of TF_CONFIG and Slurm, and what the scheduler says."""
