"""What one camera sees: frames, motion, the detector, tracks, closer looks, the classifier, and the events
the vision pipeline hands out (`pipeline.VisionPipeline`). Imports shared/ only."""
