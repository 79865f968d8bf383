from . import (
    architectures,  # noqa: F401,E402
    mixer_classifier,  # noqa: F401,E402  (the sentence_prediction classifier)
    mixer_transformer,  # noqa: F401  (registers the model first)
)
