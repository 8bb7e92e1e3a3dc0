"""The parts of benchmarks/results_claims.py, one concept a module: what the judging words
rest on (judging), the committed figures it reads (data) and the runs it makes itself (runs),
the page's ways of writing them (words), and one module per generated block or group of
claims-table rows. Imported as the top-level package `claims`, since the scripts run with
benchmarks/ on sys.path."""
