"""Reporters: the JSON report, report files by format, GitHub output and the terminal."""
