"""The one exception type that means "the user gave us bad input".

The CLI turns it into a one-line message and exit status 2, with no traceback.
Messages name the file, key or flag and, for YAML files, the line.
"""


def one_line(text: str) -> str:
    """`text` as one printable line: a newline or control character that a message quotes
    from the input (a profile's range name, a flag's value) is shown escaped, not obeyed."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


class InputError(Exception):
    """Bad user input: a file, key, flag or value that cannot be used."""


class ModelNotSupported(InputError):
    """A strategy that cannot run this model at all (a parallelism or option the strategy
    does not compose with, e.g. --tensor-parallel with embrace): `simulate` reports it like any bad input; `compare`, which runs every
    strategy, lists the combination as refused with this reason."""
