"""The one exception type that means "the user gave us bad input".

The CLI turns it into a one-line message and exit status 2, with no traceback.
Messages name the file, key or flag and, for YAML files, the line.
"""


class InputError(Exception):
    """Bad user input: a file, key, flag or value that cannot be used."""
