"""``python -m pylighthouse``: the same as the ``pylighthouse`` command."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
