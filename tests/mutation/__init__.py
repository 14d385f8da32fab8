"""Mutation testing of the core modules: ``python -m tests.mutation`` (see __main__)."""
