"""Make stock fairseq run on today's stack.  Applied once, on import of the plugin.

1. torch >= 2.6 loads checkpoints with ``weights_only=True``.  fairseq checkpoints
   hold an ``argparse.Namespace`` (legacy ``cfg.model``), and a multi-rank resume
   broadcasts the loaded state (``torch.save``/``torch.load`` of a pickle), which
   holds omegaconf containers, the plain types their metadata refers to, and
   fairseq's ``_TensorPlaceholder``.  Exactly the globals those pickles name are
   allowlisted (see :func:`checkpoint_safe_globals`); weights_only stays on for
   everything else.
2. numpy 2 removed ``np.compat`` and ``np.percentile(interpolation=)``, which the
   translation dataset uses for ``--num-batch-buckets``.  The two fairseq call
   sites are pointed at working equivalents; numpy itself is not touched.
3. A training resumed after its first epoch did not continue as the one that never
   stopped (:func:`_resume_batches_as_started`).
4. ``--bf16`` implies ``--tpu`` in stock fairseq, so on a GPU (or a CPU) without
   torch_xla it fails at once (facebookresearch/fairseq#4696); and fairseq-generate,
   fairseq-interactive and the hub interface cast a model for ``--fp16`` but ignore
   ``--bf16`` (:func:`_bf16_without_a_tpu`).

Patches 1 and 2 check that they are needed, so on a fixed fairseq they do nothing.
"""

import argparse
import functools
import types
from typing import Any, Callable, List

import numpy as np
import torch

_applied = False


def checkpoint_safe_globals() -> List[Any]:
    """The globals a fairseq checkpoint (and its multi-rank broadcast) pickles:
    :func:`checkpoint_and_broadcast_globals` + :func:`eval_bleu_meter_globals`."""
    return checkpoint_and_broadcast_globals() + eval_bleu_meter_globals()


def checkpoint_and_broadcast_globals() -> List[Any]:
    """Found empirically (tests/test_ddp.py, tests/test_cli.py) with omegaconf 2.3 and
    fairseq 0.12.3: every GLOBAL in the pickles below, nothing else.

    * checkpoint file (``torch.save`` in fairseq.checkpoint_utils): only
      ``argparse.Namespace`` (``cfg["model"]``) is outside torch's defaults.
    * rank 0 -> other ranks on resume (fairseq.distributed.utils.broadcast_object):
      ``cfg`` is a DictConfig again by then, so the pickle also names
      DictConfig/ListConfig, their ContainerMetadata and the AnyNode leaves with
      their Metadata; that metadata refers to ``typing.Any`` (ref/key/element
      type), ``dict``/``list`` (object_type), ``int`` (a ListConfig's key_type)
      and holds a ``collections.defaultdict(dict)`` (resolver_cache); tensors
      travel separately, replaced by ``_TensorPlaceholder``.
    """
    import collections
    import typing

    from fairseq.distributed.utils import _TensorPlaceholder
    from omegaconf import DictConfig, ListConfig
    from omegaconf.base import ContainerMetadata, Metadata
    from omegaconf.nodes import AnyNode

    return [
        argparse.Namespace,
        DictConfig,
        ListConfig,
        ContainerMetadata,
        Metadata,
        AnyNode,
        typing.Any,
        dict,
        list,
        int,
        collections.defaultdict,
        _TensorPlaceholder,
    ]


def eval_bleu_meter_globals() -> List[Any]:
    """``--eval-bleu``: the validation meters saved in ``extra_state["metrics"]`` sum
    the BLEU n-gram counts and totals as int64 numpy arrays (found in the checkpoint
    of tests/test_fairseq_features.py): ndarray, numpy's ``_reconstruct``, ``dtype``
    and the int64 dtype class its unpickling builds."""
    int64_array = np.zeros(1, dtype=np.int64)
    return [
        np.ndarray,
        int64_array.__reduce__()[0],  # _reconstruct (numpy._core.multiarray in numpy 2)
        np.dtype,
        type(int64_array.dtype),  # numpy.dtypes.Int64DType
    ]


def _allowlist_checkpoint_classes() -> None:
    add = getattr(torch.serialization, "add_safe_globals", None)
    if add is not None:  # torch < 2.4 has no weights_only default to worry about
        add(checkpoint_safe_globals())


def _percentile_lower(values: np.ndarray, q: np.ndarray) -> np.ndarray:
    try:
        return np.percentile(values, q, method="lower")
    except TypeError:  # numpy < 1.22
        return np.percentile(values, q, interpolation="lower")


def get_buckets(sizes: np.ndarray, num_buckets: int) -> np.ndarray:
    """fairseq.data.data_utils.get_buckets without the removed numpy keyword."""
    return np.unique(_percentile_lower(sizes, np.linspace(0, 100, num_buckets + 1))[1:])


class _NumpyWithCompat(types.ModuleType):
    """numpy as seen by one fairseq module, plus the ``np.compat.long`` it uses."""

    compat = types.SimpleNamespace(long=np.int64)

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


def _fix_numpy2() -> None:
    import fairseq.data.bucket_pad_length_dataset as bucket_pad
    import fairseq.data.data_utils as data_utils
    import fairseq.data.language_pair_dataset as language_pair
    import fairseq.data.token_block_dataset as token_block

    try:
        np.percentile([1], [50], interpolation="lower")
    except TypeError:
        data_utils.get_buckets = get_buckets
        bucket_pad.get_buckets = get_buckets
    if not hasattr(np, "compat"):
        for module in (language_pair, token_block):
            if module.np is np:
                module.np = _NumpyWithCompat("numpy")


