"""Runs, next, rollback and the supervisor; built-in actions live in `engine.builtins`."""
