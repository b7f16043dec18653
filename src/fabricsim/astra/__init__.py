"""ASTRA-sim 2.x compatibility: readers for its input files (network YAML, system JSON,
communicator groups, remote memory) and, built on them, runs of the same inputs in fabricsim."""
