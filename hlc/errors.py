"""The base of the exceptions that mean "the user must fix something".

Library code raises subclasses of :class:`UserError` (a description that does
not check, a build that cannot be made as asked, a source that does not
compile, samples that cannot be fitted); only :func:`hlc.cli.main` turns them
into a message and exit status 2.  Anything else is a bug and keeps its
traceback.  This module imports nothing, so that catching these errors costs
the command line no import of the stages that raise them.
"""


class UserError(Exception):
    """An error in what the user gave hlc, reported without a traceback."""
