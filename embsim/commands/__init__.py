"""Click commands, one module each; cli.py only assembles them.

Each module defines one click command (or group) named `command`. Adding a command
means adding a module and one line in COMMAND_MODULES.
"""

COMMAND_MODULES = [
    "topology",
    "nccl_tests",
    "simulate",
    "compare",
    "calibrate",
    "validate",
    "import_profile",
    "import_nccl_tests",
    "sweep",
    "scale",
]
