"""Reports: human tables, JSON, Chrome traces and plots of simulation results."""
