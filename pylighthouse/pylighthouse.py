"""The import path documented since 0.2.0: ``import pylighthouse.pylighthouse as lighthouse``.

It re-exports the public names of :mod:`pylighthouse`, and 0.2.0's
``LighthouseRubricException`` (see
:class:`pylighthouse.errors.LighthouseRubricException`).
"""
import pylighthouse
from . import *  # noqa: F401,F403
from .errors import LighthouseRubricException  # noqa: F401

__all__ = ["LighthouseRubricException"]
__all__ += pylighthouse.__all__
del pylighthouse
