"""Paper reproductions: configs in `configs/`, one module per paper, run by `fabricsim reproduce`."""
