"""What the device decides about an event: the rules (local, cached, escalate), the device verdict cache and
the track gallery that feeds it, on the device's local clock. Reads vision's events; imports shared/ and
vision/."""
