"""Neural-network layers (PyTorch/Paddle style) over the runtime's ops."""
