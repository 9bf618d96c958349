"""Learned suppressions: from benign verdicts at one place on a camera to a rule the device applies itself
(cloud.suppress.learner proposes, cloud.suppress.store keeps, cloud.suppress.publish sends, cloud.suppress.api
shows and decides). The rule itself lives in shared.suppression."""
