"""openenv_train: turn isolated agent environments into training data and trained models.

Importing the package has no side effects and loads no heavy dependency; the public
API lives in the subpackages (``openenv_train.core``, ``.server``, ``.client``, ``.envs``).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
