"""Where the repository is: notebooks/, results/, figures/ and build/ sit beside course/.

Its own module, importing nothing, so the lowest layer can ask for it (`course.runtime`
records results under it) without reaching up to the package's face, which imports that
layer; `course.ROOT` hands the same path on.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
