from . import mixer_transformer  # noqa: F401  (registers the model first)
from . import architectures  # noqa: F401,E402
