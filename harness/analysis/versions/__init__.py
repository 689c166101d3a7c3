"""Builds compared: A/B pairs, the nightly series and bisect's steps, their texts, figures and pages."""
