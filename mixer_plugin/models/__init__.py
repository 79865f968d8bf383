"""The fairseq models around the mixers (``mixer_transformer``, the classifier, fairseq's
LightConv as a peer) and a named architecture for every row of the papers' tables.

Importing registers them with fairseq, in the order fairseq needs: the model before its named
architectures."""

# isort: off
from . import mixer_transformer  # noqa: F401
from . import architectures  # noqa: F401
from . import mixer_classifier  # noqa: F401  (the sentence_prediction classifier)
from . import lightconv  # noqa: F401  (fairseq's LightConv / DynamicConv, the leaderboard's peers)
# isort: on
