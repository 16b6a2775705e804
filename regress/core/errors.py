"""The one exception a user's mistake becomes: the CLI prints it as one line and exits 2."""


class RegressError(Exception):
    """A problem the user can fix; the message names the thing and the fix."""
