"""Operator actions, once: the CLI and the console are two faces that parse input, call these and show
the result. Textual-free (tests/test_core_imports.py proves it); each module holds one operation family.
"""
