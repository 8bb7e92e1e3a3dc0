"""embsim: a discrete-event GPU-cluster simulator for embedding-heavy training."""

__version__ = "0.1.0"
