"""A results store of runs across commits (Parquet, queried with DuckDB) and the history page drawn from it."""
