"""Stage 2: auto-calibration — profiling programs, robust timing, running them."""