def _resume_batches_as_started() -> None:
    """fairseq builds a training set's batches once, in the process's first epoch, and
    reuses them for every later epoch (only their order is shuffled again, with seed +
    epoch): sentences of one length are shuffled with ``numpy_seed(seed + epoch)`` before
    the length sort, so the batches hold them in an order that depends on that epoch.
    A training that never stops builds them in epoch 1; one resumed in epoch E built
    them with seed + E, so from its first update on it trained on the same sentences
    grouped and ordered otherwise: another dropout pattern on each row, other float
    sums, other weights (a resume at update 24 of 60, in epoch 3: losses apart in the
    third decimal at once).  Built as in epoch 1 whatever the epoch it resumes in, a
    resumed training continues bit for bit (tests/test_cli.py and the runner's crash
    test, tests/test_runner_faults.py).  A training that starts at epoch 1 is untouched;
    so are batches fairseq rebuilds every epoch (``--update-epoch-batch-itr``,
    ``--rebuild-batches``, datasets that change with the epoch), which already depend on
    the epoch alone."""
    from fairseq.data import FairseqDataset
    from fairseq.data.iterators import EpochBatchIterator
    from fairseq.tasks import FairseqTask

    original = FairseqTask.get_batch_iterator
    if getattr(original, "built_as_in_epoch_1", False):
        return

    @functools.wraps(original)
    def get_batch_iterator(
        self: FairseqTask, dataset: FairseqDataset, *args, epoch: int = 1, **kwargs
    ) -> EpochBatchIterator:
        built_once = (
            not kwargs.get("disable_iterator_cache", False)
            and not kwargs.get("update_epoch_batch_itr", False)
            and not getattr(self.cfg, "rebuild_batches", False)
            and self.can_reuse_epoch_itr(dataset)
        )
        if epoch <= 1 or not built_once or dataset in self.dataset_to_epoch_iter:
            return original(self, dataset, *args, epoch=epoch, **kwargs)
        iterator = original(self, dataset, *args, epoch=1, **kwargs)  # the batches of epoch 1 ...
        dataset.set_epoch(epoch)  # ... and everything else of the epoch it resumes in
        iterator.epoch = epoch
        return iterator

    get_batch_iterator.built_as_in_epoch_1 = True
    FairseqTask.get_batch_iterator = get_batch_iterator


def _bf16_without_a_tpu() -> None:
    """``--bf16`` trains and decodes in bfloat16 on the device there is, when torch_xla
    is not installed.  fairseq's option parsing sets ``tpu`` whenever ``bf16`` is set
    (options.py: "use bfloat16; implies --tpu"), and the trainer then asks torch_xla for
    its device; without torch_xla that is ``'NoneType' object has no attribute
    'xla_device'`` before the first update, on the GPU as on a CPU.  Where torch_xla
    cannot be imported no TPU was meant, so ``tpu`` is turned off again before
    ``call_main`` (the entry of fairseq-train, fairseq-hydra-train and fairseq-validate,
    and the point before DDP spawns its ranks); the trainer's own bf16 path does the
    rest (the model and criterion in bfloat16, float32 master weights in
    FP16Optimizer, no loss scaling).  With torch_xla installed nothing changes.

    For decoding, stock fairseq-generate and fairseq-interactive call ``model.half()``
    under ``--fp16`` and nothing under ``--bf16``, so a "--bf16" decode ran in float32;
    ``prepare_for_inference_``, which both (and the hub interface) call on every
    model, now casts to bfloat16 under ``--bf16``."""
    import importlib.util
    import logging

    from fairseq.distributed import utils as distributed_utils
    from fairseq.models import BaseFairseqModel
    from omegaconf import DictConfig

    if importlib.util.find_spec("torch_xla") is not None:
        return
    original_call_main = distributed_utils.call_main
    if getattr(original_call_main, "bf16_without_a_tpu", False):
        return

    @functools.wraps(original_call_main)
    def call_main(cfg: DictConfig, main: Callable[..., None], **kwargs) -> None:
        common = cfg.common
        if common.bf16 and common.tpu:
            device = "the CPU" if common.cpu or not torch.cuda.is_available() else "CUDA"
            logging.getLogger(__name__).info(
                "--bf16 without torch_xla: training in bfloat16 on %s, not on a TPU "
                "(stock fairseq takes --bf16 to mean --tpu)",
                device,
            )
            common.tpu = False  # distributed_training.tpu follows it (an interpolation)
        return original_call_main(cfg, main, **kwargs)

    call_main.bf16_without_a_tpu = True
    distributed_utils.call_main = call_main

    original_prepare = BaseFairseqModel.prepare_for_inference_

    @functools.wraps(original_prepare)
    def prepare_for_inference_(self: BaseFairseqModel, cfg: DictConfig) -> None:
        common = getattr(cfg, "common", None)
        if getattr(common, "bf16", False) and not getattr(common, "fp16", False):
            self.to(dtype=torch.bfloat16)
        return original_prepare(self, cfg)

    BaseFairseqModel.prepare_for_inference_ = prepare_for_inference_


def apply() -> None:
    global _applied
    if _applied:
        return
    _allowlist_checkpoint_classes()
    _fix_numpy2()
    _resume_batches_as_started()
    _bf16_without_a_tpu()
    _applied = True
