"""The CLI's error: one line for the user."""


class CliError(Exception):
    """A user-facing error: printed as one line."""
