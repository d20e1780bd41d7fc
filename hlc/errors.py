"""The exceptions that mean "the user must fix something", for the command line.

Library code raises these; only :func:`hlc.cli.main` turns them into a
message and exit status 2.  Anything else is a bug and keeps its traceback.
"""

from hlc.calibrate.run import ProfileError
from hlc.compile import CompileError
from hlc.dispatch.build import BuildError
from hlc.language.errors import HLError
from hlc.model.fit import FitError

USER_ERRORS = (HLError, ProfileError, CompileError, FitError, BuildError)
