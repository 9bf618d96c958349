"""What the operator teaches: feedback on verdicts, automatic thresholds, the dataset export, learned suppressions."""
