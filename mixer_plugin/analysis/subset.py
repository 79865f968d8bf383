"""A checkpoint and a data subset, loaded as the analyses read them."""

from typing import Any, Dict, List, Tuple

from torch import nn


def load_subset(
    checkpoint: str, data: str, subset: str, max_sentences: int, batch_size: int
) -> Tuple[nn.Module, Any, List[Dict[str, Any]]]:
    """(the model, its task, the first ``max_sentences`` of ``subset`` in batches of
    ``batch_size``, collated as fairseq collates them)."""
    from fairseq import checkpoint_utils

    import mixer_plugin  # noqa: F401  (registers the model, as --user-dir would)

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([checkpoint], arg_overrides={"data": data})
    task.load_dataset(subset)
    dataset = task.dataset(subset)
    n = min(max_sentences, len(dataset))
    batches = [
        dataset.collater([dataset[i] for i in range(start, min(n, start + batch_size))])
        for start in range(0, n, batch_size)
    ]
    return models[0], task, batches
