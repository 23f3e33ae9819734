#compdef coordinator
# zsh completion for coordinator: source it, or put it in a directory of
# $fpath as _coordinator (coordinator completion zsh > ...).
# From urfave/cli v2's autocomplete/zsh_autocomplete (MIT licence).

_coordinator() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi

  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}

compdef _coordinator coordinator
