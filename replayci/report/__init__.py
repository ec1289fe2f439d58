"""Reporters: each turns a RunResult into one output format."""
