"""configs/ is generated from the architecture tables (mixer-configs): in sync, complete,
and the commands the runner builds from a config are real fairseq commands (training,
DDP through torchrun, precision, decoding of another row's checkpoints)."""

import json

import pytest
from conftest import work_at

from mixer_plugin.experiments import paper_rows
from mixer_plugin.experiments.argv import flag_value
from mixer_plugin.experiments.spec_loader import load
from mixer_plugin.experiments.stages import prepare_stage, run_stages


def test_committed_configs_are_in_sync():
    problems = paper_rows.check()
    assert not problems, "run mixer-configs:\n" + "\n".join(problems[:20])


def test_every_row_and_dataset_has_a_config_and_a_recipe():
    from mixer_plugin.models.architectures import ARCHITECTURES, PAPERS
    from mixer_plugin.recipes import recipes

    have = {p.relative_to(paper_rows.CONFIGS).as_posix() for p in paper_rows.CONFIGS.rglob("*.yaml")}
    prep = recipes()
    for arch, spec in ARCHITECTURES.items():
        for data in spec.data:
            assert data in prep, f"{arch}: no data recipe {data}"
            if spec.rows and data not in paper_rows.CPU_DATA:
                assert data in paper_rows.RECIPES, f"{arch}: no training recipe for {data}"
                assert f"{spec.paper}/{arch}.{data}.yaml" in have, (arch, data)
    for paper in PAPERS.values():  # the rows each paper keeps beside its table
        for arch, data in [*paper.extra_rows, *paper.decodes]:
            assert arch in ARCHITECTURES and ARCHITECTURES[arch].paper == paper.key, (paper.key, arch)
            assert f"{paper.key}/{arch}.{data}.yaml" in have, (arch, data)
        for data in [*paper.prepare, *paper.recipes]:
            assert any(data in ARCHITECTURES[a].data for a in ARCHITECTURES if ARCHITECTURES[a].paper == paper.key), (
                paper.key,
                data,
            )  # a dataset the paper's rows run on


def commands(name, tmp_path, monkeypatch, **env):
    """The runner's stages of a config, with its data 'prepared' in tmp_path."""
    work_at(monkeypatch, tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    exp = load(paper_rows.CONFIGS / f"{name}.yaml")
    out = {}
    trained = {}
    for m in sorted(exp.models.values(), key=lambda m: m.decode_of is not None):
        prepared = prepare_stage(m.data, m.prepare)
        root = prepared.outputs[0].parent
        root.mkdir(parents=True, exist_ok=True)
        (root / "prep.json").write_text(
            json.dumps(
                {"src": "en", "tgt": "de", "references": {"test": {"detok": "ref/test.de", "tok": "ref/test.tok.de"}}}
            )
        )
        chain = run_stages(exp, m, 1, prepared, trained.get(m.decode_of))
        if not m.decode_of:
            trained[m.name] = chain[0]
        out[m.name] = {s.name: s.commands for s in chain}
    return exp, out


@pytest.mark.parametrize(
    "name",
    [
        "multinn/mixer_wmt_multinn.wmt16_en_de",
        "multinn/mixer_iwslt_local.iwslt14_de_en",
        "multinn/mixer_wmt_attn.cnn_dm",
        "hard_retrieval/mixer_wmt_big_hard_dec.wmt14_en_fr",
        "hard_retrieval/mixer_wmt_hard_dec.wmt16_en_de",
        "interacting/mixer_ihead_interacting_h8.wmt17_en_cs",
    ],
)
def test_config_commands_parse_as_fairseq(name, tmp_path, monkeypatch):
    from fairseq import options

    exp, cmds = commands(name, tmp_path, monkeypatch, NGPU="0")
    for model, stages in cmds.items():
        if "train" in stages:
            argv = stages["train"][0][3:]  # python -m fairseq_cli.train ARGS
            args = options.parse_args_and_arch(options.get_training_parser(), input_args=argv)
            assert args.arch == exp.models[model].arch and args.cpu
        gen = stages["generate"][0][3:]
        args = options.parse_args_and_arch(options.get_generation_parser(), input_args=gen)
        assert args.beam >= 4 and args.path.endswith(".pt")
    if name.endswith("hard_dec.wmt16_en_de"):  # Table 4: the hard model decoded soft, no training of its own
        assert set(cmds) == {"mixer_wmt_hard_dec", "decode_soft"} and "train" not in cmds["decode_soft"]
        gen = cmds["decode_soft"]["generate"][0]
        assert "hard:decode=soft" in flag_value(gen, "--model-overrides")
        assert "mixer_wmt_hard_dec/seed1/averaged_last5.pt" in flag_value(gen, "--path")


def test_ddp_divides_the_update_frequency(tmp_path, monkeypatch):
    """NGPU=4: fairseq's own DDP through torchrun, the tokens per update kept."""
    _, cmds = commands("multinn/mixer_wmt_attn.wmt16_en_de", tmp_path, monkeypatch, NGPU="4")
    train = cmds["mixer_wmt_attn"]["train"][0]
    assert train[:4] == ["torchrun", "--standalone", "--nproc_per_node", "4"]
    assert flag_value(train, "--update-freq") == "2" and "--cpu" not in train  # 8 / 4 GPUs, the last one wins


def test_precision_flag(tmp_path, monkeypatch):
    _, cmds = commands("multinn/mixer_wmt_attn.wmt16_en_de", tmp_path, monkeypatch, NGPU="1", PRECISION="bf16")
    assert "--bf16" in cmds["mixer_wmt_attn"]["train"][0] and "--bf16" in cmds["mixer_wmt_attn"]["generate"][0]
    monkeypatch.setenv("PRECISION", "fp64")
    with pytest.raises(ValueError, match="PRECISION must be one of fp32, fp16, bf16"):
        commands("multinn/mixer_wmt_attn.wmt16_en_de", tmp_path, monkeypatch)
