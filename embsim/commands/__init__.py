"""Click commands, one module each, each defining one click command (or group) named
`command`; embsim.cli assembles them. Adding a command means adding a module and
naming it in embsim/cli.py."""
