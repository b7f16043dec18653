"""Reports: tables, traces and plots."""
