"""The training-step simulation: context, step plan, SimPy engine, metrics, run facade."""
