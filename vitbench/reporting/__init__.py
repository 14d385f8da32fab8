"""Presentation: formatting of records as tables, CSV, JSON and markdown; plots; reports."""
