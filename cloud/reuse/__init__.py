"""Answers given once, reused: the verdict cache and its reuse rules, single flight, trust (which site a device is
in, the keys the cloud computes itself), site offers, the site table and the per-device bounds."""
