from setuptools import find_packages, setup

setup(
    name="mixer-plugin",
    version="0.1.0",
    description="fairseq --user-dir plugin: token mixers (multiNN, local attention, ...) "
    "that replace self- and cross-attention",
    packages=find_packages(include=["mixer_plugin", "mixer_plugin.*"]),
    python_requires=">=3.9",
    # torch and fairseq are deliberately not declared: pip would otherwise resolve
    # its own torch (GBs of CUDA) or the unbuildable fairseq 0.12.2 sdist.  Install
    # them first, as the README says.
    # the experiments (data preparation, scoring, results): Moses tokenisation,
    # subword-nmt BPE, ROUGE, WER, plots, the experiment files
    install_requires=["sacrebleu>=2.0", "sentencepiece", "sacremoses", "subword-nmt", "rouge-score", "jiwer",
                      "matplotlib", "pyyaml"],
    extras_require={"test": ["pytest"]},
    entry_points={
        "console_scripts": [
            "mixer-run = mixer_plugin.experiments.runner:main",
            "mixer-configs = mixer_plugin.experiments.paper_rows:main",
            "mixer-prepare = mixer_plugin.data.recipes:main",
            "mixer-postprocess = mixer_plugin.data.postprocess:cli",
            "mixer-score = mixer_plugin.scoring:main",
            "mixer-average = mixer_plugin.experiments.checkpoints:main",
            "mixer-params = mixer_plugin.analysis.params:main",
            "mixer-bench = mixer_plugin.bench:main",
            "mixer-attention-distance = mixer_plugin.analysis.attention_distance:main",
            "mixer-max-heads = mixer_plugin.analysis.max_heads:main",
        ]
    },
)
