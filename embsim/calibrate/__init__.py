"""Real-kernel calibration: runs PyTorch on this machine (CUDA + NCCL or CPU + gloo) and
writes an embsim trace. The simulator never imports this package (it needs torch)."""
