"""Design-space sweeps: a base config and axes -> points, run on a process pool or Dask, results in Parquet."""
