"""edgetriage."""
