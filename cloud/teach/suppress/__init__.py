"""Learned suppressions: from benign verdicts at one place on a camera to a rule the device applies itself
(learner.py proposes, store.py keeps, publish.py sends, api.py shows and decides). The rule itself lives in
shared.suppression."""
