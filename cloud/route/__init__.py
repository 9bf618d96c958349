"""Which back-end answers within T_max: the pure routing choice, the lanes that run it, first and final answers."""
