def numpy_constant(x):
    w = np.ones((3,), np.float32) * 2
    return x * w
