# Sourced by every prepare-<dataset>.sh.  prepare NAME [recipe options]: the installed recipe
# (mixer-prepare NAME) into the folder mixer-run and the row scripts in configs/ read for those
# options, then data-bin/<folder> linked to its binarized data.
#
# The folder is work/data/NAME, or work/data/NAME.<variant> with options, the variant spelled out
# (`--variant ihead` -> wmt17_en_de.ihead; `mixer-prepare --where NAME [options]` prints it), and
# work/ is mixer-run's: the checkout's when run inside it, else ./work (MIXER_WORK moves it).
# The recipe runs fairseq-preprocess itself, as the last of its steps, with the plain flags
# (--source-lang/--target-lang, --trainpref/--validpref/--testpref on its subword text,
# --joined-dictionary where the vocabulary is joint; the first line of its preprocess.log is the
# exact command), so fairseq-train data-bin/<folder> reads the files mixer-run reads.
#
#   PREP=DIR     the recipe's folder [as above]: a folder prepared with other options is refused, one line
#   DATA_BIN=DIR where the link goes [data-bin/ of the checkout]
prepare() {
  local name=$1
  shift
  local checkout
  checkout=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  local prep=${PREP:-$(python -m mixer_plugin.recipes --where "$name" "$@")}
  local data_bin=${DATA_BIN:-$checkout/data-bin}
  python -m mixer_plugin.recipes "$name" --root "$prep" "$@"
  if [ -d "$prep/bin" ]; then  # not with --no-binarize
    mkdir -p "$data_bin"
    ln -sfn "$prep/bin" "$data_bin/$(basename "$prep")"
    echo "binarized: $data_bin/$(basename "$prep") -> $prep/bin"
  fi
}
