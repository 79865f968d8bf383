# Sourced by every prepare-<dataset>.sh.  prepare NAME [recipe options]: the installed recipe's
# steps (mixer-prepare NAME), each shown and run as one command, into the folder mixer-run and
# the row scripts in configs/ read for those options, then data-bin/<folder> linked to its
# binarized data.
#
# The steps are what `mixer-prepare NAME [options] --print-steps` prints for the options given:
# raw text, tokenizer, subword model, then fairseq-preprocess with its flags (after `--`, as the
# binarize step runs it into bin/, written whole).  Each prepare-<dataset>.sh shows them for its
# defaults; copy one, edit it, run it: a finished step is skipped, one done with other options
# refused (--force redoes them all).
#
# The folder is work/data/NAME, or work/data/NAME.<variant> with options, the variant spelled out
# (`--variant ihead` -> wmt17_en_de.ihead; `mixer-prepare --where NAME [options]` prints it), and
# work/ is mixer-run's: the checkout's when run inside it, else ./work (MIXER_WORK moves it).
#
#   PREP=DIR     the recipe's folder [as above]: a folder prepared with other options is refused, one line
#   DATA_BIN=DIR where the link goes [data-bin/ of the checkout]
prepare() {
  local name=$1
  shift
  local checkout prep data_bin steps line
  checkout=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  prep=${PREP:-$(python -m mixer_plugin.recipes --where "$name" "$@")}
  data_bin=${DATA_BIN:-$checkout/data-bin}
  steps=$(python -m mixer_plugin.recipes "$name" "$@" --root "$prep" --print-steps)
  while IFS= read -r line; do
    case $line in
      '#'*) echo "$line" ;;
      *) echo "+ $line" && eval "$line" ;;
    esac
  done <<<"$steps"
  if [ -d "$prep/bin" ]; then  # not with --no-binarize
    mkdir -p "$data_bin"
    ln -sfn "$prep/bin" "$data_bin/$(basename "$prep")"
    echo "binarized: $data_bin/$(basename "$prep") -> $prep/bin"
  fi
}
