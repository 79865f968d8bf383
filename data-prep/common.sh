# Sourced by every prepare-<dataset>.sh.  prepare NAME [recipe options]: the installed recipe
# (mixer-prepare NAME) into work/data/NAME, then data-bin/NAME linked to its binarized data.
#
# The recipe runs fairseq-preprocess itself, as the last of its steps, with the plain flags
# (--source-lang/--target-lang, --trainpref/--validpref/--testpref on its subword text,
# --joined-dictionary where the vocabulary is joint; the first line of work/data/NAME/preprocess.log
# is the exact command).  So this script does not binarize a second time: mixer-run and the scripts
# in configs/ read work/data/NAME, and fairseq-train data-bin/NAME reads the same files.
#
#   PREP=DIR    the recipe's folder [work/data/NAME; MIXER_WORK moves work/]: use another for other
#               recipe options (a folder prepared with other options is refused, one line)
#   DATA_BIN=DIR where the link goes [data-bin/ of the checkout]
prepare() {
  local name=$1
  shift
  local checkout
  checkout=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  local prep=${PREP:-${MIXER_WORK:-$checkout/work}/data/$name}
  local data_bin=${DATA_BIN:-$checkout/data-bin}
  python -m mixer_plugin.recipes "$name" --root "$prep" "$@"
  if [ -d "$prep/bin" ]; then  # not with --no-binarize
    mkdir -p "$data_bin"
    ln -sfn "$prep/bin" "$data_bin/$(basename "$prep")"
    echo "binarized: $data_bin/$(basename "$prep") -> $prep/bin"
  fi
}
