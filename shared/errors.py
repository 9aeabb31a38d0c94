"""The project's base exception.

Every error a user can cause (bad configuration, a busy port, a missing tool, an undecodable record)
derives from :class:`MeshError`, whose message says what is wrong and what to do. The CLI prints
such errors as one line and exits non-zero; anything else is a bug and keeps its stack trace.
"""


class MeshError(Exception):
    """A failure with a message meant for the user: what is wrong and how to fix it."""


class ConfigError(MeshError):
    """A setting (environment variable, file, CLI argument) has an unusable value."""
