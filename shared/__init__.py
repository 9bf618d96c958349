"""What the device and the cloud both speak: topics, messages, limits, ids, config helpers.

This package imports nothing else of edgetriage's, and nothing heavier than numpy, msgpack and pydantic.
"""
