"""The import path documented since 0.2.0: ``import pylighthouse.pylighthouse as lighthouse``.

It re-exports the public names of :mod:`pylighthouse`; nothing lives here.
"""
import pylighthouse
from . import *  # noqa: F401,F403

__all__ = []
__all__ += pylighthouse.__all__
del pylighthouse
