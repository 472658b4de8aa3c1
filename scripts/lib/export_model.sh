# export_model DIR NAME FILE [--set k=v ...]: the zoo model NAME at its default size, shape-only
# (planning needs no weights), into DIR/FILE.pt unless that file is already there. Sourced by the
# benchmark scripts; needs $root (the repository).
export_model() {
  local dir=$1 name=$2 file=$3
  shift 3
  [ -f "$dir/$file.pt" ] || /usr/bin/python3 "$root/resources/models/export.py" --model "$name" --preset default \
    --shape-only --output "$dir/$file.pt" --quiet "$@"
}
